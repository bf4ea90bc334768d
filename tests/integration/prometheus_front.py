"""An HTTPS front with a bearer token for the lab's real Prometheus.

The lab's Prometheus speaks plain HTTP without authentication. Where users
have one behind TLS and an authenticating proxy (kube-rbac-proxy,
oauth-proxy), this stands in for the proxy: TLS with a self-signed
certificate made here, 401 for any request without the token, and every
authorized GET forwarded to the real Prometheus, whose answer comes back
unchanged."""

import datetime
import ipaddress
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import ssl

import urllib3

from loopback import LoopbackServer


def self_signed(folder, common_name="oc-test-prometheus"):
    """(certificate path, key path) of a fresh self-signed certificate for 127.0.0.1."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(hours=1))
                   .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                  critical=False)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    cert_path, key_path = os.path.join(folder, common_name + ".crt"), os.path.join(folder, common_name + ".key")
    with open(cert_path, "wb") as handle:
        handle.write(certificate.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as handle:
        handle.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return cert_path, key_path


class PrometheusFront(LoopbackServer):
    """https://127.0.0.1:PORT in front of `upstream`; `token` required.
    queries: the paths forwarded; unauthorized: the requests answered 401."""

    def __init__(self, upstream, folder, token):
        self.upstream = upstream.rstrip("/")
        self.cert_path, key_path = self_signed(folder)
        self.pool = urllib3.PoolManager()
        self.queries = []
        self.unauthorized = 0
        self.lock = threading.Lock()
        front = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.headers.get("Authorization") != "Bearer " + token:
                    with front.lock:
                        front.unauthorized += 1
                    self._answer(401, b"Unauthorized\n", "text/plain")
                    return
                with front.lock:
                    front.queries.append(self.path)
                response = front.pool.request("GET", front.upstream + self.path, retries=False)
                self._answer(response.status, response.data, response.headers.get("Content-Type"))

            def _answer(self, status, data, content_type):
                self.send_response(status)
                self.send_header("Content-Type", content_type or "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_path, key_path)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        self.serve(server)
        self.url = "https://127.0.0.1:%d" % server.server_address[1]
