"""A server gone in the middle of a batch: each task reports per object what
happened, without a traceback, and once the server is back a rerun or a
restore converges with nothing lost.

The lab's servers are shared by every other test running at the same time,
so none of them is ever stopped here. Instead each test stops a server of
its own that stands for the real one:
- vSphere: a second vcsim process (the lab's binary) on a free loopback
  port, killed or paused (SIGSTOP/SIGCONT) mid-batch;
- Kubernetes: a second kube-apiserver process with the lab's etcd,
  certificates, tokens and flags on another port, killed mid-gate and
  started again; the Nodes it gates are real objects in the lab's etcd;
- libvirt: a loopback unix-socket proxy in front of the lab's libvirtd
  socket, cut mid-batch (stopping the lab's own daemon would stop every
  other test's guests and connections); the domains are throwaway ones.
"""

import json
import os
import signal
import socket
import ssl
import subprocess
import threading
import time
import uuid

import pytest

from run_module import run_module
from test_vsphere_transient_faults import DroppingProxy

# Each test kills a server of its own (vcsim, kube-apiserver, a proxy in front
# of libvirtd); the libvirt one defines domains (oc-gone-*) on the lab's
# libvirtd, which host-wide reads see: it is in the libvirt group.

LAB_BIN = os.path.join(os.environ.get("OVERCOMMIT_LAB_HOME", os.path.expanduser("~/.cache/overcommit-lab")), "bin")


def no_traceback(result):
    return "Traceback" not in json.dumps(result) and "module_stderr" not in result


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError("%s did not happen within %d s" % (what, seconds))


class InBackground(object):
    """run_module(...) in a thread; result() waits for it."""

    def __init__(self, *args, **kwargs):
        self.value = None
        self.thread = threading.Thread(target=self._run, args=args, kwargs=kwargs, daemon=True)
        self.thread.start()

    def _run(self, *args, **kwargs):
        self.value = run_module(*args, **kwargs)

    def done(self):
        return not self.thread.is_alive()

    def result(self, seconds=300):
        self.thread.join(seconds)
        assert self.value is not None, "the task did not end within %d s" % seconds
        return self.value


# --- vSphere: a vcsim of the test's own --------------------------------------

class OwnVcsim(object):
    """The lab's vcsim binary on a free loopback port: one cluster of one
    host with `vms` VMs (DC0_C0_RP0_VM0...)."""

    USER, PASSWORD = "oc-test@vsphere.local", "oc-test-password"

    def __init__(self, vms):
        self.vms = vms
        self.port = free_port()
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [os.path.join(LAB_BIN, "vcsim"), "-listen", "127.0.0.1:%d" % self.port, "-username", self.USER,
             "-password", self.PASSWORD, "-cluster-host", "1", "-vm", str(self.vms)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(self.answers, 30, "vcsim answering")
        except BaseException:
            self.kill()  # never left running after a failed start
            raise
        return self

    def answers(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                with ssl._create_unverified_context().wrap_socket(conn) as tls:
                    tls.sendall(b"GET /about HTTP/1.0\r\n\r\n")
                    return b"200" in tls.recv(64)
        except OSError:
            return False

    def signal(self, number):
        self.process.send_signal(number)

    def kill(self):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait()

    def connect(self):
        from pyVim.connect import SmartConnect

        return SmartConnect(host="127.0.0.1", port=self.port, user=self.USER, pwd=self.PASSWORD,
                            sslContext=ssl._create_unverified_context())

    def args(self, **options):
        return dict({"hostname": "127.0.0.1", "port": self.port, "username": self.USER, "password": self.PASSWORD,
                     "validate_certs": False, "folders": ["/DC0/vm"], "parallel_tasks": 1}, **options)


def attribute_defined(si):
    from vsphere_checks import ATTRIBUTE

    return any(field.name == ATTRIBUTE for field in si.RetrieveContent().customFieldsManager.field or [])


def allocations(si):
    from pyVmomi import vim

    from vsphere_checks import allocation, record_of

    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
    try:
        return dict((vm.name, (allocation(vm), record_of(si, vm))) for vm in view.view)
    finally:
        view.Destroy()


VMS = 48
RESERVE = {"cpu": {"reservation": 100}, "memory": {"reservation": 16}, "reason": "server gone test"}


@pytest.fixture
def own_vcsim():
    server = OwnVcsim(VMS).start()
    yield server
    server.kill()


@pytest.mark.isolated
def test_vcsim_killed_mid_batch_fails_the_vms_left_one_by_one_and_a_rerun_converges(own_vcsim):
    """A crash: vcsim is killed (SIGKILL) as soon as the task has defined its
    record attribute, while it writes records and reconfigures
    48 VMs one by one. Every VM gets its own result, the ones not done failed saying the
    connection failed, no traceback. vcsim keeps no state across a restart,
    so "back" is a fresh vCenter on the same port: the rerun reserves every
    VM and a second rerun changes nothing."""
    watcher = own_vcsim.connect()
    task = InBackground("vsphere_vm_reservation", own_vcsim.args(**RESERVE))
    wait_for(lambda: task.done() or attribute_defined(watcher), 60, "the record attribute defined")
    own_vcsim.kill()
    started = time.monotonic()
    result = task.result()
    # Given up once after the retries (10 s by default), not once per VM.
    assert time.monotonic() - started < 40
    assert result.get("failed") is True, "the kill came after the batch: %s" % json.dumps(result)[:3000]
    assert no_traceback(result) and len(result["vms"]) == VMS, json.dumps(result)[:3000]
    failed = [vm for vm in result["vms"] if vm.get("failed")]
    assert failed, "the kill came after the batch: %s" % result
    for vm in failed:
        assert vm["msg"], vm

    own_vcsim.start()
    rerun = run_module("vsphere_vm_reservation", own_vcsim.args(**RESERVE))
    assert not rerun.get("failed") and len(rerun["vms"]) == VMS, rerun
    after = allocations(own_vcsim.connect())
    assert all(values["cpu"]["reservation"] == 100 and record for values, record in after.values()), after
    again = run_module("vsphere_vm_reservation", own_vcsim.args(**RESERVE))
    assert again["changed"] is False and not again.get("failed"), again


@pytest.mark.isolated
def test_vcsim_hung_mid_batch_then_back_loses_nothing_and_restores_exactly(own_vcsim):
    """A hang: vcsim is paused (SIGSTOP) as soon as the task has defined its
    record attribute, for 5 s, then resumed (SIGCONT) with its state; the
    task goes on where it was. Every VM has its result, no traceback; a
    rerun converges (changes nothing) and state=restored gives every VM back
    exactly the allocation it had before, records removed."""
    watcher = own_vcsim.connect()
    before = allocations(watcher)
    task = InBackground("vsphere_vm_reservation", own_vcsim.args(**RESERVE))
    wait_for(lambda: task.done() or attribute_defined(watcher), 60, "the record attribute defined")
    own_vcsim.signal(signal.SIGSTOP)
    time.sleep(5)
    assert not task.done(), "the batch ended before the pause"
    own_vcsim.signal(signal.SIGCONT)
    result = task.result()
    assert no_traceback(result) and len(result["vms"]) == VMS, json.dumps(result)[:3000]

    rerun = run_module("vsphere_vm_reservation", own_vcsim.args(**RESERVE))
    assert not rerun.get("failed"), rerun
    assert rerun["changed"] is (result.get("failed") is True), rerun
    restored = run_module("vsphere_vm_reservation", own_vcsim.args(state="restored"))
    assert not restored.get("failed") and restored["changed"] is True, restored
    # What the task changes: the reservations and the record (a fresh vcsim VM reports no limit and
    # no shares level until a reconfigure, then -1 and normal: the same allocation).
    assert reservations(allocations(own_vcsim.connect())) == reservations(before)


def reservations(by_vm):
    return dict((name, (values["cpu"]["reservation"], values["memory"]["reservation"], record))
                for name, (values, record) in by_vm.items())


# --- Kubernetes: a kube-apiserver of the test's own --------------------------

GATE = ("overcommit.control/gated", None, "NoSchedule")
FOREIGN = ("example.com/maintenance", "disk", "NoSchedule")
NODES = 20


class OwnApiServer(object):
    """A second kube-apiserver process with the lab's etcd, certificates,
    tokens and flags (tests/testbed/lab's kube_up) on a free loopback port,
    and a copy of a lab kubeconfig pointing at it."""

    def __init__(self, lab, folder):
        self.kube_dir = os.path.dirname(lab["OVERCOMMIT_KUBECONFIG_ADMIN"])
        self.port = free_port()
        self.process = None
        with open(lab["OVERCOMMIT_KUBECONFIG_ADMIN"]) as handle:
            text = handle.read()
        self.kubeconfig = os.path.join(folder, "own-apiserver.kubeconfig")
        with open(self.kubeconfig, "w") as handle:
            handle.write(text.replace("https://127.0.0.1:16443", "https://127.0.0.1:%d" % self.port))

    def start(self):
        kube = self.kube_dir
        self.process = subprocess.Popen(
            [os.path.join(LAB_BIN, "kube-apiserver"), "--etcd-servers", "http://127.0.0.1:16379",
             "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", str(self.port),
             "--endpoint-reconciler-type", "none", "--cert-dir", os.path.join(kube, "certs"),
             "--service-cluster-ip-range", "10.96.0.0/24",
             "--service-account-issuer", "https://kubernetes.default.svc",
             "--service-account-key-file", os.path.join(kube, "sa.pub"),
             "--service-account-signing-key-file", os.path.join(kube, "sa.key"),
             "--authorization-mode", "RBAC", "--token-auth-file", os.path.join(kube, "tokens.csv"),
             "--disable-admission-plugins", "ServiceAccount,TaintNodesByCondition"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(self.ready, 120, "the test's kube-apiserver ready")
        except BaseException:
            self.kill()  # never left running after a failed start
            raise
        return self

    def ready(self):
        import urllib3

        from apiproxy import kubeconfig_parts

        _server, ca_cert, token = kubeconfig_parts(self.kubeconfig)
        try:
            answer = urllib3.PoolManager(ca_certs=ca_cert).request(
                "GET", "https://127.0.0.1:%d/readyz" % self.port, headers={"Authorization": "Bearer " + token},
                timeout=2, retries=False)
            return answer.status == 200
        except urllib3.exceptions.HTTPError:
            return False

    def kill(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def own_apiserver(lab, tmp_path):
    server = OwnApiServer(lab, str(tmp_path)).start()
    yield server
    server.kill()


@pytest.mark.isolated
def test_kube_apiserver_killed_mid_gate_fails_the_nodes_left_and_a_rerun_converges(
        own_apiserver, kube_admin, make_nodes):
    """20 real Nodes (in the lab's etcd), each with a foreign taint, gated
    through a kube-apiserver of the test's own, killed (SIGKILL) once the
    first node is gated (seen through the lab's own server). Every node has
    its result, the ones not gated failed saying the server could not be
    reached, no traceback, and the task gives up once, not once per node.
    With the server started again, a rerun gates the rest; a second rerun
    changes nothing; no foreign taint is lost."""
    from kubernetes import client

    from nodes import node_state

    names = make_nodes(NODES, taints=[{"key": FOREIGN[0], "value": FOREIGN[1], "effect": FOREIGN[2]}])
    core = client.CoreV1Api(kube_admin)
    args = {"names": names, "max_gated_share": 1.0, "reason": "server gone test", "kubeconfig": own_apiserver.kubeconfig}

    def one_gated():
        return any(t.key == GATE[0] for node in core.list_node(label_selector="overcommit.test/run").items
                   if node.metadata.name in names for t in node.spec.taints or [])

    task = InBackground("node_admission", args)
    wait_for(lambda: task.done() or one_gated(), 120, "the first node gated")
    own_apiserver.kill()
    started = time.monotonic()
    result = task.result()
    assert time.monotonic() - started < 60  # given up once, not once per node
    assert result["failed"] is True and no_traceback(result), json.dumps(result)[:3000]
    assert sorted(node["name"] for node in result["nodes"]) == sorted(names), result
    failed = [node for node in result["nodes"] if node.get("failed")]
    assert failed, "the kill came after the batch: %s" % result
    for node in failed:
        assert "cannot reach the API server" in node["msg"] or "not reachable" in node["msg"], node

    own_apiserver.start()
    rerun = run_module("node_admission", args)
    assert not rerun.get("failed") and no_traceback(rerun), rerun
    again = run_module("node_admission", args)
    assert again["changed"] is False and not again.get("failed"), again
    for name in names:
        taints = node_state(kube_admin, name)["taints"]
        assert GATE in taints and FOREIGN in taints, (name, taints)


# --- libvirt: a proxy in front of the lab's libvirtd socket ------------------

LIBVIRT_SOCKET = "/var/run/libvirt/libvirt-sock"
SET_METADATA = 264  # REMOTE_PROC_DOMAIN_SET_METADATA of libvirt's remote protocol


class CuttingLibvirtProxy(object):
    """A unix socket relaying libvirt's remote protocol to the lab's
    libvirtd. It reads the client's calls (a 4-byte length, then program,
    version, procedure, type, serial, status, then the arguments, whose
    first is the domain's name) and cuts every connection, as a daemon that
    went away would, at the first call after the first SET_METADATA naming
    `cut_after_record_of`: that domain's record is written, its cap not."""

    def __init__(self, folder, cut_after_record_of=None):
        self.path = os.path.join(folder, "libvirt-proxy.sock")
        self.cut_after_record_of = cut_after_record_of
        self.cut = False
        self.armed = False
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(8)
        self.connections = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def uri(self):
        return "qemu+unix:///system?socket=%s" % self.path

    def _accept(self):
        while True:
            try:
                conn, _address = self.listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(LIBVIRT_SOCKET)
            self.connections += [conn, upstream]
            threading.Thread(target=self._calls, args=(conn, upstream), daemon=True).start()
            # The replies go back untouched, as the vSphere fault test's proxy relays.
            threading.Thread(target=DroppingProxy._pipe, args=(upstream, conn), daemon=True).start()

    def _read(self, source, count):
        data = b""
        while len(data) < count:
            chunk = source.recv(count - len(data))
            if not chunk:
                raise OSError("closed")
            data += chunk
        return data

    def _calls(self, source, target):
        try:
            while not self.cut:
                head = self._read(source, 4)
                message = head + self._read(source, int.from_bytes(head, "big") - 4)
                procedure = int.from_bytes(message[12:16], "big")
                if self.armed:
                    self.cut_all()
                    return
                if procedure == SET_METADATA and self._domain(message) == self.cut_after_record_of:
                    self.armed = True
                target.sendall(message)
        except OSError:
            pass
        self._close(source, target)

    @staticmethod
    def _domain(message):
        length = int.from_bytes(message[28:32], "big")
        return message[32:32 + length].decode("utf-8", "replace")

    @staticmethod
    def _close(*ends):
        for end in ends:
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut_all(self):
        self.cut = True
        self._close(*self.connections)

    def close(self):
        self.cut_all()
        self.listener.close()


def tuning(conn, name):
    """A domain's CPU tuning live (while it runs: other tests start and stop
    the idle guests), its persistent <cputune>, and its throttle record."""
    import xml.etree.ElementTree as ET

    import libvirt

    domain = conn.lookupByName(name)
    config = ET.fromstring(domain.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))
    cputune = config.find("cputune")
    try:
        live = domain.schedulerParametersFlags(libvirt.VIR_DOMAIN_AFFECT_LIVE) if domain.isActive() else None
    except libvirt.libvirtError:  # stopped or restarted meanwhile
        live = None
    return (live,
            ET.tostring(cputune, encoding="unicode") if cputune is not None else None,
            config.find("metadata/{https://overcommit.control/xmlns/throttle/1}throttle") is not None)


@pytest.fixture
def spare_domains(libvirt_conn):
    """Three throwaway persistent domains (one vCPU, never started), undefined afterwards."""
    run = uuid.uuid4().hex[:8]
    domains = [libvirt_conn.defineXML(
        "<domain type='qemu'><name>oc-gone-%s-%d</name><memory unit='MiB'>32</memory><vcpu>1</vcpu>"
        "<os><type arch='x86_64'>hvm</type></os></domain>" % (run, index)) for index in range(3)]
    yield [domain.name() for domain in domains]
    for domain in domains:
        domain.undefine()


@pytest.mark.xdist_group("libvirt")
def test_libvirtd_gone_mid_batch_fails_the_domain_left_and_restore_converges(lab, libvirt_conn, spare_domains,
                                                                             tmp_path):
    """libvirt_cputune throttles three domains through a proxy of the lab's
    libvirtd socket that stands for the daemon going away (stopping the
    lab's own daemon would stop every other test's server): it cuts every
    connection right after the last domain's throttle record is written,
    before its cap. That domain fails with the connection's error, the
    others (done in parallel) are throttled or fail the same way, no
    traceback. With the daemon back (the lab's own URI), a rerun throttles
    them all and restore gives each back exactly its persistent tuning,
    without a record. The domains are throwaway persistent ones, never
    started: the lab's idle guests are edited by the state-machine tests at
    the same time, whose foreign edits this test would take for losses."""
    last = spare_domains[-1]
    before = dict((name, tuning(libvirt_conn, name)) for name in spare_domains)
    args = {"domains": spare_domains, "cpus": 0.5, "reason": "server gone test"}
    proxy = CuttingLibvirtProxy(str(tmp_path), cut_after_record_of=last)
    try:
        result = run_module("libvirt_cputune", dict(args, uri=proxy.uri), host="lab-hypervisor")
        assert proxy.cut, "the batch ended before the cut: %s" % result
        assert result["failed"] is True and no_traceback(result), json.dumps(result)[:3000]
        by_name = dict((domain["name"], domain) for domain in result["domains"])
        assert sorted(by_name) == sorted(spare_domains) and by_name[last].get("failed") is True, result
        assert all(domain["msg"] for domain in by_name.values() if domain.get("failed")), result
        assert all(domain.get("changed") or domain.get("failed") for domain in by_name.values()), result

        uri = lab["OVERCOMMIT_LIBVIRT_URI"]
        rerun = run_module("libvirt_cputune", dict(args, uri=uri), host="lab-hypervisor")
        assert not rerun.get("failed"), rerun
        assert all(tuning(libvirt_conn, name)[2] for name in spare_domains)
        restore = run_module("libvirt_cputune", {"uri": uri, "domains": spare_domains, "state": "restored"},
                             host="lab-hypervisor")
        assert not restore.get("failed") and restore["changed"] is True, restore
    finally:
        proxy.close()
    assert dict((name, tuning(libvirt_conn, name)) for name in spare_domains) == before
