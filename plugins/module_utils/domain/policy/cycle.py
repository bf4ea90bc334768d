# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The core of a cycle: each host's VMs carried into this cycle's state,
the rules run in order (rules.RULES) on each host, then the fleet-wide
bounds (the action budget, the share of nodes gated, the kill switch) and
the moves proposed. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import actions as action_table
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.judgement import (
    BASE_STEP, BASE_WEIGHT, IDLE_CPUS, follow_usual, shared_pool, unbraked_pressure, waits, weight_in_force)
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.parameters import NAME, parameters
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.rules import RULES
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.state import CAP_KEYS, LOOSEN, TIGHTEN
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.views import (
    HARD, LIBVIRT, checked_number, host_view, steal_ratio, vm_view, wanted, weight_fields)
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import BURSTABLE, DEDICATED


# The actions and their order of escalation inside a cycle, from the one table (domain/actions.py).
ACTIONS = action_table.NAMES
ACTION_ORDER = dict((name, entry["order"]) for name, entry in action_table.ACTIONS.items())

# What the rules see of one host: its view (with the pool's CPUs and the
# pressure net of the brakes' own), its VMs, their states this cycle, and
# the pool's idle CPU.
Scene = namedtuple("Scene", "host vms states idle")


def decide(hosts, vms, now, params=None, views=False, fleet=None):
    """The plan of one cycle. hosts and vms as host_view/vm_view accept,
    checked here, or (views=True, the simulator's fast path) their views
    already; now in seconds since the epoch; params as parameters() takes
    them. Returns {actions, deferred, held, notes, state: {vms: {key: state
    or None}, nodes: {name: state or None}}} where state lists only objects
    whose state changed (None: clear it). fleet: {nodes, gated}, the
    counts of the whole Kubernetes fleet the share of gated nodes is taken
    of, when it is more than the nodes of the hosts given."""
    params = parameters(params)
    host_views = hosts if views else [host_view(h, i) for i, h in enumerate(hosts)]
    by_host = dict((h["name"], []) for h in host_views)
    for index, vm in enumerate(vms):
        view = vm if views else vm_view(vm, index)
        if view["host"] not in by_host:
            raise ValueRangeError("vms[%d].host" % index, view["host"], "one of the hosts given")
        by_host[view["host"]].append(view)
    cycle = Cycle(params, now)
    for host in host_views:
        cycle.host(host, by_host[host["name"]])
    nodes_total = len([h for h in host_views if h["node"]])
    # Nodes closed to new VMs: a soft gate only steers them away.
    nodes_gated = len([h for h in host_views if h["node"] and h["node"]["gated"] and h["node"]["effect"] == HARD])
    if fleet:
        nodes_total = max(nodes_total, checked_number("fleet.nodes", fleet.get("nodes")) or 0)
        nodes_gated = max(nodes_gated, checked_number("fleet.gated", fleet.get("gated")) or 0)
    return cycle.plan(nodes_total, nodes_gated)


class Cycle(object):
    """One cycle's decisions across hosts, then the fleet-wide bounds."""

    def __init__(self, params, now):
        self.params = params
        self.now = now
        self.proposed = []
        self.held = []
        self.notes = []
        self.vm_states = {}
        self.node_states = {}
        # The VMs of the host at hand whose demoted CPU weight is in force.
        self.demoted = set()
        # (VM key, why) a VM of the host at hand would be moved for this cycle.
        self.movable = None
        # Placement: the pool's idle CPU of each host, and VMs to propose moving.
        self.idle_by_host = {}
        self.to_move = []
        # One action per VM a cycle: the first rule to claim it wins.
        self.claimed = {}
        # Culprits of the host at hand judged by their usual demand: VM key -> usual CPUs.
        self.surging = {}

    def host(self, host, vms):
        params = self.params
        states = {}
        min_steal = params["min_steal_cpus"]
        used_pool, used_outside, stateful, braked = 0.0, 0.0, False, set()
        # Calm going into this cycle: the quiet baselines follow the VMs' waits.
        calm_before = not any("1" in vm["state"].get("hist", "") or vm["cap"] is not None
                              or vm["state"].get("weight") is not None for vm in vms)
        for vm in vms:
            if vm["class"] != DEDICATED or vm.get("in_shared_pool"):
                used_pool += vm["used"]
            else:
                used_outside += vm["used"]
            steal = vm["steal"]
            if (vm["cap"] is not None or weight_in_force(vm, vm["state"])) and (steal or 0.0) >= min_steal:
                # A capped or demoted VM's own wait is the brake's doing (a
                # cap that binds shows its throttled time as steal; one that
                # does not bind adds no wait to the host's).
                braked.add(vm["key"])
            # The common case of a fleet, kept cheap: nothing recorded,
            # not capped, not waiting, no usual demand to follow.
            if not vm["state"] and vm["cap"] is None and (steal is None or steal < min_steal) \
                    and vm["pressure"] is None and vm["class"] != BURSTABLE \
                    and (not params["usual_hours"] or vm["class"] == DEDICATED or wanted(vm) < IDLE_CPUS):
                states[vm["key"]] = {}
                continue
            state = states[vm["key"]] = self.carry_state(vm, calm_before, host.get("paused"))
            stateful = stateful or bool(state) or vm["class"] == BURSTABLE
        self.demoted = set(vm["key"] for vm in vms if weight_in_force(vm, states[vm["key"]]))
        if self.demoted:
            # Entitlements are what a VM was sold: its demoted weight is the
            # brake, not its due.
            vms = [dict(vm, weight=states[vm["key"]].get("weight_was", vm["weight"])) if vm["key"] in self.demoted
                   else vm for vm in vms]
        if host.get("pool_cpus_used") is not None:
            # The pool's own CPUs, read per CPU: what the VMs' sum misses
            # there (the host's own threads on them), and nothing busy elsewhere.
            used_pool = max(used_pool, host["pool_cpus_used"])
        elif host["cpus_used"] is not None:
            # The host's own measure counts what the VMs' sum misses (the
            # host itself, other tenants); the dedicated cores are not the pool's.
            used_pool = max(used_pool, host["cpus_used"] - used_outside)
        pool = shared_pool(host, vms)
        idle = max(0.0, pool - used_pool)
        self.idle_by_host[host["name"]] = (idle, pool)
        scene = Scene(host=dict(unbraked_pressure(host, vms, braked, self.now), pool=pool), vms=vms, states=states,
                      idle=idle)
        self.movable = None
        self.surging = {}
        for rule in RULES:
            # A host whose VMs carry no state and want nothing of note needs
            # only the rules that look at the host itself (the gate).
            if stateful or not rule.NEEDS_VM_STATE:
                rule.apply(self, scene)
        if not stateful:
            return
        for vm in vms:
            if states[vm["key"]] != vm["state"]:
                self.vm_states[vm["key"]] = states[vm["key"]] or None

    def carry_state(self, vm, calm_before, host_paused=False):
        """The VM's state with this cycle's trigger bit, its quiet baseline
        followed where the host was calm (no VM waited in the trigger
        history, no brake in force), and without a cap record someone else's
        change made stale."""
        params = self.params
        state = dict(vm["state"])
        if state.get("cap") is not None and (vm["cap"] is None or abs(vm["cap"] - state["cap"]) > 0.005):
            self.notes.append({"object": vm["key"], "rule": "foreign_change",
                               "note": "cap is %s, the policy set %g: someone else changed it; the policy leaves it alone"
                               % ("none" if vm["cap"] is None else "%g" % vm["cap"], state["cap"])})
            for key in CAP_KEYS:
                state.pop(key, None)
            state["foreign"] = True
        elif vm["cap"] is None:
            state.pop("foreign", None)
        if state.get("weight") is not None and not weight_in_force(vm, state):
            self.notes.append({"object": vm["key"], "rule": "foreign_change",
                               "note": "CPU weight is %s, the policy set %g: someone else changed it; the policy "
                               "leaves the weight alone" % ("unknown" if vm["weight"] is None else "%g" % vm["weight"],
                                                            state["weight"])})
            for key in ("weight", "weight_was", "weight_waits"):
                state.pop(key, None)
        # A braked VM (capped, or its weight demoted) waits by the brake's
        # design: that is no victim's wait.
        braked = vm["cap"] is not None or state.get("weight") is not None
        base = state.get("base", 0.0)
        bit = "1" if not braked and waits(vm, params, params["victim_steal_ratio"], base) else "0"
        if calm_before and bit == "0" and not braked and vm["steal"] is not None:
            base = round((base + BASE_WEIGHT * (steal_ratio(vm) - base)) / BASE_STEP) * BASE_STEP
            if base >= BASE_STEP:
                state["base"] = round(base, 2)
            else:
                state.pop("base", None)
        # The kill switch leaves the object as it is: no usual demand is
        # learnt on a paused VM or host either.
        if params["usual_hours"] and vm["class"] != DEDICATED and vm.get("usage_known", True) \
                and not vm["paused"] and not host_paused and ("usual" in state or wanted(vm) >= IDLE_CPUS):
            follow_usual(state, wanted(vm), self.now, params["usual_hours"], params["surge_ratio"])
        history = (state.get("hist", "") + bit)[-params["trigger_m"]:]
        if "1" in history:
            state["hist"] = history
        else:
            state.pop("hist", None)
        restored_at = state.get("restored_at")
        if restored_at is not None and self.now - restored_at > params["max_cooldown_seconds"]:
            state.pop("restored_at", None)
            state.pop("cooldown", None)
        return state

    def cap_after(self, vm):
        """The VM's cap once this cycle's actions so far are applied."""
        return self.claimed[vm["key"]] if vm["key"] in self.claimed else vm["cap"]

    def ours(self, vm, state):
        """Whether the cap in force is the one the policy set."""
        return state.get("cap") is not None and vm["cap"] is not None

    def propose(self, kind, host, vm, cpus, rule, reason, signals, state=None, priority=0.0):
        action = {"action": kind, "host": host["name"], "rule": rule, "reason": reason, "signals": signals}
        if vm is not None:
            action.update({"vm": vm["name"], "object": vm["key"], "class": vm["class"], "vcpus": vm["vcpus"],
                           "previous_cpus": vm["cap"]})
            if vm.get("platform", LIBVIRT) != LIBVIRT:
                action["platform"] = vm["platform"]
            if cpus is not None:
                action["cpus"] = round(cpus, 3)
            if action_table.sets_cap(kind) and state and state.get("weight") is not None:
                # A throttle sets the whole brake: the demoted weight stays with the cap.
                action.update(weight_fields(vm, state["weight"]))
            self.claimed[vm["key"]] = cpus
        else:
            action.update({"node": host["node"]["name"], "object": "node/%s" % host["node"]["name"]})
        paused = host["paused"] or (vm is not None and vm["paused"])
        if paused:
            self.held.append(dict(action, held="kill switch: %s is paused" % ("host %s" % host["name"]
                                                                              if host["paused"] else vm["key"])))
            return None
        self.proposed.append((ACTION_ORDER[kind], -priority, len(self.proposed), action, state))
        return action

    def above(self, vm, want, ent):
        """Why a culprit is one, in words: its usual demand or its entitlement."""
        if vm["key"] in self.surging:
            usual = self.surging[vm["key"]][0]
            return "%.1fx its usual demand of %.2f" % (want / usual, usual) if usual else \
                "where it usually wants nothing"
        return "%.1fx its entitlement of %.2f" % (want / ent, ent) if ent else "with no entitlement under contention"

    def flapping(self, state):
        """Whether the cap was tightened again after being let go, recently
        enough that its cooldown is still doubled."""
        return state.get("cooldown", self.params["cooldown_seconds"]) > self.params["cooldown_seconds"]

    def capped(self, state, cpus, rule):
        return self.tightened(dict(state, cap=round(cpus, 3)), rule)

    def weighted(self, state, weight, was):
        new = dict(state, weight=weight, weight_was=was)
        new.pop("weight_waits", None)
        return self.tightened(new, "contain")

    def tightened(self, state, rule):
        params, now = self.params, self.now
        new = dict(state, rule=rule, changed_at=now)
        new.setdefault("capped_at", now)
        new.pop("calm_since", None)
        new.pop("released", None)
        new.pop("foreign", None)
        if state.get("direction") == LOOSEN or state.get("restored_at") is not None:
            # Tightening again soon after letting go: a reversal. Wait longer
            # before the next relax, so a cap does not flap.
            new["cooldown"] = min(params["max_cooldown_seconds"],
                                  2 * state.get("cooldown", params["cooldown_seconds"]))
            new["last_reversal"] = now
        new.pop("restored_at", None)
        new["direction"] = TIGHTEN
        return new

    def loosened(self, state, cpus):
        return dict(state, cap=round(cpus, 3), changed_at=self.now, direction=LOOSEN)

    def restored(self, state):
        new = dict((k, v) for k, v in state.items() if k not in CAP_KEYS)
        new["restored_at"] = self.now
        return new

    def plan(self, nodes_total, nodes_gated):
        params = self.params
        actions, deferred = [], []
        gate_slots = int(params["max_gated_share"] * nodes_total + 1e-9) - nodes_gated
        budget = params["max_actions_per_cycle"]
        for _order, _priority, _seq, action, state in sorted(self.proposed, key=lambda item: item[:3]):
            if action["action"] == "gate" and action.get("effect") == HARD:
                # Only a hard gate closes a node; a soft one only steers new VMs away.
                if gate_slots <= 0:
                    deferred.append(dict(action, deferred="max_gated_share=%g allows %d of %d nodes gated at once "
                                         "and %d are" % (params["max_gated_share"],
                                                         int(params["max_gated_share"] * nodes_total + 1e-9),
                                                         nodes_total, nodes_gated)))
                    self.node_states.pop(action["node"], None)
                    continue
                gate_slots -= 1
            if budget <= 0:
                deferred.append(dict(action, deferred="max_actions_per_cycle=%d reached"
                                     % params["max_actions_per_cycle"]))
                if "vm" not in action:
                    self.node_states.pop(action["node"], None)
                continue
            budget -= 1
            actions.append(action)
            if "vm" in action:
                self.vm_states[action["object"]] = state or None
            else:
                self.node_states[action["node"]] = state or None
        return {"policy": NAME, "time": self.now, "actions": actions, "deferred": deferred, "held": self.held,
                "notes": self.notes, "proposals": self.proposals(),
                "state": {"vms": self.vm_states, "nodes": self.node_states}}

    def proposals(self):
        """Moves to propose: each VM to the other host of the cycle with the
        most CPU left of its pool once the VM is there and the target keeps
        its own headroom; else no host, said so. A person (or a migration
        playbook) decides."""
        idle = dict(self.idle_by_host)
        headroom = self.params["headroom_share"]
        out = []
        for vm, host, why in sorted(self.to_move, key=lambda item: -wanted(item[0])):
            want = wanted(vm)
            # What each other host has left, its own headroom kept, once the VM runs there.
            left = sorted((room - headroom * pool - want, name) for name, (room, pool) in idle.items()
                          if name != host["name"])
            proposal = {"action": "move", "object": vm["key"], "vm": vm["name"], "host": host["name"],
                        "wanted_cpus": round(want, 3), "why": why, "to": None}
            if left and left[-1][0] >= 0.0:
                name = left[-1][1]
                room, pool = idle[name]
                idle[name] = (room - want, pool)
                proposal.update(to=name, reason="%s; %s has %.2f CPUs idle for the %.2f it wants" % (
                    why, name, room, want))
            elif left:
                room, pool = idle[left[-1][1]]
                proposal["reason"] = "%s; no other host of this cycle has %.2f CPUs idle beside its headroom " \
                    "(the most: %.2f on %s, headroom %.2f)" % (why, want, room, left[-1][1], headroom * pool)
            else:
                proposal["reason"] = "%s; no other host in this cycle to move it to" % why
            out.append(proposal)
        return out
