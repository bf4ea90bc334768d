# -*- coding: utf-8 -*-
"""Stage 2's filters (roles recommend and apply_plan), fed the info
modules' results and registered loop results as the roles pass them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.overcommit.control.plugins.filter.plan import FilterModule

FILTERS = FilterModule().filters()
recommend_plan = FILTERS["recommend_plan"]
plan_invalid = FILTERS["plan_invalid"]
plan_review = FILTERS["plan_review"]
plan_outcome = FILTERS["plan_outcome"]
plan_unreached = FILTERS["plan_unreached"]

NOW = 1_700_000_000.0


def domain(name, used, steal, vcpus=2, klass="shared", cap=None, record=None):
    # As libvirt_cputune_info returns it.
    return {"name": name, "active": True, "vcpus": vcpus, "class": klass, "cap_cpus": cap, "throttle": record,
            "usage": {"cpus_used": used, "steal_cpus": steal, "sample_seconds": 5.0}}


def domains():
    return [domain("noisy", 0.67, 0.33, vcpus=1), domain("victim-1", 0.67, 0.33, klass="burstable"),
            domain("victim-2", 0.66, 0.34, klass="burstable"), domain("db", 0.01, 0.0, klass="dedicated")]


def host_measured(times, node="worker-1"):
    # What the recommend role keeps per hypervisor host (recommend_measured).
    rounds = len(times)
    return {"vm_rounds": [{"changed": False, "domains": domains()} for _round in range(rounds)],
            "pressure_rounds": [{"cpus": 2, "procs_running": 5,
                                 "pressure": {"cpu": {"some": {"avg10": 50.0, "avg60": 40.0}}}}] * rounds,
            "round_times": times, "vm_window": [times[0] - 5, times[-1]], "node": node, "paused": False}


def node_info(count=4):
    # node_overcommit_info's registered result.
    return {"changed": False, "nodes": [{"name": "worker-%d" % n, "taints": [], "unschedulable": False, "gate": None}
                                        for n in range(1, count + 1)]}


def a_plan(now=NOW, **kwargs):
    return recommend_plan({"hv-1": host_measured([now - 20, now - 10, now])}, nodes=node_info(), now=now, **kwargs)


# ---------------------------------------------------------------- recommend_plan

def test_recommend_plan_takes_the_rounds_with_their_times_and_the_node_info_result():
    plan = a_plan(ttl_seconds=600)
    assert [(a["action"], a["object"]) for a in plan["actions"]] == [("gate", "node/worker-1"),
                                                                     ("throttle", "hv-1/noisy")]
    assert plan["expires_unix"] == plan["created_unix"] + 600 and plan["ttl_seconds"] == 600
    assert [r["time"] for r in plan["rounds"]] == [NOW - 20, NOW - 10, NOW]
    assert len(plan["summary"]) == 2
    # The nodes as a list do the same.
    same = recommend_plan({"hv-1": host_measured([NOW - 20, NOW - 10, NOW])}, nodes=node_info()["nodes"], now=NOW,
                          ttl_seconds=600)
    assert same["id"] == plan["id"]


def test_each_round_is_decided_at_the_latest_hosts_time():
    measured = {"hv-1": host_measured([NOW - 21, NOW - 9, NOW - 1]),
                "hv-2": host_measured([NOW - 20, NOW - 10], node=None), "hv-3": None}
    plan = recommend_plan(measured, nodes=node_info(), now=NOW)
    assert [r["time"] for r in plan["rounds"]] == [NOW - 20, NOW - 9, NOW - 1]
    assert plan["skipped"] == [{"host": "hv-3", "reason": "not measured (unreachable, or its play failed)"},
                               {"host": "hv-2", "reason": "its last round (3) could not be read: nothing is planned for it"}]
    # No round times at all: one round, decided now.
    bare = host_measured([NOW])
    del bare["round_times"]
    assert [r["time"] for r in recommend_plan({"hv-1": bare}, now=NOW)["rounds"]] == [NOW]


def test_recommend_plan_policy_parameters_and_no_kubernetes():
    plan = recommend_plan({"hv-1": host_measured([NOW - 20, NOW - 10, NOW])}, now=NOW,
                          policy={"max_gated_share": 1.0})
    # Without the nodes read, no node is known: the VMs are decided, no node is gated.
    assert [a["object"] for a in plan["actions"]] == ["hv-1/noisy"]
    assert plan["parameters"]["max_gated_share"] == 1.0


@pytest.mark.parametrize("measured, kwargs, named", [
    ("nope", {}, "measured='nope'"),
    ({"hv-1": "rounds"}, {}, "measured.hv-1='rounds'"),
    ({"hv-1": dict(host_measured([NOW]), round_times=["soon"])}, {}, "measured.hv-1.round_times[0]='soon'"),
    ({"hv-1": host_measured([NOW])}, {"now": "today"}, "now='today'"),
    ({"hv-1": host_measured([NOW])}, {"policy": {"trigger_n": 9}}, "policy.trigger_n"),
    ({"hv-1": host_measured([NOW])}, {"ttl_seconds": 0}, "ttl_seconds"),
    ({"hv-1": host_measured([NOW])}, {"ttl_seconds": "an hour"}, "ttl_seconds='an hour'"),
])
def test_recommend_plan_bad_input_fails_naming_the_filter_and_field(measured, kwargs, named):
    with pytest.raises(AnsibleFilterError) as error:
        recommend_plan(measured, **dict({"now": NOW}, **kwargs))
    assert str(error.value).startswith("recommend_plan: ") and named in str(error.value)


# ---------------------------------------------------------------- plan_invalid

def test_plan_invalid_is_empty_for_a_good_plan_and_says_why_otherwise():
    plan = a_plan(ttl_seconds=600)
    assert plan_invalid(plan, NOW) == ""
    assert plan_invalid(plan, NOW + 600, ["noisy", "worker-1"]) == ""
    expired = plan_invalid(plan, NOW + 601)
    assert expired.startswith("plan %s expired at 2023-11-14T22:23:20Z (1 s ago)" % plan["id"])
    assert "nothing was applied" in expired
    unknown = plan_invalid(plan, NOW, ["web-9"])
    assert unknown.startswith("only='web-9' is out of range") and "hv-1/noisy" in unknown
    assert plan_invalid({"actions": []}, NOW).startswith("plan='dict' is out of range")
    assert plan_invalid("plan.json", NOW).startswith("plan='str' is out of range")
    assert plan_invalid(None, NOW).startswith("plan='NoneType' is out of range")
    # Without a time, the controller's clock: a plan made long ago has expired.
    assert "expired" in plan_invalid(plan)


# ---------------------------------------------------------------- plan_review

def test_plan_review_of_a_host_takes_the_domains_read_there():
    plan = a_plan()
    review = plan_review(plan, NOW + 60, host="hv-1", domains=domains())
    assert review["plan"] == plan["id"]
    assert [a["object"] for a in review["apply"]] == ["hv-1/noisy"] and review["refused"] == []
    # Throttled by this plan already; another host has none of the plan's actions.
    record = {"time": "2023-11-14T22:14:00Z", "plan": plan["id"], "cpus": 0.25}
    applied = [domain("noisy", 0.25, 0.6, vcpus=1, cap=0.25, record=record)] + domains()[1:]
    assert [a["object"] for a in plan_review(plan, NOW + 60, host="hv-1", domains=applied)["done"]] == ["hv-1/noisy"]
    assert plan_review(plan, NOW + 60, host="hv-2", domains=domains()) == \
        {"plan": plan["id"], "apply": [], "done": [], "refused": []}
    # Capped by hand meanwhile; gone (or its read failed).
    by_hand = [domain("noisy", 0.5, 0.5, vcpus=1, cap=0.5, record={"time": "2023-11-14T22:14:00Z", "plan": None})]
    assert plan_review(plan, NOW + 60, host="hv-1", domains=by_hand)["refused"][0]["refused"] == \
        "hv-1/noisy changed since plan: cap_cpus was unlimited, is 0.5 CPU now"
    failed = [{"name": "noisy", "failed": True, "msg": "cannot read"}]
    assert plan_review(plan, NOW + 60, host="hv-1", domains=failed)["refused"][0]["refused"] == \
        "hv-1/noisy could not be read: cannot read"
    assert "not found" in plan_review(plan, NOW + 60, host="hv-1", domains=[])["refused"][0]["refused"]
    # `only` narrows the actions.
    assert plan_review(plan, NOW + 60, ["worker-1"], host="hv-1", domains=domains())["apply"] == []


def test_plan_review_of_the_nodes_takes_node_info_as_result_or_list():
    plan = a_plan()
    review = plan_review(plan, NOW + 60, nodes=node_info())
    assert [a["object"] for a in review["apply"]] == ["node/worker-1"]
    assert plan_review(plan, NOW + 60, nodes=node_info()["nodes"]) == review
    tainted = node_info()
    tainted["nodes"][0]["taints"] = [{"key": "maintenance", "value": None, "effect": "NoSchedule"}]
    assert plan_review(plan, NOW + 60, nodes=tainted)["refused"][0]["refused"] == \
        "node/worker-1 changed since plan: taints was [], is ['maintenance:NoSchedule'] now"
    assert "not found" in plan_review(plan, NOW + 60, nodes=[])["refused"][0]["refused"]
    assert "expired" in plan_review(plan, NOW + 7200, nodes=node_info())["refused"][0]["refused"]


def test_plan_review_bad_input_fails_naming_the_filter():
    plan = a_plan()
    for args, kwargs, named in [((plan, NOW), {}, "host=None"),
                                (({"actions": []}, NOW), {"host": "hv-1"}, "plan="),
                                ((plan, NOW, ["web-9"]), {"host": "hv-1"}, "only='web-9'"),
                                ((plan, NOW), {"nodes": [{"taints": []}]}, "")]:
        with pytest.raises(AnsibleFilterError) as error:
            plan_review(*args, **kwargs)
        assert str(error.value).startswith("plan_review: ") and named in str(error.value)


# ---------------------------------------------------------------- plan_outcome

def test_plan_outcome_takes_the_registered_loop_result_or_its_list():
    plan = a_plan()
    review = plan_review(plan, NOW + 60, host="hv-1", domains=domains())
    throttle = review["apply"][0]
    registered = {"changed": True, "msg": "All items completed", "results": [
        {"changed": True, "item": throttle, "domains": [{"name": "noisy", "changed": True}]}]}
    out = plan_outcome(review, registered)
    assert out["applied"] == ["hv-1/noisy"] and out["failed"] == []
    assert out["lines"] == ["applied: hv-1/noisy: throttle to 0.25 CPU, was unlimited (contain)"]
    assert plan_outcome(review, registered["results"]) == out
    assert plan_outcome(review, registered, True)["lines"][0].startswith("would apply: hv-1/noisy: ")
    failed = [{"changed": False, "item": throttle, "failed": True, "msg": "libvirtd away"}]
    assert plan_outcome(review, failed)["lines"] == [
        "failed: hv-1/noisy: throttle to 0.25 CPU, was unlimited: libvirtd away"]
    # Nothing to apply: the loop was skipped.
    empty = {"plan": plan["id"], "apply": [], "done": [], "refused": []}
    assert plan_outcome(empty, {"results": [], "skipped": True, "changed": False})["lines"] == []
    assert plan_outcome(empty)["lines"] == []


def test_plan_outcome_bad_input_fails_naming_the_filter():
    with pytest.raises(AnsibleFilterError) as error:
        plan_outcome({"plan": "p", "apply": [], "done": [], "refused": []}, [{"changed": True}])
    assert str(error.value).startswith("plan_outcome: ")
    with pytest.raises(AnsibleFilterError) as error:
        plan_outcome({"apply": []}, [])
    assert str(error.value).startswith("plan_outcome: ")


def test_plan_unreached_names_the_actions_of_the_hosts_that_kept_no_outcome():
    plan = a_plan()
    (line,) = plan_unreached(plan, ["hv-1"])["lines"]
    assert line.startswith("not applied: hv-1/noisy: throttle to ") and line.endswith(
        ": host hv-1 was not reached (unreachable, or its play failed)")
    # As the role passes it: every host targeted, with the outcome it kept.
    assert plan_unreached(plan, {"hv-1": None, "hv-2": None})["failed"] == ["hv-1/noisy"]
    assert plan_unreached(plan, {"hv-1": {"plan": plan["id"], "lines": []}, "hv-2": None})["failed"] == []
    # `only` narrows the actions; a node's action is never a host's.
    assert plan_unreached(plan, ["hv-1"], ["worker-1"])["failed"] == []
