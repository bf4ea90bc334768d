"""A loopback HTTP proxy that tunnels (CONNECT), as a module reaches an
https:// API server through its `proxy` option: it records every request
line with its headers and relays the tunnelled bytes untouched (TLS stays
end to end, between the module and the lab's kube-apiserver). Optionally it
takes basic auth (407 without), or never answers at all: it reads the
request and holds the connection open, as a hung proxy or API server does."""

import select
import socket
import socketserver
import threading

from apiproxy import LoopbackServer, basic_authorization

LOOPBACK = ("127.0.0.1", "localhost")


class ConnectProxy(LoopbackServer):
    """credentials: (user, password) the proxy requires in Proxy-Authorization.
    answer=False: accept, read the request, answer nothing.
    requests: [(method, target, headers)] of every request received;
    tunnels: the targets of the tunnels opened."""

    def __init__(self, credentials=None, answer=True):
        self.credentials = credentials
        self.answer = answer
        self.requests = []
        self.tunnels = []
        self.held = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                method, target, headers = self._read_head()
                if method is None:
                    return
                with proxy.lock:
                    proxy.requests.append((method, target, headers))
                if not proxy.answer:
                    with proxy.lock:
                        proxy.held.append(self.connection)
                    self.rfile.read()  # until the client gives up and closes, or __exit__ closes it
                    return
                if method != "CONNECT":
                    self._reply("405 Method Not Allowed")
                    return
                if proxy.credentials and headers.get("proxy-authorization") != basic_authorization(*proxy.credentials):
                    self._reply("407 Proxy Authentication Required", 'Proxy-Authenticate: Basic realm="lab"\r\n')
                    return
                host, _colon, port = target.rpartition(":")
                if host not in LOOPBACK:
                    self._reply("403 Forbidden")
                    return
                upstream = socket.create_connection((host, int(port)), timeout=10)
                with proxy.lock:
                    proxy.tunnels.append(target)
                self._reply("200 Connection established")
                self._relay(upstream)

            def _read_head(self):
                request_line = self.rfile.readline().decode("latin-1").strip()
                if not request_line:
                    return None, None, None
                method, target = request_line.split(" ")[:2]
                headers = {}
                while True:
                    line = self.rfile.readline().decode("latin-1").strip()
                    if not line:
                        return method, target, headers
                    name, _colon, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()

            def _reply(self, status, extra_headers=""):
                self.wfile.write(("HTTP/1.1 %s\r\n%sContent-Length: 0\r\n\r\n" % (status, extra_headers)).encode())
                self.wfile.flush()

            def _relay(self, upstream):
                client = self.connection
                try:
                    while True:
                        readable, _w, _x = select.select([client, upstream], [], [], 30)
                        if not readable:
                            return
                        for source in readable:
                            data = source.recv(65536)
                            if not data:
                                return
                            (upstream if source is client else client).sendall(data)
                except OSError:
                    return
                finally:
                    upstream.close()

        self.serve(socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler))

    def __exit__(self, *exc):
        super(ConnectProxy, self).__exit__(*exc)
        # Wakes the handlers still waiting on connections they never answered.
        for connection in self.held:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
