"""The closed loop's safety on KubeVirt VMs: playbooks/closed_loop.yml with
kubevirt=true, run by ansible-playbook against the lab's real
kube-apiserver (KubeVirt's CRDs), its real Prometheus, and the real CPU
pressure of the lab host that stands for the VMs' node (lab-node-a): two
cycles at once change the VM once, the kill switch holds it.

A cycle containing a noisy VM and releasing it runs on the lab's real
KubeVirt (tests/integration/kubevirt/test_loop_cycle.py). These tests stay
on stand-ins, as real KubeVirt's controllers would act on the other tests'
VMIs: no virt-handler runs, so the VMs' usage (KubeVirt's VMI metrics) is
served by virt_handler_metrics through the real node_exporter textfile
collector and scraped by the real Prometheus, at rates the test sets: the
noisy VM burns its vCPU, the victim's vCPUs wait (steal). No kubelet runs,
so the brake is judged by what the API server stored - the launcher pod's
compute CPU limit after the resize. The host's contention is real: two
spinning processes keep both of the machine's cores busy while the loop is
to contain (the policy never throttles while the host has CPU to spare).

The concurrency cycles run on an inventory whose hypervisor host is
lab-node-a as a KubeVirt node (overcommit_libvirt false, its modules run by
a Python without libvirt-python), as on a KubeVirt cluster; the kill-switch
test runs on the lab's own inventory, where the KubeVirt VMs are decided
together with the lab hypervisor's libvirt guests."""

import json
import os
import subprocess
import sys

import pytest

from kubevirt_fleet import NAMESPACE, PREFIX, WINDOW_SECONDS, settle
import playbook_forkserver
from run_module import INVENTORY, ROOT, run_module

pytestmark = [pytest.mark.e2e]
# The lab's guests are read only by the cycles on the lab inventory.
ON_KUBEVIRT_NODE = pytest.mark.xdist_group("lab-node-a")
ON_LAB_HYPERVISOR = pytest.mark.xdist_group("libvirt")

POLICY = {"relax_calm_seconds": 0, "cooldown_seconds": 0, "floor_fraction": 0.1, "pressure_relax": 100.0}


def command(lab, cycle_dir, inventory=INVENTORY, **extra):
    extra_vars = dict({"samples": 1, "interval": 2, "policy": POLICY, "kubevirt": True, "kubevirt_namespace": NAMESPACE,
                       "kubevirt_window": WINDOW_SECONDS, "prometheus_url": lab["OVERCOMMIT_PROMETHEUS_URL"],
                       "cycle_dir": str(cycle_dir)}, **extra)
    return [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory,
            os.path.join(ROOT, "playbooks", "closed_loop.yml"), "-e", json.dumps(extra_vars)]


def environment(lab):
    return dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1",
                K8S_AUTH_KUBECONFIG=lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])


def summary_in(cycle_dir):
    (name,) = os.listdir(str(cycle_dir))
    with open(str(cycle_dir / name)) as handle:
        return json.load(handle)


def cycle(lab, tmp_path, fleet, inventory=INVENTORY, **extra):
    cycle_dir = tmp_path / ("cycle-%d" % len(os.listdir(str(tmp_path))))
    cycle_dir.mkdir()
    completed = playbook_forkserver.run(command(lab, cycle_dir, inventory, kubevirt_selector=fleet.selector, **extra),
                                        env=environment(lab))
    assert completed.returncode == 0, completed.stdout[-5000:] + completed.stderr[-2000:]
    return summary_in(cycle_dir), completed.stdout


def throttles(fleet, name):
    return [e for e in fleet.events(name) if e[1] == "CPULimitApplied"]


@ON_KUBEVIRT_NODE
def test_two_cycles_started_at_the_same_time_throttle_the_kubevirt_vm_once(
        lab, tmp_path, noisy_kubevirt, kubevirt_node_inventory):
    fleet, noisy = noisy_kubevirt["fleet"], noisy_kubevirt["noisy"]
    key = "kubevirt/%s/%s" % (NAMESPACE, noisy)
    noisy_kubevirt["contention"].start()
    settle()
    runs = []
    for index in range(2):
        cycle_dir = tmp_path / ("cycles-%d" % index)
        cycle_dir.mkdir()
        runs.append((cycle_dir, subprocess.Popen(command(lab, cycle_dir, kubevirt_node_inventory,
                                                         kubevirt_selector=fleet.selector),
                                                 env=environment(lab),
                                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    summaries = []
    for cycle_dir, process in runs:
        output = process.communicate(timeout=600)[0]
        assert process.returncode == 0, output[-5000:]
        summaries.append(summary_in(cycle_dir))
    noisy_kubevirt["contention"].stop()
    assert all([(a["action"], a["object"]) for a in s["actions"]] == [("throttle", key)] for s in summaries), summaries
    applied = [s for s in summaries if key in s["outcome"]["applied"]]
    assert len(applied) == 1, [s["outcome"] for s in summaries]
    other = [s for s in summaries if s is not applied[0]][0]
    assert key in other["outcome"]["conflict"] + other["outcome"]["refused"], other["outcome"]
    record = json.loads(fleet.annotations(noisy)[PREFIX + "cpu-limit-throttle"])
    assert record["plan"] == applied[0]["cycle"]
    assert len(throttles(fleet, noisy)) == 1, fleet.events(noisy)


@ON_LAB_HYPERVISOR
def test_with_the_kill_switch_on_the_vm_a_cycle_changes_nothing_and_says_why(
        lab, tmp_path, noisy_kubevirt, lab_guest_states_restored):
    fleet, noisy = noisy_kubevirt["fleet"], noisy_kubevirt["noisy"]
    key = "kubevirt/%s/%s" % (NAMESPACE, noisy)
    fleet.custom.patch_namespaced_custom_object("kubevirt.io", "v1", NAMESPACE, "virtualmachines", noisy,
                                                {"metadata": {"labels": {PREFIX + "paused": "true"}}})
    before = (fleet.annotations(noisy), fleet.compute_limits(noisy))
    noisy_kubevirt["contention"].start()
    settle()
    summary, output = cycle(lab, tmp_path, fleet)
    noisy_kubevirt["contention"].stop()
    assert summary["actions"] == [] and [h["object"] for h in summary["held"]] == [key], summary
    assert "held by the kill switch: %s: kill switch: %s is paused" % (key, key) in output
    assert (fleet.annotations(noisy), fleet.compute_limits(noisy)) == before


@ON_KUBEVIRT_NODE
def test_host_pressure_info_runs_on_a_kubevirt_node_without_libvirt_python(kubevirt_node_inventory):
    """The host side of a cycle on a KubeVirt node: host_pressure_info reads
    the node's pressure with no libvirt-python there (the cycles above run on
    that host); asked for domains, it says what is missing, no traceback."""
    assert subprocess.run(["/usr/bin/python3", "-c", "import libvirt"], capture_output=True, check=False).returncode != 0, \
        "this test needs a Python without libvirt-python"
    read = run_module("host_pressure_info", {"collect_domains": False}, host="kubevirt-node-a",
                      inventory=kubevirt_node_inventory)
    assert not read.get("failed") and read["cpus"] >= 1 and "avg10" in read["pressure"]["cpu"]["some"], read
    refused = run_module("host_pressure_info", {}, host="kubevirt-node-a", inventory=kubevirt_node_inventory)
    assert refused["failed"] and "libvirt-python" in refused["msg"] and "Traceback" not in str(refused), refused
