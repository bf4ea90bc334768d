"""Transient faults of the Kubernetes API on the lab: a loopback HTTP proxy in
front of the lab's kube-apiserver (plain HTTP to the module, TLS to the
server, as apiproxy.ApiProxy) answers chosen requests with 429 or 500, or
drops the connection before or after forwarding the request. The modules
must get through them, say so in `retries`, write nothing twice, and fail
with a clear message when a fault outlasts retry_seconds."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
import urllib3
from kubernetes import client

from apiproxy import FORWARDED_HEADERS, LoopbackServer, kubeconfig_parts
from nodes import node_state
from run_module import run_module

pytestmark = pytest.mark.isolated

GATE = ("overcommit.control/gated", None, "NoSchedule")


def node_reasons(kube_admin, name):
    """The reasons of the Events about the node, oldest first."""
    found = client.EventsV1Api(kube_admin).list_event_for_all_namespaces(
        field_selector="regarding.kind=Node,regarding.name=%s" % name).items
    return [event.reason for event in sorted(found, key=lambda e: e.event_time)]


class FaultProxy(LoopbackServer):
    """faults: [(method or None, fault)], each used once, in order, on the
    first request of that method; fault is an HTTP status to answer with,
    "drop" (close the connection unanswered) or "drop_after" (forward, then
    close unanswered: the server acted, the module cannot know). always:
    a status answered to every request."""

    def __init__(self, upstream, ca_cert, faults=(), always=None):
        self.upstream = upstream.rstrip("/")
        self.pool = urllib3.PoolManager(ca_certs=ca_cert, cert_reqs="CERT_REQUIRED")
        self.faults = list(faults)
        self.always = always
        self.requests = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def answer(self, status, body, headers=()):
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _serve(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                fault = proxy.take(self.command)
                with proxy.lock:
                    proxy.requests.append((self.command, urlsplit(self.path).path, fault))
                if fault == "drop":
                    self.close_connection = True
                    return
                if isinstance(fault, int):
                    message = json.dumps({"kind": "Status", "message": "injected fault", "code": fault}).encode()
                    self.answer(fault, message, [("Retry-After", "1")] if fault == 429 else [])
                    return
                headers = dict((k, self.headers[k]) for k in FORWARDED_HEADERS if self.headers.get(k))
                response = proxy.pool.request(self.command, proxy.upstream + self.path, body=body, headers=headers,
                                              retries=False)
                if fault == "drop_after":
                    self.close_connection = True
                    return
                self.answer(response.status, response.data)

            do_GET = do_PATCH = do_POST = do_PUT = do_DELETE = _serve

        self.serve(ThreadingHTTPServer(("127.0.0.1", 0), Handler))

    def take(self, method):
        with self.lock:
            if self.always is not None:
                return self.always
            for index, (wanted, fault) in enumerate(self.faults):
                if wanted in (None, method):
                    del self.faults[index]
                    return fault
        return None

    def sent(self, method):
        return [path for sent_method, path, _fault in self.requests if sent_method == method]


def through(proxy, token, module, args, **options):
    return run_module(module, dict(args, host=proxy.url, api_key=token), **options)


def test_node_overcommit_info_gets_through_drops_429_and_500_and_reports_them(lab, make_nodes):
    names = make_nodes(2)
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])
    faults = [("GET", "drop"), ("GET", "drop"), ("GET", 429), ("GET", 500)]
    with FaultProxy(server, ca_cert, faults) as proxy:
        result = through(proxy, token, "node_overcommit_info", {"names": names})
    assert not result.get("failed"), result
    assert sorted(node["name"] for node in result["nodes"]) == sorted(names)
    assert proxy.faults == []
    retries = result["retries"]
    assert retries["attempts"] == 4
    assert retries["errors"] == ["connection dropped", "HTTP 429", "HTTP 500"]
    # 429 came with Retry-After: 1.
    assert retries["waited_seconds"] >= 1.0


def test_node_admission_gates_once_through_lost_answers_to_its_writes(lab, kube_admin, make_nodes):
    """The PATCH and the Event's POST reach the server but their answers are
    lost: the PATCH (guarded by resourceVersion) sent again is refused as a
    conflict and the node found gated by it; the Event (named) sent again
    is refused as AlreadyExists and read back. One gate, one Event."""
    name = make_nodes(1)[0]
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])
    faults = [("GET", 429), ("PATCH", "drop_after"), ("POST", "drop_after")]
    with FaultProxy(server, ca_cert, faults) as proxy:
        result = through(proxy, token, "node_admission", {"names": [name], "max_gated_share": 1.0})
    assert not result.get("failed"), result
    assert proxy.faults == []
    node = result["nodes"][0]
    assert node["changed"] is True and not node.get("conflict") and not node.get("conflicts"), node
    assert "error" not in node["event"], node
    assert GATE in node_state(kube_admin, name)["taints"]
    assert node_reasons(kube_admin, name) == ["NodeGated"]
    assert len(proxy.sent("PATCH")) == 2 and len(proxy.sent("POST")) == 2
    assert result["retries"]["attempts"] == 3
    assert result["retries"]["errors"] == ["HTTP 429", "connection dropped"]

    # Nothing retried, nothing reported: the result keeps its usual keys.
    with FaultProxy(server, ca_cert) as proxy:
        again = through(proxy, token, "node_admission", {"names": [name], "max_gated_share": 1.0})
    assert not again.get("failed") and again["changed"] is False and "retries" not in again, again


def test_a_fault_outlasting_retry_seconds_fails_naming_it_and_how_long_it_was_tried(lab, make_nodes):
    names = make_nodes(1)
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])
    with FaultProxy(server, ca_cert, always=503) as proxy:
        info = through(proxy, token, "node_overcommit_info", {"names": names, "retry_seconds": 2})
        gated = through(proxy, token, "node_admission", {"names": names, "max_gated_share": 1.0,
                                                         "retry_seconds": 2})
    for result in (info, gated):
        assert result["failed"] is True, result
        assert "HTTP 503" in result["msg"] and "tried" in result["msg"] and " s" in result["msg"], result
        assert "Traceback" not in json.dumps(result) and "module_stderr" not in result, result
    assert len(proxy.requests) >= 4
