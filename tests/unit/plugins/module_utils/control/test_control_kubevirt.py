# -*- coding: utf-8 -*-
"""KubeVirt VMs in the policy's input and in plans: a VM joins the host
that stands for its node, is named kubevirt/namespace/name, sits out a
round Prometheus had no usage of, and is reviewed apart from libvirt
domains."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.overcommit.control.plugins.filter.plan import plan_review
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.control import observe, recommend
from ansible_collections.overcommit.control.plugins.module_utils.domain import observed
from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans
from ansible_collections.overcommit.control.plugins.module_utils.k8s import metadata
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import (
    usage as vm_cpu_info, policy_state as vmi_policy_state)

NOW = 1_700_000_000
TIMES = [NOW - 20, NOW - 10, NOW]


def domain(name, used, steal, vcpus=2, klass="burstable"):
    return {"name": name, "active": True, "vcpus": vcpus, "class": klass, "cap_cpus": None, "throttle": None,
            "usage": {"cpus_used": used, "steal_cpus": steal}}


def host(rounds=3, node="worker-1", avg10=50.0):
    pressure = {"cpus": 2, "procs_running": 5, "pressure": {"cpu": {"some": {"avg10": avg10, "avg60": avg10 - 10}}}}
    return {"vm_rounds": [{"domains": [domain("victim-1", 0.67, 0.33), domain("victim-2", 0.66, 0.34)]}
                          for index in range(rounds)],
            "pressure_rounds": [dict(pressure) for index in range(rounds)], "node": node, "paused": False}


def kubevirt_vm(name="tenant-a/noisy", node="worker-1", used=0.67, steal=0.33, rounds=3, **extra):
    # As kubevirt_vm_cpu_info returns it.
    usage = [{"cpus_used": used, "steal_cpus": steal} for index in range(rounds)]
    vm = {"name": name, "node": node, "platform": "kubevirt", "active": True, "vcpus": 1, "class": "shared",
          "cap_cpus": None, "throttle": None, "policy": {}, "paused": False, "usage_rounds": usage,
          "usage": dict(usage[-1], window_seconds=10) if usage else {}}
    vm.update(extra)
    return vm


def test_a_kubevirt_vm_joins_the_host_of_its_node_and_is_contained_there():
    result = recommend.replay(observe.rounds({"hv-1": host()}, None, {"vms": [kubevirt_vm()]}), TIMES)
    actions = result["last"]["actions"]
    assert [(a["action"], a["object"], a.get("platform"), a["vm"], a["host"]) for a in actions] == [
        ("throttle", "kubevirt/tenant-a/noisy", "kubevirt", "tenant-a/noisy", "hv-1")]
    assert result["seen"]["kubevirt/tenant-a/noisy"] == {"cap_cpus": None, "throttle_time": None}
    assert "kubevirt/tenant-a/noisy" in result["last"]["state"]["vms"]


def test_kubevirt_vms_on_a_node_no_host_stands_for_are_named_and_not_planned():
    observed = observe.rounds({"hv-1": host()}, None, [kubevirt_vm(node="worker-9"), kubevirt_vm("b/x", node=None)])
    assert all(vm["name"] in ("victim-1", "victim-2") for _pos, _hosts, vms in observed["rounds"] for vm in vms)
    reasons = dict((s["host"], s["reason"]) for s in observed["skipped"])
    assert "tenant-a/noisy are not planned" in reasons["node worker-9"]
    assert "b/x" in reasons["node no node"]


def test_a_round_prometheus_had_no_usage_of_is_sat_out():
    vm = kubevirt_vm()
    vm["usage_rounds"][1] = {"cpus_used": None, "steal_cpus": None}
    observed = observe.rounds({"hv-1": host()}, None, [vm])
    names = [[v["name"] for v in vms] for _pos, _hosts, vms in observed["rounds"]]
    assert ["tenant-a/noisy" in round_names for round_names in names] == [True, False, True]


def test_a_stopped_or_unreadable_vm_is_left_out_and_bad_input_names_the_field():
    observed = observe.rounds({"hv-1": host()}, None, [kubevirt_vm(active=False), {"name": "a/b", "failed": True}])
    assert all(v["name"] in ("victim-1", "victim-2") for _pos, _hosts, vms in observed["rounds"] for v in vms)
    with pytest.raises(ValueRangeError) as refused:
        observe.rounds({"hv-1": host()}, None, "vms")
    assert refused.value.field == "kubevirt"


def test_kubevirt_actions_are_reviewed_with_the_vms_and_never_on_the_hypervisor():
    made = recommend.recommend({"hv-1": host()}, None, TIMES, NOW, kubevirt=[kubevirt_vm()])
    on_host = plan_review(made, NOW, host="hv-1", domains=[domain("victim-1", 0.1, 0), domain("victim-2", 0.1, 0)])
    assert on_host["apply"] == [] and on_host["refused"] == []
    live = [kubevirt_vm()]
    review = plan_review(made, NOW, kubevirt={"vms": live})
    assert [a["object"] for a in review["apply"]] == ["kubevirt/tenant-a/noisy"]
    # A hand throttle since the plan: refused, naming what changed.
    live = [kubevirt_vm(cap_cpus=0.5, throttle={"time": "2023-11-14T22:00:00Z"})]
    review = plan_review(made, NOW, kubevirt=live)
    assert "cap_cpus was unlimited, is 0.5 CPU now" in review["refused"][0]["refused"]
    # Done: this plan's record with the planned cap.
    planned = made["actions"][0]["cpus"]
    live = [kubevirt_vm(cap_cpus=planned, throttle={"time": "2023-11-14T22:00:00Z", "plan": made["id"]})]
    assert [a["object"] for a in plan_review(made, NOW, kubevirt=live)["done"]] == ["kubevirt/tenant-a/noisy"]
    # Picked by its namespace/name.
    assert plans.select(made, ["tenant-a/noisy"]) == made["actions"]


def test_usage_is_summed_per_vmi_from_the_answers_of_both_queries():
    queries = vm_cpu_info.usage_queries("tenant-a", 10)
    assert queries["cpus_used"] == ('sum by (namespace, name) '
                                    '(rate(kubevirt_vmi_cpu_usage_seconds_total{namespace="tenant-a"}[10s]))')
    assert "kubevirt_vmi_vcpu_delay_seconds_total" in queries["steal_cpus"]
    usage = vm_cpu_info.usage_by_vmi({
        "cpus_used": [({"namespace": "a", "name": "x"}, 1.23456), ({"name": "no-namespace"}, 1.0)],
        "steal_cpus": [({"namespace": "a", "name": "x"}, -0.0001), ({"namespace": "a", "name": "y"}, 0.5)]})
    assert usage == {"a/x": {"cpus_used": 1.235, "steal_cpus": 0.0}, "a/y": {"cpus_used": None, "steal_cpus": 0.5}}


@pytest.mark.parametrize("params, field", [
    ({"usage_window": 0}, "usage_window"),
    ({"usage_times": [0]}, "usage_times[0]"),
    ({"usage_times": [NOW]}, "prometheus_url"),
    ({"names": ["x"]}, "namespace"),
    ({"prefix": "bad prefix"}, "prefix"),
])
def test_bad_read_options_are_refused_naming_the_field(params, field):
    base = {"usage_window": 60, "usage_times": None, "prometheus_url": None, "names": [], "namespace": None,
            "prefix": "overcommit.control/"}
    with pytest.raises(ValueRangeError) as refused:
        vm_cpu_info.check_request(dict(base, **params))
    assert refused.value.field == field


@pytest.mark.parametrize("params, field", [
    ({"states": {"no-namespace": {}}}, "states.no-namespace"),
    ({"states": {"a/b": "text"}}, "states.a/b"),
    ({"states": None, "paused": True, "names": []}, "names"),
    ({"states": None, "paused": None}, "states"),
    ({"states": None, "paused": True, "names": ["a/b/c"]}, "names[0]"),
])
def test_bad_policy_state_options_are_refused_naming_the_field(params, field):
    base = {"states": None, "names": [], "paused": None, "missing": "fail", "prefix": "overcommit.control/"}
    with pytest.raises(ValueRangeError) as refused:
        vmi_policy_state.check_request(dict(base, **params))
    assert refused.value.field == field


def test_a_state_is_written_only_when_it_differs():
    keys = {"policy": "overcommit.control/policy", "paused": "overcommit.control/paused"}
    vmi = {"metadata": {"annotations": {"overcommit.control/policy": '{"cap":0.5}'}}}
    assert metadata.policy_patch(vmi, {"state": {"cap": 0.5}}, keys) is None
    assert metadata.policy_patch(vmi, {"state": None}, keys) == {
        "metadata": {"annotations": {"overcommit.control/policy": None}}}
    assert metadata.paused_patch(vmi, False, keys) is None
    assert metadata.paused_patch(vmi, True, keys) == {"metadata": {"labels": {"overcommit.control/paused": "true"}}}


def test_no_cap_goes_under_the_launchers_cpu_request():
    # The policy's floor for a 1 vCPU shared VM is 0.1 CPU; Kubernetes refuses a limit under the request.
    plan = recommend.replay(observe.rounds({"hv-1": host()}, None, [kubevirt_vm(cpu_request=0.4)]), TIMES,
                            {"floor_fraction": 0.1})["last"]
    (throttle,) = plan["actions"]
    assert throttle["cpus"] >= 0.4 and throttle["signals"]["floor_cpus"] == 0.4


def test_a_vm_without_usage_in_the_last_round_is_named_as_not_planned():
    vm = kubevirt_vm()
    vm["usage_rounds"][-1] = {"cpus_used": None, "steal_cpus": None}
    observed = observe.rounds({"hv-1": host()}, None, [vm])
    (skipped,) = observed["skipped"]
    assert skipped["host"] == "kubevirt/tenant-a/noisy" and "no usage of it in the last round" in skipped["reason"]


def test_kubevirt_vms_that_could_not_be_read_are_named_and_the_rest_is_decided():
    failed = {"failed": True, "msg": "cannot reach Prometheus at http://prometheus:9090: connection refused", "vms": []}
    result = recommend.replay(observe.rounds({"hv-1": host()}, None, failed), TIMES)
    assert {"host": "kubevirt", "reason": "the KubeVirt VMs could not be read: cannot reach Prometheus at "
                                          "http://prometheus:9090: connection refused"} in result["skipped"]


def test_a_weight_an_approved_plan_demoted_on_a_kubevirt_vm_is_the_policys_own_with_the_weight_it_had():
    """Its record names the plan and the VMI keeps the desired request: the
    policy may later raise or restore that weight; without the desired
    request (a cap only, or nothing of ours) no weight is claimed."""
    demoted = {"platform": "kubevirt", "cap_cpus": None, "cpu_request": 0.121, "desired_request": "121m",
               "previous_cpu_request": 0.3, "throttle": {"plan": "plan-1", "time": "2026-01-05T10:00:00Z"}}
    state = observed.vm_state(demoted, "kubevirt")
    assert (state["weight"], state["weight_was"], state["rule"]) == (123.904, 307.2, "contain")
    assert observed.vm_state(dict(demoted, desired_request=None), "kubevirt") == {}
    assert "weight" not in observed.vm_state(dict(demoted, desired_request=None, cap_cpus=1.0), "kubevirt")


def test_a_migrated_vms_demoted_weight_is_judged_by_the_request_the_brake_keeps():
    """After a live migration the new launcher runs the template's request
    until the reconcile demotes it again: the policy judges the weight it
    set, as it judges a cap by the desired cap, not someone else's change."""
    migrated = {"platform": "kubevirt", "cpu_request": 0.3, "desired_cpu_request": 0.121}
    assert observed.cpu_weight(migrated) == 123.904
    assert observed.cpu_weight(dict(migrated, desired_cpu_request=None)) == 307.2
