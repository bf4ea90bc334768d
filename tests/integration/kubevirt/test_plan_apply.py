"""Stage 2 on real KubeVirt, as operators run it: recommend.yml with
kubevirt=true plans the first rung of the ladder for a noisy VirtualMachine
(its CPU weight, as its launcher's CPU request) from virt-handler's own
series in the lab's Prometheus and changes nothing; apply_plan.yml, run by
the person who approved it, applies it once, and the kernel then gives
QEMU's container the planned weight. The noisy neighbour
and its victim are real_kubevirt's noisy_pair; the plans are made and
applied on an inventory whose host stands for the lab node. (That a VM
changed by hand since its plan is refused is checked with stand-ins, in
tests/integration/stage2/test_recommend_apply_kubevirt.py.)"""

import json
import os
import time
import uuid

from kubevirt_fleet import PREFIX
from prometheus_window import wait_for_window_after
from real_kubevirt import node_inventory
from run_module import run_playbook
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.usage import USAGE_METRIC

# Seconds of each rate Prometheus is asked for (5 of its 2-s scrapes of virt-handler).
WINDOW = 10


def test_recommend_plans_the_noisy_vms_weight_changing_nothing_and_apply_plan_applies_it_once(
        lab, tmp_path, kubevirt, lab_node_kept, record_property):
    run = {"overcommit.test/plan": uuid.uuid4().hex[:8]}
    noisy, victim = kubevirt.noisy_pair(run)
    both_running = time.time()
    key = "kubevirt/%s/%s" % (kubevirt.namespace, noisy)
    inventory = node_inventory(tmp_path, lab_node_kept)
    env = {"K8S_AUTH_KUBECONFIG": lab["OVERCOMMIT_KUBECONFIG_OPERATOR"]}
    # Until Prometheus' rate window holds only the seconds both VMs ran.
    wait_for_window_after(lab["OVERCOMMIT_PROMETHEUS_URL"], '%s{namespace="%s",name=~"%s|%s"}'
                          % (USAGE_METRIC, kubevirt.namespace, noisy, victim), both_running, WINDOW)

    # A plan whose last sample catches the noisy VM's measured want in a dip
    # plans nothing (docs/policy.md); a later one plans the weight. Its three
    # vCPUs want 3.0 CPUs against a flat-out line of 2.7, and 10 s rates of
    # virt-handler's counters scraped every 2 s put it (or the victim's wait)
    # under its line in one plan of two or three: five plans, seconds each.
    plans = []
    for attempt in range(5):
        plan_dir = tmp_path / ("plan-%d" % attempt)
        made = run_playbook("recommend.yml", {
            "plan_dir": str(plan_dir), "samples": 2, "interval": 2, "kubevirt": True,
            "kubevirt_namespace": kubevirt.namespace,
            "kubevirt_selector": "overcommit.test/plan=" + run["overcommit.test/plan"], "kubevirt_window": WINDOW,
            "prometheus_url": lab["OVERCOMMIT_PROMETHEUS_URL"],
            # The VMs started a moment ago: the first minute's grace is for booting guests.
            "policy": {"culprit_min_age_seconds": 0}}, env=env, inventory=inventory)
        assert made.returncode == 0, made.stdout[-4000:] + made.stderr[-2000:]
        with open(str(plan_dir / "plan.json")) as handle:
            plans.append(json.load(handle))
        if [a for a in plans[-1]["actions"] if a.get("vm")]:
            break
    record_property("attempts", attempt + 1)
    plan = plans[-1]
    planned = [(a["action"], a["object"], a["platform"], a["rule"]) for a in plan["actions"] if a.get("vm")]
    assert planned == [("weight", key, "kubevirt", "contain")], [p["summary"] for p in plans]
    action = [a for a in plan["actions"] if a.get("vm")][0]
    request_before = kubevirt.compute_spec(noisy).resources.requests["cpu"]
    # Nothing changed: no brake on either VM; the page plots the action from virt-handler's series.
    for name in (noisy, victim):
        assert kubevirt.cfs_quota(name) is None
        assert not [k for k in kubevirt.annotations(name) if k.startswith(PREFIX + "cpu-")], kubevirt.annotations(name)
    assert "%s/%s: CPUs used, steal and cap" % (kubevirt.namespace, noisy) in (plan_dir / "plan.html").read_text()

    applied = run_playbook("apply_plan.yml", {"plan_file": str(plan_dir / "plan.json"), "requested_by": "approver"},
                           env=env, inventory=inventory)
    assert applied.returncode == 0, applied.stdout[-4000:]
    assert "applied: %s: %s (contain)" % (key, action["change"]) in applied.stdout
    # The launcher runs with the planned CPU request, which the kubelet makes its container's weight
    # (what the victim gains by it is the loop test's to measure); no quota.
    assert kubevirt.compute_spec(noisy).resources.requests["cpu"] == action["cpu_request"]
    with open(os.path.join(kubevirt.cgroup(noisy, "cpu"), "cpu.shares")) as handle:
        assert int(handle.read()) == max(2, int(action["cpu_request"][:-1]) * 1024 // 1000)
    assert kubevirt.cfs_quota(noisy) is None
    record = json.loads(kubevirt.annotations(noisy)[PREFIX + "cpu-limit-throttle"])
    assert (record["plan"], record["by"], record["previous_request"]) == (plan["id"], "approver", request_before)
    assert kubevirt.annotations(noisy)[PREFIX + "cpu-request"] == action["cpu_request"]

    again = run_playbook("apply_plan.yml", {"plan_file": str(plan_dir / "plan.json")}, env=env, inventory=inventory)
    assert again.returncode == 0, again.stdout[-4000:]
    assert "already applied: %s" % key in again.stdout
    assert kubevirt.compute_spec(noisy).resources.requests["cpu"] == action["cpu_request"]
    assert [e[1] for e in kubevirt.events(noisy) if e[1].startswith("CPULimit")] == ["CPULimitApplied"]
