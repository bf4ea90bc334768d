"""kubevirt_vm_cpu_info, kubevirt_policy_state and the compare-and-swap of
kubevirt_vm_cpu_limit (option expected), against the lab's real
kube-apiserver with KubeVirt's CRDs and its real Prometheus.

The VMs' usage is KubeVirt's own metrics as Prometheus holds them. The lab
has no virt-handler, so virt_handler_metrics serves those series (same
names and labels, counters advancing at rates the test sets) through the
lab's real node_exporter textfile collector, which the real Prometheus
scrapes every 2 s; the module reads them with rate() as it reads
virt-handler's."""

import json
import threading
import time

import pytest

from kubevirt_fleet import NAMESPACE, Fleet
from run_module import run_module
from virt_handler_metrics import VirtHandlerMetrics

pytestmark = pytest.mark.isolated

PREFIX = "overcommit.control/"


@pytest.fixture
def fleet(kube_admin):
    made = Fleet(kube_admin)
    yield made
    made.cleanup()


@pytest.fixture
def metrics(lab):
    served = VirtHandlerMetrics(lab["OVERCOMMIT_TEXTFILE_DIR"]).start()
    yield served
    served.stop()


def k8s(lab, module, args):
    return run_module(module, dict(args, kubeconfig=lab["OVERCOMMIT_KUBECONFIG_ADMIN"]))


def read(lab, names, **args):
    args = dict({"namespace": NAMESPACE, "names": names}, **args)
    result = k8s(lab, "kubevirt_vm_cpu_info", args)
    assert not result.get("failed"), (result.get("module_stderr"), result.get("msg"))
    return dict((vm["name"], vm) for vm in result["vms"])


def read_usage(lab, names, window=8, deadline=30.0):
    """The VMs once Prometheus has scraped their series for a whole window
    (a rate over a window the series began in is extrapolated short)."""
    stop = time.monotonic() + deadline
    while True:
        vms = read(lab, names, usage_times=[time.time()], usage_window=window,
                   prometheus_url=lab["OVERCOMMIT_PROMETHEUS_URL"])
        if all(vm["usage"].get("cpus_used") is not None for vm in vms.values()) or time.monotonic() > stop:
            break
        time.sleep(1)
    time.sleep(window + 2)
    return read(lab, names, usage_times=[time.time()], usage_window=window,
                prometheus_url=lab["OVERCOMMIT_PROMETHEUS_URL"])


def test_reads_the_cap_class_state_kill_switch_and_the_usage_prometheus_holds(lab, fleet, metrics):
    busy = fleet.vmi(cores=2, labels={PREFIX + "class": "burstable"}, vm=True)
    quiet = fleet.vmi(cores=1)
    metrics.set(NAMESPACE, busy, "lab-node-a", cpus_used=1.6, steal_cpus=0.4, vcpus=2)
    metrics.set(NAMESPACE, quiet, "lab-node-a", cpus_used=0.1)
    keys = ["%s/%s" % (NAMESPACE, name) for name in (busy, quiet)]
    vms = read_usage(lab, [busy, quiet])
    first, second = vms[keys[0]], vms[keys[1]]
    assert (first["node"], first["vcpus"], first["class"], first["active"]) == ("lab-node-a", 2, "burstable", True)
    assert first["cap_cpus"] is None and first["throttle"] is None and first["policy"] == {} and not first["paused"]
    assert second["class"] is None
    # Counters advancing at known rates: Prometheus' rate() gives them back.
    assert first["usage"]["cpus_used"] == pytest.approx(1.6, rel=0.15), first["usage"]
    assert first["usage"]["steal_cpus"] == pytest.approx(0.4, rel=0.15), first["usage"]
    assert second["usage"]["cpus_used"] == pytest.approx(0.1, rel=0.15), second["usage"]
    assert first["usage"]["window_seconds"] == 8 and len(first["usage_rounds"]) == 1

    braked = k8s(lab, "kubevirt_vm_cpu_limit", {"namespace": NAMESPACE, "names": [busy], "cpus": "1",
                                                "reason": "test", "plan_id": "plan-test"})
    assert braked["changed"], braked
    stored = k8s(lab, "kubevirt_policy_state", {"states": {keys[0]: {"cap": 1.0, "rule": "contain"}},
                                                "names": [keys[1]], "paused": True})
    assert stored["changed"] and stored["summary"]["changed"] == sorted(keys), stored
    again = k8s(lab, "kubevirt_policy_state", {"states": {keys[0]: {"cap": 1.0, "rule": "contain"}},
                                               "names": [keys[1]], "paused": True})
    assert not again["changed"], again

    vms = read(lab, [busy, quiet])
    assert vms[keys[0]]["cap_cpus"] == 1.0 and vms[keys[0]]["throttle"]["plan"] == "plan-test"
    assert vms[keys[0]]["compute_cpu_limit"] == "1"
    assert vms[keys[0]]["policy"] == {"cap": 1.0, "rule": "contain"}
    assert vms[keys[1]]["paused"] and not vms[keys[0]]["paused"]
    # The state is the VMI's annotation; the switch, on a VMI of its own, its label.
    assert json.loads(fleet.annotations(busy)[PREFIX + "policy"]) == {"cap": 1.0, "rule": "contain", "schema": 1}
    assert fleet.read(quiet)["metadata"]["labels"][PREFIX + "paused"] == "true"

    cleared = k8s(lab, "kubevirt_policy_state", {"states": {keys[0]: None}, "names": [keys[1]], "paused": False})
    assert cleared["changed"], cleared
    vms = read(lab, [busy, quiet])
    assert vms[keys[0]]["policy"] == {} and not vms[keys[1]]["paused"]
    assert PREFIX + "policy" not in fleet.annotations(busy)


def test_the_kill_switch_of_an_owned_vmi_is_kept_on_its_virtual_machine(lab, fleet):
    name = fleet.vmi(cores=2, vm=True)
    key = "%s/%s" % (NAMESPACE, name)
    assert k8s(lab, "kubevirt_policy_state", {"names": [key], "paused": True})["changed"]
    assert fleet.read_vm(name)["metadata"]["labels"][PREFIX + "paused"] == "true"
    fleet.restart(name)
    assert read(lab, [name])[key]["paused"], "a restart keeps the kill switch"
    assert k8s(lab, "kubevirt_policy_state", {"names": [key], "paused": False})["changed"]
    assert PREFIX + "paused" not in (fleet.read_vm(name)["metadata"].get("labels") or {})


def test_a_vmi_changed_since_it_was_read_is_left_alone(lab, fleet):
    name = fleet.vmi(cores=2)
    key = "%s/%s" % (NAMESPACE, name)
    seen = {"cap_cpus": None, "throttle_time": None}
    k8s(lab, "kubevirt_vm_cpu_limit", {"namespace": NAMESPACE, "names": [name], "cpus": "1500m"})
    before = (fleet.annotations(name), fleet.compute_limits(name))
    result = k8s(lab, "kubevirt_vm_cpu_limit", {"namespace": NAMESPACE, "names": [name], "cpus": "1",
                                                "expected": {key: seen}})
    vm = result["vms"][0]
    assert not result["changed"] and not result.get("failed"), result
    assert vm["conflict"] and "changed since it was read: cap_cpus was unlimited, is 1.5 CPU now" in vm["msg"], vm
    assert result["summary"]["conflict"] == [key]
    assert (fleet.annotations(name), fleet.compute_limits(name)) == before


def test_two_throttles_of_what_they_both_read_change_the_vmi_once(lab, fleet):
    """Two runners (two cycles of the loop) that read the VMI at the same
    moment: the first write wins, the second is refused by the API server
    (resourceVersion), reads again, finds the first's record and leaves the
    VMI alone."""
    name = fleet.vmi(cores=2)
    key = "%s/%s" % (NAMESPACE, name)
    args = {"namespace": NAMESPACE, "names": [name], "expected": {key: {"cap_cpus": None, "throttle_time": None}}}
    results = [None, None]

    def throttle(index, cpus):
        results[index] = k8s(lab, "kubevirt_vm_cpu_limit", dict(args, cpus=cpus, reason="runner %d" % index))
    runners = [threading.Thread(target=throttle, args=(index, cpus)) for index, cpus in enumerate(("1", "1500m"))]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join()
    outcomes = sorted("conflict" if r["vms"][0].get("conflict") else "changed" if r["changed"] else "other"
                      for r in results)
    assert outcomes == ["changed", "conflict"], results
    winner = [r for r in results if r["changed"]][0]
    record = json.loads(fleet.annotations(name)[PREFIX + "cpu-limit-throttle"])
    assert record["reason"] == winner["vms"][0]["after"]["throttle"]["reason"]
    assert fleet.compute_limits(name)["cpu"] == fleet.annotations(name)[PREFIX + "cpu-limit"]
