# -*- coding: utf-8 -*-
"""Recommended plans as artefacts: made from the policy's plan, refused
whole once expired, applied per object only while the object is as the
plan saw it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans
from ansible_collections.overcommit.control.plugins.module_utils.domain import policy
from ansible_collections.overcommit.control.plugins.module_utils.domain.cpu import ValueRangeError

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
    assert gate["action"] == "gate" and gate["change"] == "gate node" and gate["expected"] == SEEN["node/node-1"]
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
