"""An HTTPS front with a bearer token for the lab's real Prometheus.

The lab's Prometheus speaks plain HTTP without authentication. Where users
have one behind TLS and an authenticating proxy (kube-rbac-proxy,
oauth-proxy), this stands in for the proxy: TLS with a self-signed
certificate made here, 401 for any request without the token, and every
authorized GET forwarded to the real Prometheus, whose answer comes back
unchanged."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import ssl

import urllib3

from certificates import self_signed
from loopback import LoopbackServer


class PrometheusFront(LoopbackServer):
    """https://127.0.0.1:PORT in front of `upstream`; `token` required.
    queries: the paths forwarded; unauthorized: the requests answered 401."""

    def __init__(self, upstream, folder, token):
        self.upstream = upstream.rstrip("/")
        self.cert_path, key_path = self_signed(folder, "oc-test-prometheus")
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
