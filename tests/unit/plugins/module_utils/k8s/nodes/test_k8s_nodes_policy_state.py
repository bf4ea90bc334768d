# -*- coding: utf-8 -*-
"""node_policy_state's request, checked before any API call, and the patches
it plans (shared with kubevirt_policy_state in k8s/metadata.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.k8s import metadata
from ansible_collections.overcommit.control.plugins.module_utils.k8s.nodes import policy_state

BASE = {"states": None, "names": [], "paused": None, "missing": "fail", "prefix": "overcommit.control/"}
KEYS = {"policy": "overcommit.control/policy", "paused": "overcommit.control/paused"}


@pytest.mark.parametrize("params, field", [
    ({"states": "text"}, "states"),
    ({}, "states"),
    ({"paused": True}, "names"),
    ({"paused": True, "names": ["Worker-1"]}, "names[0]"),
    ({"paused": True, "names": [" worker-1"]}, "names"),
    ({"states": {"worker_1": {}}}, "states.worker_1"),
    ({"states": {"worker-1": "text"}}, "states.worker-1"),
    ({"states": {"worker-1": {}}, "prefix": "no-slash"}, "prefix"),
])
def test_bad_options_are_refused_naming_the_field(params, field):
    with pytest.raises(ValueRangeError) as refused:
        policy_state.check_request(dict(BASE, **params))
    assert refused.value.field == field


def test_a_pause_and_a_state_for_the_same_node_are_one_wish():
    request = policy_state.check_request(dict(BASE, names=["worker-1.zone-a", "worker-2"], paused=True,
                                              states={"worker-1.zone-a": None}))
    assert request["wanted"] == {"worker-1.zone-a": {"state": None, "paused": True}, "worker-2": {"paused": True}}
    assert request["keys"] == KEYS


def test_only_what_differs_is_patched_and_the_gate_is_never_touched():
    node = {"metadata": {"labels": {"overcommit.control/gated": "true"},
                         "annotations": {"overcommit.control/policy": '{"gated_at":1}',
                                         "overcommit.control/gate": '{"v":1}'}}}
    assert metadata.paused_patch(node, True, KEYS) == {"metadata": {"labels": {"overcommit.control/paused": "true"}}}
    assert metadata.paused_patch(node, False, KEYS) is None
    assert metadata.policy_patch(node, {"state": None}, KEYS) == {
        "metadata": {"annotations": {"overcommit.control/policy": None}}}
    assert metadata.policy_patch(node, {"state": {"gated_at": 1}}, KEYS) is None
    assert metadata.policy_patch(node, {"paused": True}, KEYS) is None


def test_the_report_says_what_was_done_per_node():
    assert metadata.policy_state_line({"name": "worker-1", "changed": True, "paused": True}) == "worker-1: paused"
    assert metadata.policy_state_line({"name": "worker-1", "changed": False, "paused": False}) == \
        "worker-1: unchanged (not paused)"
    assert metadata.policy_state_line({"name": "worker-9", "failed": True, "msg": "node worker-9 not found"}) == \
        "worker-9: failed: node worker-9 not found"
    assert metadata.policy_state_line({"name": "worker-1", "changed": True, "policy": None}, check_mode=True) == \
        "worker-1: would be: state removed"
