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

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.control import observe
from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans
from ansible_collections.overcommit.control.plugins.module_utils.domain import policy
from ansible_collections.overcommit.control.plugins.module_utils.domain.actions import KUBEVIRT, LIBVIRT

# State a round builds up from measurements alone, kept for the next round
# even for an object the round proposed to change.
MEASURED_KEYS = ("hist", "credits", "credits_at", "calm_since")


def _carried(before, after, acted):
    """The state the next round starts from."""
    if after is None:
        after = {}
    if not acted:
        return after
    # What the action would have changed (a restore clears the calm it was
    # decided on) stays as before: the next round must see the same reason.
    state = dict(before)
    for key in MEASURED_KEYS:
        if key in after:
            state[key] = after[key]
    return state


def replay(observed, times, params=None):
    """policy.decide over every round of `observed` (observe.rounds: every
    VM's record, whichever platform, round by round). times: the unix time
    of each round (the last one is the plan's). Returns the last round's
    plan, the rounds' actions (for the page), and what the plan saw of each
    object."""
    params = policy.parameters(params)
    vm_states, node_states, history, last = {}, {}, [], None
    # What each object's state was when the run began, and is after its
    # last round: the difference is what to store on the object.
    vm_before, node_before, vm_after, node_after = {}, {}, {}, {}
    if not observed["rounds"]:
        last = {"actions": [], "deferred": [], "held": [], "notes": [], "state": {"vms": {}, "nodes": {}}}
    for position, hosts, vms in observed["rounds"]:
        if position >= len(times):
            raise ValueRangeError("times", times, "one unix time per round (at least %d)" % (position + 1))
        for vm in vms:
            key = policy.vm_key(vm)
            vm_before.setdefault(key, vm["policy"] or {})
            if key in vm_states:
                vm["policy"] = vm_states[key]
        for host in hosts:
            node = host.get("node")
            if node:
                node_before.setdefault(node["name"], node["policy"] or {})
                if node["name"] in node_states:
                    node["policy"] = node_states[node["name"]]
        last = policy.decide(hosts, vms, times[position], params, fleet=observed["fleet"])
        acted = set(a["object"] for a in last["actions"])
        for vm in vms:
            key = policy.vm_key(vm)
            vm_after[key] = vm["policy"] or {}
            if key in last["state"]["vms"]:
                vm_states[key] = _carried(vm["policy"], last["state"]["vms"][key], key in acted)
                vm_after[key] = (last["state"]["vms"][key] if key in acted else vm_states[key]) or {}
        for host in hosts:
            node = host.get("node")
            if not node:
                continue
            name = node["name"]
            node_after[name] = node["policy"] or {}
            if name in last["state"]["nodes"]:
                acted_node = "node/%s" % name in acted
                node_states[name] = _carried(node["policy"], last["state"]["nodes"][name], acted_node)
                node_after[name] = (last["state"]["nodes"][name] if acted_node else node_states[name]) or {}
        history.append({"round": position + 1, "time": times[position],
                        "actions": [dict((k, a.get(k)) for k in ("action", "object", "cpus", "rule")) for a in last["actions"]]})
    # The plan's state: every object whose state the run changed, as the
    # last round leaves it (an object acted on as if its action is applied).
    last = dict(last, state={
        "vms": dict((k, v or None) for k, v in vm_after.items() if v != vm_before.get(k, {})),
        "nodes": dict((k, v or None) for k, v in node_after.items() if v != node_before.get(k, {}))})
    # What the last round could not decide about is said beside the policy's own notes.
    last = dict(last, notes=list(observed.get("left_out") or []) + list(last.get("notes") or []))
    return {"last": last, "history": history, "seen": observed["seen"], "skipped": observed["skipped"]}


def moves_as_actions(policy_plan, platforms, nodes):
    """The policy's plan with each proposed move that has a target host made
    a `migrate` action (platforms: {object: platform}; nodes: {host: the
    Kubernetes node on it}, a KubeVirt VM moving to that node, and staying
    a proposal when its target host has none); the other proposals stay
    proposals."""
    actions, kept = list(policy_plan["actions"]), []
    for proposal in policy_plan.get("proposals") or []:
        platform, to = platforms.get(proposal["object"]), proposal.get("to")
        action = {"action": "migrate", "object": proposal["object"], "vm": proposal["vm"], "host": proposal["host"],
                  "to": to, "rule": "placement", "reason": proposal["reason"],
                  "wanted_cpus": proposal.get("wanted_cpus")}
        if to and platform == LIBVIRT:
            actions.append(action)
        elif to and platform == KUBEVIRT and nodes.get(to):
            actions.append(dict(action, platform=KUBEVIRT, to_node=nodes[to]))
        else:
            kept.append(proposal)
    return dict(policy_plan, actions=actions, proposals=kept)


def recommend(measured, nodes, times, now, params=None, ttl_seconds=plans.DEFAULT_TTL_SECONDS, kubevirt=None,
              max_unmeasured_share=0.0, migrate=False):
    """The plan artefact of a recommend run (domain.plan.make's shape) with
    the rounds it was decided over, the hosts it could not measure and
    whether they fail the run (`unmeasured`). migrate: whether the plan
    carries the policy's proposed moves as `migrate` actions (by default
    they stay proposals)."""
    # The share is checked before the replay: a bad one fails before any work.
    verdict = plans.unmeasured([], 0, max_unmeasured_share)
    if not isinstance(migrate, bool):
        raise ValueRangeError("migrate", migrate, "true (the plan carries proposed moves as migrate actions) or false")
    observed = observe.rounds(measured, nodes, kubevirt)
    result = replay(observed, times, params)
    last = result["last"]
    if migrate:
        platforms = dict((policy.vm_key(vm), vm["platform"]) for rounds in observed["rounds"] for vm in rounds[2])
        nodes_of_hosts = dict((host["name"], (host.get("node") or {}).get("name")) for rounds in observed["rounds"]
                              for host in rounds[1])
        last = moves_as_actions(last, platforms, nodes_of_hosts)
    made = plans.make(last, result["seen"], now, ttl_seconds)
    made.update(rounds=result["history"], skipped=result["skipped"],
                unmeasured=plans.unmeasured(result["skipped"], len(measured), verdict["allowed_share"]),
                parameters=policy.parameters(params),
                # Every node as it was seen, acted on or not: the closed loop
                # writes a node's state back with the gate it has.
                nodes=dict((key.split("/", 1)[1], seen) for key, seen in result["seen"].items()
                           if key.startswith("node/")))
    made["summary"] = plans.summary(made)
    return made
