"""A test server on a free loopback port, serving from a thread of its own."""

import threading


class LoopbackServer(object):
    """A server on a free loopback port (url), serving from a thread of its
    own inside a `with` block."""

    def serve(self, server):
        self.server = server
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % server.server_address[1]
        self.thread = threading.Thread(target=server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
