# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage 2: the policy run over the rounds a recommend run measured, and
the plan a person approves. Pure: no I/O, no clock.

The rounds are the policy's cycles: each one's trigger history, credits
and calm carry into the next, as they would between cycles of the loop;
what a round proposes is not applied, so an object an earlier round would
have changed keeps its state as it was. The last round's actions are the
plan."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.control import observe
from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans
from ansible_collections.overcommit.control.plugins.module_utils.domain import policy
from ansible_collections.overcommit.control.plugins.module_utils.domain.cpu import ValueRangeError

# State a round builds up from measurements alone, kept for the next round
# even for an object the round proposed to change.
MEASURED_KEYS = ("hist", "credits", "credits_at", "calm_since")


def _carried(before, after, acted):
    """The state the next round starts from."""
    if after is None:
        after = {}
    if not acted:
        return after
    state = dict(before)
    for key in MEASURED_KEYS:
        if key in after:
            state[key] = after[key]
        else:
            state.pop(key, None)
    return state


def replay(measured, nodes, times, params=None):
    """policy.decide over every round. times: the unix time of each round
    (the last one is the plan's). Returns the last round's plan, the
    rounds' actions (for the page), and what the plan saw of each object."""
    params = policy.parameters(params)
    observed = observe.rounds(measured, nodes)
    vm_states, node_states, history, last = {}, {}, [], None
    if not observed["rounds"]:
        last = {"actions": [], "deferred": [], "held": [], "notes": [], "state": {"vms": {}, "nodes": {}}}
    for position, hosts, vms in observed["rounds"]:
        if position >= len(times):
            raise ValueRangeError("times", times, "one unix time per round (at least %d)" % (position + 1))
        for vm in vms:
            key = "%s/%s" % (vm["host"], vm["name"])
            if key in vm_states:
                vm["policy"] = vm_states[key]
        for host in hosts:
            if host.get("node") and host["node"]["name"] in node_states:
                host["node"]["policy"] = node_states[host["node"]["name"]]
        last = policy.decide(hosts, vms, times[position], params, fleet=observed["fleet"])
        acted = set(a["object"] for a in last["actions"])
        for vm in vms:
            key = "%s/%s" % (vm["host"], vm["name"])
            if key in last["state"]["vms"]:
                vm_states[key] = _carried(vm["policy"], last["state"]["vms"][key], key in acted)
        for host in hosts:
            node = host.get("node")
            if node and node["name"] in last["state"]["nodes"]:
                node_states[node["name"]] = _carried(node["policy"], last["state"]["nodes"][node["name"]],
                                                     "node/%s" % node["name"] in acted)
        history.append({"round": position + 1, "time": times[position],
                        "actions": [dict((k, a.get(k)) for k in ("action", "object", "cpus", "rule")) for a in last["actions"]]})
    return {"last": last, "history": history, "seen": observed["seen"], "skipped": observed["skipped"]}


def recommend(measured, nodes, times, now, params=None, ttl_seconds=plans.DEFAULT_TTL_SECONDS):
    """The plan artefact of a recommend run (domain.plan.make's shape) with
    the rounds it was decided over and the hosts it could not measure."""
    result = replay(measured, nodes, times, params)
    made = plans.make(result["last"], result["seen"], now, ttl_seconds)
    made.update(rounds=result["history"], skipped=result["skipped"],
                parameters=policy.parameters(params))
    made["summary"] = plans.summary(made)
    return made
