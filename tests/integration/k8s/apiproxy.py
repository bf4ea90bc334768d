"""A plain-HTTP front for the lab's kube-apiserver, for tests that must see
or interleave with what a module sends: it records every request and can run
a hook (another writer, say) just before forwarding one. The module under
test talks to it with `host` and `api_key`; it forwards to the real server
over TLS with the same token.

The lab's kube-apiserver takes no HTTP basic auth (Kubernetes dropped it in
1.19), so for the modules' `username` and `password` the front can stand in
for a server or an authenticating proxy that does: given basic_auth, it
answers 401 to any other Authorization and forwards with a token instead."""

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import urllib3
import yaml

from loopback import LoopbackServer  # noqa: F401 (the proxies' base, imported from here too)

FORWARDED_HEADERS = ("Authorization", "Content-Type", "Accept")


def kubeconfig_parts(path):
    """(server URL, CA path, token) of a one-user kubeconfig as the lab writes them."""
    with open(path) as handle:
        config = yaml.safe_load(handle)
    cluster = config["clusters"][0]["cluster"]
    return cluster["server"], cluster["certificate-authority"], config["users"][0]["user"]["token"]


def basic_authorization(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


class ApiProxy(LoopbackServer):
    """basic_auth: (user, password, token): only requests with that user and
    password in HTTP basic auth are forwarded, with the token as bearer."""

    def __init__(self, upstream, ca_cert, before_forward=None, basic_auth=None):
        self.upstream = upstream.rstrip("/")
        self.pool = urllib3.PoolManager(ca_certs=ca_cert, cert_reqs="CERT_REQUIRED")
        self.before_forward = before_forward
        self.basic_auth = basic_auth
        self.requests = []
        self.unauthorized = 0
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                parts = urlsplit(self.path)
                entry = {"method": self.command, "path": parts.path, "query": parse_qs(parts.query), "body": body}
                with proxy.lock:
                    proxy.requests.append(entry)
                if proxy.before_forward:
                    proxy.before_forward(entry)
                headers = dict((k, self.headers[k]) for k in FORWARDED_HEADERS if self.headers.get(k))
                if proxy.basic_auth:
                    user, password, token = proxy.basic_auth
                    if self.headers.get("Authorization") != basic_authorization(user, password):
                        with proxy.lock:
                            proxy.unauthorized += 1
                        self._answer(401, json.dumps({"kind": "Status", "code": 401,
                                                      "message": "Unauthorized"}).encode())
                        return
                    headers["Authorization"] = "Bearer " + token
                response = proxy.pool.request(self.command, proxy.upstream + self.path, body=body, headers=headers,
                                              retries=False)
                self._answer(response.status, response.data, response.headers.get("Content-Type"))

            def _answer(self, status, data, content_type=None):
                self.send_response(status)
                self.send_header("Content-Type", content_type or "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PATCH = do_POST = do_PUT = do_DELETE = _forward

        self.serve(ThreadingHTTPServer(("127.0.0.1", 0), Handler))

    def writes(self):
        return [r for r in self.requests if r["method"] in ("POST", "PUT", "PATCH", "DELETE")]
