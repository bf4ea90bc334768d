"""Dropped connections to vCenter on the lab: a loopback TCP proxy in front of
vcsim (passing TLS through) closes the first connections as soon as they are
accepted. The login and the reads get through, and the result says what was
retried; when every connection is dropped the task fails naming the fault
and how long it was tried (retry_seconds), without a traceback. A proxy that
accepts and never answers fails the task after request_timeout, naming it."""

import json
import socket
import threading

import pytest

pytestmark = pytest.mark.xdist_group("vcsim")

MODULE = "vsphere_overcommit_info"


class DroppingProxy(object):
    """Accepts on 127.0.0.1 and relays to (host, port), closing the first
    `drop` connections (all of them with drop=None) unanswered, or with
    silent=True holding every connection open without a word."""

    def __init__(self, host, port, drop=None, silent=False):
        self.upstream = (host, int(port))
        self.drop = drop
        self.silent = silent
        self.held = []
        self.accepted = 0
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self):
        while True:
            try:
                conn, _address = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            if self.silent:
                self.held.append(conn)
                continue
            if self.drop is None or self.accepted <= self.drop:
                conn.close()
                continue
            upstream = socket.create_connection(self.upstream)
            for source, target in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pipe, args=(source, target), daemon=True).start()

    @staticmethod
    def _pipe(source, target):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                target.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, target):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.listener.close()
        for conn in self.held:
            conn.close()


def test_the_login_and_reads_get_through_dropped_connections_and_report_them(run, lab):
    direct = run(MODULE, {"vm_stats": False})
    assert not direct.get("failed") and "retries" not in direct, direct
    with DroppingProxy(lab["VMWARE_HOST"], lab["VMWARE_PORT"], drop=3) as proxy:
        result = run(MODULE, {"vm_stats": False}, env={"VMWARE_HOST": "127.0.0.1", "VMWARE_PORT": str(proxy.port)})
    assert not result.get("failed"), result
    assert proxy.accepted > 3
    assert result["hosts"] == direct["hosts"]
    assert result["retries"]["attempts"] == 3
    assert result["retries"]["errors"] == ["connection dropped"]


def test_connections_dropped_for_longer_than_the_retries_fail_clearly(run, lab):
    with DroppingProxy(lab["VMWARE_HOST"], lab["VMWARE_PORT"]) as proxy:
        result = run(MODULE, {"vm_stats": False, "retry_seconds": 4},
                     env={"VMWARE_HOST": "127.0.0.1", "VMWARE_PORT": str(proxy.port)})
    assert result["failed"] is True, result
    assert result["msg"].startswith("cannot connect to 127.0.0.1:%d: " % proxy.port), result
    assert "tried" in result["msg"] and " s" in result["msg"], result
    assert "Traceback" not in json.dumps(result) and "module_stderr" not in result, result
    assert proxy.accepted >= 3


def test_a_server_that_never_answers_fails_the_task_after_request_timeout_naming_it(run, lab):
    with DroppingProxy(lab["VMWARE_HOST"], lab["VMWARE_PORT"], silent=True) as proxy:
        result = run(MODULE, {"vm_stats": False, "request_timeout": 1, "retry_seconds": 0},
                     env={"VMWARE_HOST": "127.0.0.1", "VMWARE_PORT": str(proxy.port)})
    assert result["failed"] is True, result
    assert result["msg"] == "cannot connect to 127.0.0.1:%d: no answer within request_timeout=1 s" % proxy.port, result
    assert "Traceback" not in json.dumps(result) and "module_stderr" not in result, result
    # retry_seconds=0: one try.
    assert proxy.accepted == 1


def test_a_request_timeout_that_is_no_time_is_refused_before_any_connection(run, lab):
    with DroppingProxy(lab["VMWARE_HOST"], lab["VMWARE_PORT"]) as proxy:
        result = run(MODULE, {"vm_stats": False, "request_timeout": 0},
                     env={"VMWARE_HOST": "127.0.0.1", "VMWARE_PORT": str(proxy.port)})
    assert result["failed"] is True and result["field"] == "request_timeout", result
    assert "more than 0 seconds" in result["msg"], result
    assert proxy.accepted == 0
