"""The lab's webhook receiver: what Alertmanager (or anything else) POSTs.

Each POSTed JSON body is appended as one line to the log file and answered
200; a body that is not JSON is answered 400 and not recorded. GET / answers
200 (health). Standard library only; started by tests/testbed/lab.

    python webhook_receiver.py --listen 127.0.0.1:19095 --log webhook.jsonl
"""

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    server_version = "overcommit-lab-webhook/1"
    lock = threading.Lock()
    log_path = None

    def _answer(self, code, text):
        body = (text + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 (http.server's naming)
        if self.path == "/":
            self._answer(200, "ok")
        else:
            self._answer(404, "not found")

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError as exc:
            self._answer(400, "not JSON: %s" % exc)
            return
        line = json.dumps(body, sort_keys=True, separators=(",", ": ")) + "\n"
        with self.lock, open(self.log_path, "a", encoding="utf-8") as handle:
            handle.write(line)
        self._answer(200, "recorded")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:19095", help="HOST:PORT")
    parser.add_argument("--log", required=True, help="JSON lines file the bodies are appended to")
    args = parser.parse_args(argv)
    host, _colon, port = args.listen.rpartition(":")
    Handler.log_path = args.log
    server = ThreadingHTTPServer((host, int(port)), Handler)
    print("listening on http://%s:%s/, appending to %s" % (host, port, args.log), file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
