"""Stage 2 for KubeVirt VMs: apply_plan.yml refuses the throttle
recommend.yml planned when the VM was throttled by hand since the plan.

The plan-and-apply path itself runs on the lab's real KubeVirt
(tests/integration/kubevirt/test_plan_apply.py). This check of what the
plan expected stays on stand-ins (the noisy_kubevirt fixture says what they
are: KubeVirt's VMI metrics served through node_exporter's textfile
collector, no virt-handler; the brake is what the API server stored on the
launcher pod, no kubelet), as real KubeVirt's controllers would act on the
other tests' VMIs, with the lab's real kube-apiserver, Prometheus and host
CPU contention. The plan is made and applied on an inventory whose
hypervisor host is lab-node-a as a KubeVirt node (overcommit_libvirt false:
no libvirt-python on it, no lab guest read)."""

import json

import pytest

from kubevirt_fleet import NAMESPACE, WINDOW_SECONDS, settle
from run_module import run_module, run_playbook

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("lab-node-a")]


def environment(lab):
    return {"K8S_AUTH_KUBECONFIG": lab["OVERCOMMIT_KUBECONFIG_OPERATOR"]}


def recommend(lab, tmp_path, scenario, inventory):
    """The plan of recommend.yml made under contention; the contention stops after."""
    plan_dir = tmp_path / ("plan-%d" % len(list(tmp_path.iterdir())))
    scenario["contention"].start()
    try:
        settle()
        completed = run_playbook("recommend.yml", {
            "plan_dir": str(plan_dir), "samples": 2, "interval": 2, "kubevirt": True, "kubevirt_namespace": NAMESPACE,
            "kubevirt_selector": scenario["fleet"].selector, "kubevirt_window": WINDOW_SECONDS,
            "prometheus_url": lab["OVERCOMMIT_PROMETHEUS_URL"]}, env=environment(lab), inventory=inventory)
    finally:
        scenario["contention"].stop()
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    with open(str(plan_dir / "plan.json")) as handle:
        return json.load(handle), plan_dir


def state_of(fleet, name):
    return fleet.annotations(name), fleet.compute_limits(name)


@pytest.mark.serial  # its contention loads both cores
def test_a_kubevirt_vm_throttled_by_hand_since_the_plan_is_refused(
        lab, tmp_path, noisy_kubevirt, kubevirt_node_inventory):
    fleet, noisy, key = noisy_kubevirt["fleet"], noisy_kubevirt["noisy"], noisy_kubevirt["key"]
    plan, plan_dir = recommend(lab, tmp_path, noisy_kubevirt, kubevirt_node_inventory)
    assert key in [a["object"] for a in plan["actions"]], plan["summary"]
    by_hand = run_module("kubevirt_vm_cpu_limit", {"namespace": NAMESPACE, "names": [noisy], "cpus": "500m",
                                                   "reason": "by hand"}, env=environment(lab))
    assert by_hand["changed"], by_hand
    before = state_of(fleet, noisy)
    applied = run_playbook("apply_plan.yml", {"plan_file": str(plan_dir / "plan.json")}, env=environment(lab),
                           inventory=kubevirt_node_inventory)
    assert applied.returncode != 0
    assert "refused: %s: %s changed since plan: cap_cpus was unlimited, is 0.5 CPU now" % (key, key) in applied.stdout
    assert state_of(fleet, noisy) == before
