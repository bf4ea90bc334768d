"""Stage 2 for KubeVirt VMs, as operators run it: recommend.yml with
kubevirt=true plans the throttle of a noisy KubeVirt VM and changes
nothing; apply_plan.yml applies it once through kubevirt_vm_cpu_limit, and
refuses it when the VM was throttled by hand since the plan.

The lab's real kube-apiserver (KubeVirt's CRDs), Prometheus and host CPU
contention; what the lab cannot have is said in the noisy_kubevirt
fixture: KubeVirt's VMI metrics are served through node_exporter's
textfile collector (no virt-handler), and the brake is what the API server
stored on the launcher pod (no kubelet). The first test reads Prometheus
through an HTTPS front that wants a bearer token (prometheus_front: the
lab's Prometheus has neither TLS nor authentication), as a Prometheus behind
an authenticating proxy is read. The plans are made and applied on an
inventory whose hypervisor host is lab-node-a as a KubeVirt node
(overcommit_libvirt false: no libvirt-python on it, no lab guest read)."""

import json

import pytest

from kubevirt_fleet import NAMESPACE, PREFIX, WINDOW_SECONDS, cpus, settle
from prometheus_front import PrometheusFront
from run_module import run_module, run_playbook

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("lab-node-a")]


def environment(lab):
    return {"K8S_AUTH_KUBECONFIG": lab["OVERCOMMIT_KUBECONFIG_OPERATOR"]}


def recommend(lab, tmp_path, scenario, inventory, **prometheus):
    """The plan of recommend.yml made under contention; the contention stops after.
    prometheus: the playbook's prometheus_* variables (default: the lab's URL)."""
    plan_dir = tmp_path / ("plan-%d" % len(list(tmp_path.iterdir())))
    scenario["contention"].start()
    try:
        settle()
        completed = run_playbook("recommend.yml", {
            "plan_dir": str(plan_dir), "samples": 2, "interval": 2, "kubevirt": True, "kubevirt_namespace": NAMESPACE,
            "kubevirt_selector": scenario["fleet"].selector, "kubevirt_window": WINDOW_SECONDS,
            "prometheus_url": lab["OVERCOMMIT_PROMETHEUS_URL"], **prometheus}, env=environment(lab), inventory=inventory)
    finally:
        scenario["contention"].stop()
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    with open(str(plan_dir / "plan.json")) as handle:
        return json.load(handle), plan_dir


def state_of(fleet, name):
    return fleet.annotations(name), fleet.compute_limits(name)


def test_recommend_plans_the_kubevirt_throttle_changing_nothing_and_apply_plan_applies_it_once(
        lab, tmp_path, noisy_kubevirt, kubevirt_node_inventory):
    fleet, noisy, key = noisy_kubevirt["fleet"], noisy_kubevirt["noisy"], noisy_kubevirt["key"]
    before = state_of(fleet, noisy), state_of(fleet, noisy_kubevirt["victim"])
    token = "oc-test-%s" % noisy
    with PrometheusFront(lab["OVERCOMMIT_PROMETHEUS_URL"], str(tmp_path), token) as front:
        plan, plan_dir = recommend(lab, tmp_path, noisy_kubevirt, kubevirt_node_inventory, prometheus_url=front.url,
                                   prometheus_token=token, prometheus_ca_cert=front.cert_path)
    # Every query went through the front with the token, over TLS verified against its CA.
    assert front.queries and front.unauthorized == 0, (front.queries, front.unauthorized)
    assert token not in (plan_dir / "plan.json").read_text()
    (action,) = [a for a in plan["actions"] if a.get("vm")]
    assert (action["action"], action["object"], action["platform"], action["rule"]) == (
        "throttle", key, "kubevirt", "contain"), plan["summary"]
    assert action["expected"] == {"cap_cpus": None, "throttle_time": None}
    # Nothing changed on either VM, and the page plots the action from KubeVirt's metrics.
    assert (state_of(fleet, noisy), state_of(fleet, noisy_kubevirt["victim"])) == before
    page = (plan_dir / "plan.html").read_text()
    assert "%s/%s: CPUs used, steal and cap" % (NAMESPACE, noisy) in page

    applied = run_playbook("apply_plan.yml", {"plan_file": str(plan_dir / "plan.json"), "requested_by": "approver"},
                           env=environment(lab), inventory=kubevirt_node_inventory)
    assert applied.returncode == 0, applied.stdout[-4000:]
    assert "applied: %s: %s (contain)" % (key, action["change"]) in applied.stdout
    annotations, limits = state_of(fleet, noisy)
    assert cpus(limits["cpu"]) == pytest.approx(action["cpus"])
    record = json.loads(annotations[PREFIX + "cpu-limit-throttle"])
    assert (record["plan"], record["by"]) == (plan["id"], "approver")

    again = run_playbook("apply_plan.yml", {"plan_file": str(plan_dir / "plan.json")}, env=environment(lab),
                         inventory=kubevirt_node_inventory)
    assert again.returncode == 0, again.stdout[-4000:]
    assert "already applied: %s" % key in again.stdout
    assert state_of(fleet, noisy) == (annotations, limits)
    assert len([e for e in fleet.events(noisy) if e[1] == "CPULimitApplied"]) == 1


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
