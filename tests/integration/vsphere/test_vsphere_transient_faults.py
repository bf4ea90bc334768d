"""Dropped connections to vCenter on the lab: a loopback TCP proxy in front of
vcsim (passing TLS through) closes the first connections as soon as they are
accepted. The login and the reads get through, and the result says what was
retried; when every connection is dropped the task fails naming the fault
and how long it was tried, without a traceback."""

import json
import socket
import threading

MODULE = "vsphere_overcommit_info"


class DroppingProxy(object):
    """Accepts on 127.0.0.1 and relays to (host, port), closing the first
    `drop` connections (all of them with drop=None) unanswered."""

    def __init__(self, host, port, drop=None):
        self.upstream = (host, int(port))
        self.drop = drop
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
        result = run(MODULE, {"vm_stats": False}, env={"VMWARE_HOST": "127.0.0.1", "VMWARE_PORT": str(proxy.port)})
    assert result["failed"] is True, result
    assert result["msg"].startswith("cannot connect to 127.0.0.1:%d: " % proxy.port), result
    assert "tried" in result["msg"] and " s" in result["msg"], result
    assert "Traceback" not in json.dumps(result) and "module_stderr" not in result, result
    assert proxy.accepted >= 3
