# -*- coding: utf-8 -*-
"""Recommended plans as artefacts: made from the policy's plan, refused
whole once expired, applied per object only while the object is as the
plan saw it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import actions
from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans
from ansible_collections.overcommit.control.plugins.module_utils.domain import policy

NOW = 1_700_000_000


def policy_plan():
    hosts = [{"name": "hv-1", "cpus": 8, "pressure": {"some_avg10": 90, "some_avg60": 40},
              "node": {"name": "node-1", "gated": False}}] + \
        [{"name": "hv-%d" % n, "cpus": 8, "node": {"name": "node-%d" % n}} for n in range(2, 5)]
    vms = [{"name": "batch-1", "host": "hv-1", "class": "shared", "vcpus": 8, "cap_cpus": None,
            "usage": {"cpus_used": 4.4, "steal_cpus": 3.5}}] + \
        [{"name": "web-%d" % n, "host": "hv-1", "class": "shared", "vcpus": 2, "cap_cpus": None,
          "usage": {"cpus_used": 1.1, "steal_cpus": 0.6}} for n in range(1, 4)]
    return policy.decide(hosts, vms, NOW)


SEEN = {"hv-1/batch-1": {"cap_cpus": None, "throttle_time": None},
        "node/node-1": {"gated": False, "gate_time": None}}


def test_a_plan_carries_id_expiry_and_per_action_change_reason_and_what_it_saw():
    made = plans.make(policy_plan(), SEEN, NOW, ttl_seconds=900)
    assert made["id"].startswith("plan-20231114T221320Z-") and made["expires_unix"] == NOW + 900
    gate, throttle = made["actions"]
    assert gate["action"] == "gate" and gate["change"] == "gate node (PreferNoSchedule)"
    assert gate["expected"] == SEEN["node/node-1"]
    assert throttle["change"].startswith("throttle to ") and throttle["change"].endswith("was unlimited")
    assert throttle["reason"] and throttle["rule"] == "contain"
    assert plans.make(policy_plan(), SEEN, NOW, 900)["id"] == made["id"]  # same input, same plan
    json.dumps(made)


def test_a_plan_needs_what_it_saw_of_every_object_and_a_positive_ttl():
    with pytest.raises(ValueRangeError) as error:
        plans.make(policy_plan(), {"node/node-1": {}}, NOW)
    assert error.value.field == "seen"
    with pytest.raises(ValueRangeError) as error:
        plans.make(policy_plan(), SEEN, NOW, ttl_seconds=0)
    assert error.value.field == "ttl_seconds"


def test_an_expired_plan_is_refused_whole():
    made = plans.make(policy_plan(), SEEN, NOW, ttl_seconds=60)
    assert plans.check(made, NOW + 60) is made
    with pytest.raises(plans.PlanExpired) as error:
        plans.check(made, NOW + 61)
    assert made["id"] in str(error.value) and "nothing was applied" in str(error.value)
    with pytest.raises(ValueRangeError):
        plans.check({"actions": []}, NOW)


def test_an_approver_picks_a_subset_by_object_name():
    made = plans.make(policy_plan(), SEEN, NOW)
    assert [a["object"] for a in plans.select(made, ["batch-1"])] == ["hv-1/batch-1"]
    assert [a["object"] for a in plans.select(made, ["node-1", "hv-1/batch-1"])] == ["node/node-1", "hv-1/batch-1"]
    assert len(plans.select(made, [])) == 2
    with pytest.raises(ValueRangeError) as error:
        plans.select(made, ["web-9"])
    assert error.value.field == "only" and "batch-1" in str(error.value)


def test_an_object_changed_since_the_plan_is_named_with_what_changed():
    throttle = plans.make(policy_plan(), SEEN, NOW)["actions"][1]
    assert plans.changed_since(throttle, {"cap_cpus": None, "throttle_time": None}) is None
    why = plans.changed_since(throttle, {"cap_cpus": 1.0, "throttle_time": "2023-11-14T22:20:00Z"})
    assert why == "hv-1/batch-1 changed since plan: cap_cpus was unlimited, is 1 CPU now"
    gate = plans.make(policy_plan(), SEEN, NOW)["actions"][0]
    assert "gated was False, is True now" in plans.changed_since(gate, {"gated": True, "gate_time": None})


def test_caps_equal_to_the_millicpu_are_unchanged():
    action = {"object": "hv-1/a", "expected": {"cap_cpus": 1.5, "throttle_time": "t"}}
    assert plans.changed_since(action, {"cap_cpus": 1.5004, "throttle_time": "t"}) is None
    assert plans.changed_since(action, {"cap_cpus": 1.6, "throttle_time": "t"}) is not None


# ---------------------------------------------------------------- summary, review and outcome

PLAN_ID = "plan-20231114T221320Z-0123456789"


def vm_action(kind="throttle", cpus=0.5, previous=None, expected=None):
    action = {"action": kind, "host": "hv-1", "vm": "batch-1", "object": "hv-1/batch-1", "rule": "contain",
              "reason": "web-1 waits for CPU", "previous_cpus": previous,
              "expected": expected or {"cap_cpus": previous, "throttle_time": None}}
    if cpus is not None:
        action["cpus"] = cpus
    action["change"] = plans.change_text(action)
    return action


NODE_SEEN = {"gated": False, "gate_time": None, "taints": [], "cordoned": False}


def node_action(kind="gate", expected=None):
    action = {"action": kind, "host": "hv-1", "node": "node-1", "object": "node/node-1", "rule": "gate_pressure",
              "reason": "CPU pressure", "expected": expected or NODE_SEEN}
    action["change"] = plans.change_text(action)
    return action


def a_plan(*actions, **extra):
    made = {"version": plans.VERSION, "id": PLAN_ID, "created_unix": NOW, "expires_unix": NOW + 3600,
            "actions": list(actions), "deferred": [], "held": [], "notes": []}
    made.update(extra)
    return made


def live_vm(cap=None, time=None, plan=None):
    return {"seen": {"cap_cpus": cap, "throttle_time": time}, "plan": plan}


def live_node(gated=False, time=None, taints=(), cordoned=False, plan=None):
    return {"seen": {"gated": gated, "gate_time": time, "taints": list(taints), "cordoned": cordoned}, "plan": plan}


def test_the_summary_has_a_line_per_action_held_deferred_and_unmeasured_host():
    made = plans.make(policy_plan(), SEEN, NOW)
    made["held"] = [{"object": "hv-2/x", "held": "kill switch: host hv-2 is paused"}]
    made["deferred"] = [{"object": "node/node-2", "deferred": "max_gated_share=0.25 allows 1 of 4 nodes"}]
    made["skipped"] = [{"host": "hv-9", "reason": "not measured (unreachable, or its play failed)"}]
    lines = plans.summary(made)
    assert lines[0] == "node/node-1: gate node (PreferNoSchedule) (gate_pressure: %s)" % made["actions"][0]["reason"]
    assert lines[1].startswith("hv-1/batch-1: throttle to ") and ", was unlimited (contain: " in lines[1]
    assert lines[2:] == ["held: hv-2/x: kill switch: host hv-2 is paused",
                         "deferred: node/node-2: max_gated_share=0.25 allows 1 of 4 nodes",
                         "not measured: hv-9: not measured (unreachable, or its play failed)"]
    assert plans.summary({"actions": []}) == []
    move = {"action": "move", "object": "hv-1/big", "host": "hv-1", "to": "hv-2", "reason": "why"}
    assert plans.summary({"actions": [], "proposals": [move, dict(move, to=None)]}) == [
        "proposal, not applied: move hv-1/big from hv-1 to hv-2: why",
        "proposal, not applied: move hv-1/big from hv-1 (no host to move it to): why"]


def test_change_text_says_what_each_kind_of_action_does():
    assert vm_action("throttle", 0.5)["change"] == "throttle to 0.5 CPU, was unlimited"
    assert vm_action("relax", 1.2, previous=1.0)["change"] == "relax to 1.2 CPU, was 1 CPU"
    assert vm_action("restore", None, previous=1.8)["change"] == "restore exactly (now 1.8 CPU)"
    assert node_action("gate")["change"] == "gate node" and node_action("open")["change"] == "open node"
    weight = {"action": "weight", "object": "hv-1/a", "shares": 293, "previous_shares": 1024}
    assert plans.change_text(weight) == "demote CPU weight to 293, was 1024"
    assert plans.is_done(weight, live_vm(None, "t", PLAN_ID), PLAN_ID)
    assert not plans.is_done(weight, live_vm(None, "t", "plan-other"), PLAN_ID)


@pytest.mark.parametrize("action, current, done", [
    # A throttle or relax is done with this plan's record and the planned cap.
    (vm_action("throttle", 0.5), live_vm(0.5, "t", PLAN_ID), True),
    (vm_action("throttle", 0.5), live_vm(0.5004, "t", PLAN_ID), True),
    (vm_action("throttle", 0.5), live_vm(0.5, "t", "plan-other"), False),
    (vm_action("throttle", 0.5), live_vm(0.5, "t", None), False),
    (vm_action("throttle", 0.5), live_vm(0.75, "t", PLAN_ID), False),
    (vm_action("throttle", 0.5), live_vm(None, None, None), False),
    (vm_action("relax", 1.2, previous=1.0), live_vm(1.2, "t", PLAN_ID), True),
    (vm_action("relax", 1.2, previous=1.0), live_vm(1.0, "t", PLAN_ID), False),
    # A restore is done when no cap and no record are left, whoever removed them.
    (vm_action("restore", None, previous=1.8), live_vm(None, None, None), True),
    (vm_action("restore", None, previous=1.8), live_vm(1.8, "t", "plan-old"), False),
    (vm_action("restore", None, previous=1.8), live_vm(None, "t", "plan-old"), False),
    # A gate is done with this plan's gate record; an open when no gate is left.
    (node_action("gate"), live_node(True, "t", plan=PLAN_ID), True),
    (node_action("gate"), live_node(True, "t", plan=None), False),
    (node_action("gate"), live_node(False), False),
    (node_action("open"), live_node(False), True),
    (node_action("open"), live_node(True, "t", plan="plan-old"), False),
])
def test_is_done(action, current, done):
    assert plans.is_done(action, current, PLAN_ID) is done


def test_review_sorts_actions_into_apply_done_and_refused_with_the_reason():
    throttle, gate = vm_action("throttle", 0.5), node_action("gate")
    gone = dict(vm_action("throttle", 0.5), vm="gone-1", object="hv-1/gone-1")
    made = a_plan(throttle, gate, gone)
    out = plans.review(made, made["actions"], {"hv-1/batch-1": live_vm(), "node/node-1": live_node()}, NOW)
    assert out["plan"] == PLAN_ID
    assert out["apply"] == [with_call(throttle), with_call(gate)] and out["done"] == []
    assert out["refused"] == [dict(gone, refused="hv-1/gone-1 not found: it is gone since the plan was made")]


def test_review_refuses_an_object_changed_since_the_plan_saying_what_changed():
    throttle, gate = vm_action("throttle", 0.5), node_action("gate")
    made = a_plan(throttle, gate)
    out = plans.review(made, made["actions"], {"hv-1/batch-1": live_vm(0.5, "2023-11-14T22:20:00Z", None),
                                               "node/node-1": live_node(taints=["dedicated=db:NoSchedule"])}, NOW)
    assert out["apply"] == [] and out["done"] == []
    assert [r["refused"] for r in out["refused"]] == [
        "hv-1/batch-1 changed since plan: cap_cpus was unlimited, is 0.5 CPU now",
        "node/node-1 changed since plan: taints was [], is ['dedicated=db:NoSchedule'] now"]
    # Only the record's time changed (restored and throttled again by hand to the same cap).
    relax = vm_action("relax", 1.2, previous=1.0, expected={"cap_cpus": 1.0, "throttle_time": "2023-11-14T22:00:00Z"})
    out = plans.review(a_plan(relax), [relax], {"hv-1/batch-1": live_vm(1.0, "2023-11-14T22:30:00Z", "plan-old")}, NOW)
    assert out["refused"][0]["refused"] == ("hv-1/batch-1 changed since plan: throttle_time was 2023-11-14T22:00:00Z, "
                                            "is 2023-11-14T22:30:00Z now")
    # Cordoned by hand.
    out = plans.review(a_plan(gate), [gate], {"node/node-1": live_node(cordoned=True)}, NOW)
    assert out["refused"][0]["refused"] == "node/node-1 changed since plan: cordoned was False, is True now"


def test_review_counts_an_action_already_applied_as_done_even_once_expired():
    throttle, gate = vm_action("throttle", 0.5), node_action("gate")
    made = a_plan(throttle, gate)
    live = {"hv-1/batch-1": live_vm(0.5, "2023-11-14T22:20:00Z", PLAN_ID),
            "node/node-1": live_node(True, "2023-11-14T22:20:00Z", ["overcommit.control/gated:NoSchedule"],
                                     plan=PLAN_ID)}
    for now in (NOW, NOW + 7200):
        out = plans.review(made, made["actions"], live, now)
        assert out["done"] == [throttle, gate] and out["apply"] == [] and out["refused"] == []


def test_review_refuses_what_is_left_of_a_plan_that_expired_meanwhile():
    throttle = vm_action("throttle", 0.5)
    made = a_plan(throttle)
    out = plans.review(made, [throttle], {"hv-1/batch-1": live_vm()}, NOW + 3601)
    assert out["apply"] == []
    assert out["refused"][0]["refused"] == "plan %s expired at 2023-11-14T23:13:20Z" % PLAN_ID
    assert plans.review(made, [throttle], {"hv-1/batch-1": live_vm()}, NOW + 3600)["apply"] == [with_call(throttle)]


def test_outcome_has_a_line_per_object_applied_failed_done_or_refused():
    throttle, relax = vm_action("throttle", 0.5), dict(vm_action("relax", 1.2, previous=1.0), object="hv-1/web-1")
    broken = dict(vm_action("throttle", 0.75), object="hv-1/web-2")
    done = dict(vm_action("throttle", 0.5), object="hv-1/web-3")
    refused = dict(node_action("gate"), refused="node/node-1 not found: it is gone since the plan was made")
    review = {"plan": PLAN_ID, "apply": [throttle, relax, broken], "done": [done], "refused": [refused]}
    results = [(throttle, {"changed": True, "domains": [{"name": "batch-1", "changed": True}]}),
               (relax, {"changed": False, "failed": True, "msg": "libvirt: domain is not running"}),
               (broken, {"changed": False, "domains": [{"name": "web-2", "failed": True, "msg": "under the floor"}]})]
    out = plans.outcome(review, results)
    assert out["plan"] == PLAN_ID
    assert (out["applied"], out["failed"], out["done"], out["refused"]) == (
        ["hv-1/batch-1"], ["hv-1/web-1", "hv-1/web-2"], ["hv-1/web-3"], ["node/node-1"])
    assert out["lines"] == [
        "applied: hv-1/batch-1: throttle to 0.5 CPU, was unlimited (contain)",
        "failed: hv-1/web-1: relax to 1.2 CPU, was 1 CPU: libvirt: domain is not running",
        "failed: hv-1/web-2: throttle to 0.75 CPU, was unlimited: under the floor",
        "already applied: hv-1/web-3: throttle to 0.5 CPU, was unlimited",
        "refused: node/node-1: node/node-1 not found: it is gone since the plan was made"]
    # A failure without a message still fails.
    assert plans.outcome(review, [(throttle, {"failed": True})])["lines"][0] == \
        "failed: hv-1/batch-1: throttle to 0.5 CPU, was unlimited: failed"


def test_outcome_in_check_mode_says_would_apply():
    throttle = vm_action("throttle", 0.5)
    out = plans.outcome({"plan": PLAN_ID, "apply": [throttle], "done": [], "refused": []},
                        [(throttle, {"changed": True, "domains": [{"name": "batch-1", "changed": True}]})],
                        check_mode=True)
    assert out["applied"] == ["hv-1/batch-1"]
    assert out["lines"] == ["would apply: hv-1/batch-1: throttle to 0.5 CPU, was unlimited (contain)"]


# -------------------------------------------------------------- the one action table

def test_every_action_has_the_module_and_arguments_that_carry_it_out_and_an_undo():
    cap = {"action": "throttle", "cpus": 0.5, "shares": 342, "host": "hv-1", "vm": "web-1"}
    assert actions.call(cap) == {"module": "overcommit.control.libvirt_cputune",
                                 "args": {"state": "throttled", "cpus": 0.5, "shares": 342}}
    kubevirt = dict(cap, platform="kubevirt", cpu_request="334m", vm="lab/web-1")
    assert actions.call(kubevirt) == {"module": "overcommit.control.kubevirt_vm_cpu_limit",
                                      "args": {"state": "throttled", "cpus": "0.5", "cpu_request": "334m"}}
    weight = {"action": "weight", "shares": 342, "vm": "web-1"}
    assert actions.call(weight)["args"] == {"state": "throttled", "shares": 342}
    # A restore gives back the cap and the weight: no weight rides along.
    assert actions.call(dict(cap, action="restore"))["args"] == {"state": "restored"}
    assert actions.call({"action": "gate", "node": "n1", "effect": "NoSchedule"}) == {
        "module": "overcommit.control.node_admission",
        "args": {"state": "gated", "taints": [{"key": "gated", "effect": "NoSchedule"}]}}
    assert actions.call({"action": "open", "node": "n1"})["args"] == {"state": "open"}
    for name, entry in actions.ACTIONS.items():
        assert entry["undone_by"] is None or entry["undone_by"] in actions.ACTIONS, name
    assert set(actions.NAMES) == set(actions.ACTIONS) and set(policy.ACTIONS) == set(actions.ACTIONS)


def with_call(action):
    return dict(action, call=actions.call(action))


def test_each_action_to_apply_carries_its_call():
    throttle, gate = vm_action("throttle", 0.5), node_action("gate")
    made = a_plan(throttle, gate)
    out = plans.review(made, made["actions"], {"hv-1/batch-1": live_vm(), "node/node-1": live_node()}, NOW)
    calls = dict((a["action"], a["call"]) for a in out["apply"])
    assert calls["gate"]["module"] == "overcommit.control.node_admission" and calls["gate"]["args"]["state"] == "gated"
    assert calls["throttle"] == {"module": "overcommit.control.libvirt_cputune",
                                 "args": {"state": "throttled", "cpus": 0.5}}


# -------------------------------------------------------------- a move

def move_action(expected=None):
    action = {"action": "migrate", "host": "hv-1", "vm": "batch-1", "object": "hv-1/batch-1", "to": "hv-2",
              "rule": "placement", "reason": "web-1 still waits with batch-1 at its floor, 3 cycles in a row",
              "expected": expected or {"cap_cpus": 0.4, "throttle_time": "2023-11-14T22:00:00Z"}}
    action["change"] = plans.change_text(action)
    return action


def test_a_move_is_carried_out_by_its_platforms_mover_to_its_target():
    move = move_action()
    assert move["change"] == "move live to hv-2, with its records"
    assert actions.call(move) == {"module": "overcommit.control.libvirt_migrate", "args": {"target_name": "hv-2"}}
    on_kubevirt = dict(move, platform="kubevirt", vm="lab/batch-1", object="lab/batch-1", to_node="worker-7")
    assert plans.change_text(on_kubevirt) == "move live to hv-2 (node worker-7), with its records"
    assert actions.call(on_kubevirt) == {"module": "overcommit.control.kubevirt_vm_migrate",
                                         "args": {"target_node": "worker-7"}}


def test_review_moves_a_vm_still_as_seen_and_leaves_a_missing_one_to_the_module_to_find_on_its_target():
    move = move_action()
    made = a_plan(move)
    seen = live_vm(cap=0.4, time="2023-11-14T22:00:00Z")
    assert [a["call"]["module"] for a in plans.review(made, [move], {"hv-1/batch-1": seen}, NOW)["apply"]] == [
        "overcommit.control.libvirt_migrate"]
    # Not on its host any more: moved already or gone; libvirt_migrate looks on the target and says which.
    missing = plans.review(made, [move], {}, NOW)
    assert [a["object"] for a in missing["apply"]] == ["hv-1/batch-1"] and not missing["refused"]
    # Restored by hand since the plan: refused as any other action, naming what changed.
    changed = plans.review(made, [move], {"hv-1/batch-1": live_vm()}, NOW)
    assert changed["refused"][0]["refused"].startswith("hv-1/batch-1 changed since plan: cap_cpus was 0.4 CPU")
    # Once expired, a missing VM is refused with the plan's expiry, not moved.
    late = plans.review(made, [move], {}, NOW + 7200)
    assert not late["apply"] and "not found" in late["refused"][0]["refused"]


def test_a_move_the_module_found_done_already_is_counted_done():
    move = move_action()
    review = {"plan": PLAN_ID, "apply": [move], "done": [], "refused": []}
    moved = {"changed": True, "domains": [{"name": "batch-1", "changed": True}]}
    already = {"changed": False, "domains": [{"name": "batch-1", "changed": False, "already": True,
                                              "msg": "already on hv-2, not on hv-1: nothing to move"}]}
    assert plans.outcome(review, [(move, moved)])["lines"] == [
        "applied: hv-1/batch-1: move live to hv-2, with its records (placement)"]
    out = plans.outcome(review, [(move, already)])
    assert (out["applied"], out["done"]) == ([], ["hv-1/batch-1"])
    assert out["lines"] == ["already applied: hv-1/batch-1: move live to hv-2, with its records"]
    # KubeVirt's mover reports per VM under `vms`: a move under way or done.
    under_way = {"changed": False, "vms": [{"name": "batch-1", "already": True, "msg": "a move is under way: m-1"}]}
    assert plans.outcome(review, [(move, under_way)])["done"] == ["hv-1/batch-1"]


def test_the_actions_of_a_host_that_reported_nothing_are_named_not_applied():
    here, there = vm_action("throttle", 0.5), dict(vm_action("throttle", 0.75), host="hv-2", object="hv-2/web-1")
    kubevirt = dict(vm_action("throttle", 0.5), platform="kubevirt", vm="lab/web-2", object="lab/web-2", host="hv-2")
    made = a_plan(here, there, kubevirt, node_action("gate"))
    out = plans.unreached(made, made["actions"], {"hv-2"})
    # The KubeVirt VM and the node are applied from the control node, whatever the hypervisor.
    assert (out["failed"], out["applied"]) == (["hv-2/web-1"], [])
    assert out["lines"] == ["not applied: hv-2/web-1: throttle to 0.75 CPU, was unlimited: host hv-2 was not reached "
                            "(unreachable, or its play failed)"]
    assert plans.unreached(made, made["actions"], set())["lines"] == []
