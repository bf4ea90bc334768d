"""Fixtures shared by the integration tests: connections to the lab's real
servers. A server that does not answer fails the test with the tail of its
log; it is never skipped."""

import os
import ssl
import xml.etree.ElementTree as ET

import pytest

from lab_logs import LAB_HOME, fail_with_log
from run_module import run_module


def _load_lab_env():
    path = os.path.join(LAB_HOME, "lab.env")
    if not os.path.exists(path):
        pytest.exit("lab is not up: %s is missing (run tests/testbed/lab up)" % path, returncode=3)
    values = {}
    with open(path) as handle:
        for line in handle:
            line = line.strip()
            if line.startswith("export "):
                key, value = line[len("export "):].split("=", 1)
                values[key] = value.strip("'\"")
    return values


LAB = _load_lab_env()

# The bound of an end-to-end test (marked e2e) that sets none of its own:
# its waits (a rulebook's cycles, Alertmanager's for: 1m, the node's
# resize) take minutes on the project's two cores.
E2E_TIMEOUT = 1200


# How the integration tests share the lab when scripts/test runs them on
# several workers (pytest-xdist --dist loadgroup): each test says which
# shared lab object it writes or reads whole, as one of
#   xdist_group(name)  the tests of one group run one after another on one
#                      worker: "libvirt" (the lab's guests and host-wide
#                      reads of its domains, and the tests that wait on
#                      the lab's Alertmanager), "vcsim" (the lab's vCenter
#                      inventory), "lab-node-a" (the Node, and the
#                      KubeVirt VMs the loop and plan tests decide with it
#                      on an inventory without the lab's guests);
#   isolated           it uses only objects it makes itself (random names);
#   serial             it needs the machine to itself: it measures CPU, loads
#                      both cores, or changes what every other test reads;
#                      scripts/test runs these after the others, one by one.
SHARING = ("xdist_group", "isolated", "serial")


# Folders whose every test carries these markers: the tests on the lab's real
# KubeVirt and on its hypervisor VMs measure QEMU's CPU on the machine's two
# cores, one at a time, in phases of their own (scripts/test).
FOLDER_MARKERS = {"kubevirt": ("kubevirt", "serial"), "fleet": ("fleet", "serial")}


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(os.path.abspath(__file__))
    undeclared = []
    for item in items:
        if not str(item.fspath).startswith(here + os.sep):
            continue
        item.add_marker(pytest.mark.lab)
        folder = os.path.relpath(str(item.fspath), here).split(os.sep)[0]
        for name in FOLDER_MARKERS.get(folder, ()):
            item.add_marker(getattr(pytest.mark, name))
        if item.get_closest_marker("contention"):
            item.add_marker(pytest.mark.serial)
        if item.get_closest_marker("e2e") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(E2E_TIMEOUT))
        if not any(item.get_closest_marker(name) for name in SHARING):
            undeclared.append(item.nodeid)
    if undeclared:
        raise pytest.UsageError("these tests do not say how they share the lab (mark them %s; see integration/conftest.py): %s"
                                % (", ".join(SHARING), ", ".join(undeclared)))


def pytest_collection_finish(session):
    # pytest-xdist groups a test by a suffix it puts on the test's id: should
    # a pytest or xdist release stop that from taking, tests of one group would
    # run side by side with nothing to say so.
    if getattr(session.config.option, "loadgroup", False):
        lost = [item.nodeid for item in session.items
                if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
        if lost:
            raise pytest.UsageError("pytest-xdist did not put %d grouped tests in their group (e.g. %s): check the "
                                    "pytest and pytest-xdist versions in requirements.txt" % (len(lost), lost[0]))


def pytest_terminal_summary(terminalreporter):
    """Every test that retried (it records its `attempts`), with how many it
    took: a test that needs its second or third attempt more and more often
    says so here before it fails."""
    rows = []
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            attempts = dict(getattr(report, "user_properties", None) or []).get("attempts")
            if attempts is not None:
                rows.append("%s attempt(s)  %s" % (attempts, report.nodeid))
    if rows:
        terminalreporter.write_sep("-", "attempts the retrying tests took")
        for row in sorted(rows):
            terminalreporter.write_line(row)


def pytest_sessionstart(session):
    # Once per run, before any worker starts: a rollout run stopped before
    # its own clean-up (a killed test or CI job) leaves throwaway domains and
    # VMs on the lab's shared servers, where host-wide selections (every
    # domain of a class) would find them.
    if hasattr(session.config, "workerinput") or session.config.getoption("collectonly"):
        return
    from rollout import rollout_fixture

    saved = dict(os.environ)
    os.environ.update(LAB)  # where rollout_fixture finds the servers
    try:
        rollout_fixture.down()
    except Exception as exc:  # a server that is down fails its own tests, with its log
        session.config.issue_config_time_warning(
            pytest.PytestWarning("could not remove what earlier rollout runs left on the lab: %r" % exc), stacklevel=2)
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="session")
def lab():
    """The lab's connection details, as written by `lab up`."""
    return dict(LAB)


@pytest.fixture(scope="session")
def libvirt_conn(lab):
    import libvirt

    libvirt.registerErrorHandler(lambda *args: None, None)
    try:
        conn = libvirt.open(lab["OVERCOMMIT_LIBVIRT_URI"])
    except libvirt.libvirtError as exc:
        fail_with_log("libvirtd", exc)
    yield conn
    conn.close()


def kube_client(lab, identity):
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=lab["OVERCOMMIT_KUBECONFIG_" + identity.upper()])
    try:
        client.VersionApi(api_client).get_code()
    except Exception as exc:  # any transport error means the server is not usable
        fail_with_log("kube-apiserver", exc)
    return api_client


@pytest.fixture(scope="session")
def kube_admin(lab):
    return kube_client(lab, "admin")


@pytest.fixture(scope="session")
def kube_operator(lab):
    return kube_client(lab, "operator")


@pytest.fixture(scope="session")
def kube_unbound(lab):
    return kube_client(lab, "unbound")


@pytest.fixture(scope="session")
def vsphere(lab):
    from pyVim.connect import Disconnect, SmartConnect

    try:
        si = SmartConnect(host=lab["VMWARE_HOST"], port=int(lab["VMWARE_PORT"]), user=lab["VMWARE_USER"],
                          pwd=lab["VMWARE_PASSWORD"], sslContext=ssl._create_unverified_context())
    except Exception as exc:  # pyVmomi raises several unrelated types on connect
        fail_with_log("vcsim", exc)
    yield si
    Disconnect(si)


@pytest.fixture
def busy_guest(libvirt_conn):
    """The lab's one-vCPU busy guest, running for the test, then shut off with
    its persistent tuning and throttle record reset."""
    import libvirt

    domain = libvirt_conn.lookupByName("oc-lab-busy-1")
    if not domain.isActive():
        domain.create()
    yield domain
    if domain.isActive():
        domain.destroy()
    # Whatever a test left in the persistent config goes with it.
    root = ET.fromstring(domain.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))
    for cputune in root.findall("cputune"):
        root.remove(cputune)
    for metadata in root.findall("metadata"):
        for element in list(metadata):
            if "overcommit.control/xmlns/throttle" in element.tag:
                metadata.remove(element)
    libvirt_conn.defineXML(ET.tostring(root, encoding="unicode"))


# A KubeVirt node as the inventory names it: no libvirt on the host (libvirtd
# runs inside each virt-launcher pod), so no libvirt-python either. The
# machine's own /usr/bin/python3 has none, and the host runs its modules with
# it. Cycles and plans on this inventory read no lab guest.
KUBEVIRT_NODE_INVENTORY = """
all:
  children:
    hypervisors:
      hosts:
        kubevirt-node-a:
          ansible_connection: local
          ansible_python_interpreter: /usr/bin/python3
          kubernetes_node: lab-node-a
          overcommit_libvirt: false
    controllers:
      hosts:
        localhost:
          ansible_connection: local
          ansible_python_interpreter: "{{ ansible_playbook_python }}"
"""


@pytest.fixture
def kubevirt_node_inventory(tmp_path):
    """Path of an inventory whose one hypervisor host is lab-node-a as a
    KubeVirt node: overcommit_libvirt false, modules run without libvirt-python."""
    path = tmp_path / "kubevirt-node.yml"
    path.write_text(KUBEVIRT_NODE_INVENTORY)
    return str(path)


@pytest.fixture
def lab_guest_states_restored(libvirt_conn):
    """For cycles on the lab inventory: they also observe the lab
    hypervisor's guests and record their state, removed afterwards."""
    from domain_records import policy_states_removed

    with policy_states_removed(libvirt_conn):
        yield


@pytest.fixture
def noisy_kubevirt(lab, kube_admin):
    """Two KubeVirt VMs on lab-node-a (the lab hypervisor's node): "noisy",
    a one-vCPU shared VM burning its vCPU, whose launcher has a CPU limit
    of 1 of its own, and "victim", a two-vCPU burstable VM whose vCPUs wait
    (steal), as KubeVirt's VMI metrics say through the lab's Prometheus
    (virt_handler_metrics); with `contention`, one spinning process per
    core of the host. Everything is removed afterwards."""
    from host_load import Contention
    from kubevirt_fleet import NAMESPACE, PREFIX, Fleet
    from virt_handler_metrics import VirtHandlerMetrics

    fleet = Fleet(kube_admin)
    metrics = VirtHandlerMetrics(lab["OVERCOMMIT_TEXTFILE_DIR"]).start()
    contention = Contention()
    # CPU requests as virt-controller renders them (vCPUs / cpuAllocationRatio 10): the
    # policy weighs KubeVirt VMs by them.
    noisy = fleet.vmi(cores=1, limits={"cpu": "1"}, requests={"cpu": "100m"}, labels={PREFIX + "class": "shared"},
                      vm=True)
    victim = fleet.vmi(cores=2, requests={"cpu": "200m"}, labels={PREFIX + "class": "burstable"}, vm=True)
    metrics.set(NAMESPACE, noisy, "lab-node-a", cpus_used=1.0, steal_cpus=0.0, vcpus=1)
    metrics.set(NAMESPACE, victim, "lab-node-a", cpus_used=0.6, steal_cpus=0.6, vcpus=2)
    yield {"fleet": fleet, "metrics": metrics, "contention": contention, "noisy": noisy, "victim": victim,
           "key": "kubevirt/%s/%s" % (NAMESPACE, noisy)}
    contention.stop()
    metrics.stop()
    fleet.cleanup()


@pytest.fixture
def run_as(lab):
    """run_as(identity, module, args, check=False, diff=False): the module's
    result, run with ansible-playbook as one of the lab's identities."""
    def run(identity, module, args, **options):
        args = dict(args, kubeconfig=lab["OVERCOMMIT_KUBECONFIG_" + identity.upper()])
        return run_module(module, args, **options)

    return run
