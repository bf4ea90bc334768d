"""The closed loop's kill switch on KubeVirt VMs decided together with the
lab hypervisor's libvirt guests: playbooks/closed_loop.yml with
kubevirt=true on the lab's own inventory, against the lab's real
kube-apiserver (KubeVirt's CRDs), its real Prometheus, and the real CPU
pressure of the lab host that stands for the VMs' node (lab-node-a); and
host_pressure_info on a KubeVirt node without libvirt-python.

A cycle containing a noisy VM, two cycles at once, and the release run on
the lab's real KubeVirt (tests/integration/kubevirt/test_loop_cycle.py).
This one stays on stand-ins, as real KubeVirt's controllers would act on
the other tests' VMIs, and the lab hypervisor does not stand for the real
KubeVirt node: no virt-handler runs, so the VMs' usage (KubeVirt's VMI
metrics) is served by virt_handler_metrics through the real node_exporter
textfile collector and scraped by the real Prometheus, at rates the test
sets: the noisy VM burns its vCPU, the victim's vCPUs wait (steal). No
kubelet runs, so what the brake would do is judged by what the API server
stored - the launcher pod's compute CPU limit. The host's contention is
real: two spinning processes keep both of the machine's cores busy while
the loop is to contain (the policy never throttles while the host has CPU
to spare)."""

import json
import os
import subprocess
import sys

import pytest

from cycle_summary import summary_in
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


def cycle(lab, tmp_path, fleet, inventory=INVENTORY, **extra):
    cycle_dir = tmp_path / ("cycle-%d" % len(os.listdir(str(tmp_path))))
    cycle_dir.mkdir()
    completed = playbook_forkserver.run(command(lab, cycle_dir, inventory, kubevirt_selector=fleet.selector, **extra),
                                        env=environment(lab))
    assert completed.returncode == 0, completed.stdout[-5000:] + completed.stderr[-2000:]
    return summary_in(cycle_dir), completed.stdout


@ON_LAB_HYPERVISOR
@pytest.mark.serial  # its contention loads both cores
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
