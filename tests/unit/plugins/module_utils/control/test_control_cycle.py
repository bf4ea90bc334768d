# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a closed-loop cycle records on the objects after acting, and its
summary (plugins/module_utils/control/cycle.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.control import cycle


def a_plan():
    return {
        "id": "plan-20261201T000000Z-0123456789", "created": "2026-12-01T00:00:00Z",
        "actions": [
            {"action": "throttle", "object": "hv-1/noisy", "vm": "noisy", "host": "hv-1", "cpus": 0.25,
             "change": "throttle to 0.25 CPU, was unlimited", "rule": "contain", "reason": "r"},
            {"action": "gate", "object": "node/worker-1", "node": "worker-1", "host": "hv-1",
             "change": "gate node", "rule": "gate_pressure", "reason": "p"}],
        "held": [{"object": "hv-2/big", "held": "kill switch: host hv-2 is paused"}],
        "deferred": [], "notes": [], "skipped": [], "summary": ["hv-1/noisy: throttle ...", "node/worker-1: gate node"],
        "state": {"vms": {"hv-1/noisy": {"cap": 0.25, "rule": "contain"}, "hv-1/victim": {"hist": "11"},
                          "hv-1/old": None, "hv-2/other": {"hist": "1"}},
                  "nodes": {"worker-1": {"gated_at": 1, "rule": "gate_pressure"}, "worker-2": {"calm_since": 5},
                            "worker-9": {"calm_since": 5}}},
        "nodes": {"worker-1": {"gated": False}, "worker-2": {"gated": True}},
    }


def outcome(**lists):
    return dict({"plan": "p", "applied": [], "done": [], "refused": [], "failed": [], "conflict": [], "lines": []},
                **lists)


def test_a_hosts_vm_states_are_those_the_cycle_changed_on_that_host():
    states = cycle.vm_states(a_plan(), "hv-1", [outcome(applied=["hv-1/noisy"])])
    assert states == {"noisy": {"cap": 0.25, "rule": "contain"}, "victim": {"hist": "11"}, "old": None}
    assert cycle.vm_states(a_plan(), "hv-2", []) == {"other": {"hist": "1"}}
    assert cycle.vm_states(a_plan(), "hv-3", []) == {}


@pytest.mark.parametrize("kind", ["refused", "failed", "conflict"])
def test_a_vm_whose_action_was_not_applied_keeps_its_stored_state(kind):
    states = cycle.vm_states(a_plan(), "hv-1", [outcome(**{kind: ["hv-1/noisy"]})])
    assert "noisy" not in states and "victim" in states


def test_node_records_keep_the_gate_each_node_has_after_the_cycle():
    applied = cycle.node_records(a_plan(), [outcome(applied=["node/worker-1"])])
    assert applied == [{"name": "worker-1", "state": "gated", "policy_state": {"gated_at": 1, "rule": "gate_pressure"}},
                       {"name": "worker-2", "state": "gated", "policy_state": {"calm_since": 5}}]
    # worker-9 was not read this cycle: nothing is written to it.
    refused = cycle.node_records(a_plan(), [outcome(refused=["node/worker-1"])])
    assert [r["name"] for r in refused] == ["worker-2"]
    # Not applied and not refused (dry run): the gate stays as seen.
    assert cycle.node_records(a_plan(), [])[0]["state"] == "open"


def test_a_cleared_node_state_is_written_as_an_empty_mapping():
    plan = a_plan()
    plan["state"]["nodes"] = {"worker-2": None}
    assert cycle.node_records(plan, []) == [{"name": "worker-2", "state": "gated", "policy_state": {}}]


def test_the_summary_says_what_became_of_each_action_and_what_was_held():
    summary = cycle.summary(a_plan(), [outcome(applied=["hv-1/noisy"], lines=["applied: hv-1/noisy: ..."]),
                                       outcome(conflict=["node/worker-1"], lines=["left alone: node/worker-1: ..."])],
                            "act")
    assert summary["outcome"]["applied"] == ["hv-1/noisy"] and summary["outcome"]["conflict"] == ["node/worker-1"]
    assert summary["lines"] == ["applied: hv-1/noisy: ...", "left alone: node/worker-1: ...",
                                "held by the kill switch: hv-2/big: kill switch: host hv-2 is paused"]
    assert summary["cycle"] == a_plan()["id"] and summary["mode"] == "act"


def test_a_dry_run_summary_says_nothing_was_applied():
    summary = cycle.summary(a_plan(), [], "dry_run")
    assert summary["lines"][:2] == ["dry run, nothing applied: hv-1/noisy: throttle ...",
                                    "dry run, nothing applied: node/worker-1: gate node"]
    assert all(not objects for objects in summary["outcome"].values())
    plan = dict(a_plan(), actions=[], summary=[], held=[])
    assert cycle.summary(plan, [], "act")["lines"] == ["nothing to do"]


def test_outcomes_that_are_not_plan_outcomes_are_refused_naming_them():
    with pytest.raises(ValueRangeError) as error:
        cycle.vm_states(a_plan(), "hv-1", ["applied"])
    assert error.value.field == "outcomes"
