# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""relax, release and restore: raise a cap a step after a calm period and a cooldown, let a VM
that is no longer a culprit go at once, restore exactly when a step would reach its vCPUs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.judgement import (
    entitlements, is_culprit, trusted_usual, waits)
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.rules import weight
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.state import TIGHTEN
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.views import wanted


# This rule's parameters: name: (default, low, high, what it is).
PARAMETERS = {
    "relax_steal_ratio": (0.05, 0.0, 1.0, "steal ratio every VM must be under for the host to count as calm"),
    "relax_calm_seconds": (60, 0, None, "seconds the host must be calm before a cap is raised"),
    "relax_step_share": (0.10, 0.01, 1.0, "most a cap is raised in one cycle, as a share of the VM's vCPUs"),
    "busy_share": (0.90, 0.0, 1.0, "share of its cap a VM must use to count as pressing it"),
    "pressure_relax": (10.0, 0.0, 100.0, "host PSI cpu some avg10 (%) the host must be under to count as calm"),
}
INTEGERS = ()
# Whether it needs the VMs' state (else it runs on every host).
NEEDS_VM_STATE = True


def relax(cycle, host, vms, states, idle):
    params, now = cycle.params, cycle.now
    calm = not any(vm["cap"] is None and vm["key"] not in cycle.demoted
                   and waits(vm, params, params["relax_steal_ratio"], states[vm["key"]].get("base", 0.0))
                   for vm in vms) and \
        (host["avg10"] is None or host["avg10"] < params["pressure_relax"])
    room, grown = idle - params["headroom_share"] * host["pool"], 0.0
    ents = None
    for vm in sorted(vms, key=lambda v: v["key"]):
        state = states[vm["key"]]
        if vm["cap"] is None and vm["key"] in cycle.demoted:
            ents = ents or entitlements(host, vms, states)
            weight.release(cycle, host, vms, vm, state, ents)
            continue
        if not cycle.ours(vm, state) or state.get("rule") != "contain":
            continue
        want = wanted(vm)
        ents = ents or entitlements(host, vms, states)
        culprit = is_culprit(vm, want, ents[vm["key"]], params, trusted_usual(state, now, params),
                             trusted_usual(state, now, params, settled=True))
        # A dip under the culprit thresholds is no release while the VM
        # still presses its cap and wants more than its entitlement.
        lingering = want >= params["busy_share"] * vm["cap"] and \
            want - ents[vm["key"]] >= params["culprit_min_excess_cpus"]
        # Whether it was a culprit in each of the last trigger_m cycles
        # ("1": it was not), the same N of M a victim needs.
        holding = culprit or lingering
        released = (state.get("released", "") + ("0" if holding else "1"))[-params["trigger_m"]:]
        state["released"] = released
        # The pool's idle CPU in each of the last trigger_m cycles: a
        # culprit still pressing its cap grows only into CPU that stayed
        # idle, not into a victim's passing lull.
        idle_seen = (state.get("idle_seen", []) + [round(idle, 3)])[-params["trigger_m"]:]
        state["idle_seen"] = idle_seen
        if vm["key"] in cycle.claimed:
            continue
        # On a calm host every cap may be relaxed; on a contended one only
        # those of VMs that are no culprits now.
        innocent = not calm and not holding
        if not calm and holding:
            # A contended host keeps its culprits capped; a VM that no
            # longer is one gets its CPU back, step by step, all the same.
            state.pop("calm_since", None)
            continue
        cap, step = vm["cap"], params["relax_step_share"] * vm["vcpus"]
        state.setdefault("calm_since", now)
        calm_for = now - state["calm_since"]
        signals = {"cpus_used": vm["used"], "wanted_cpus": round(want, 3), "cap_cpus": cap,
                   "idle_cpus": round(idle, 3), "calm_seconds": calm_for}
        if released.count("1") >= params["trigger_n"] and not cycle.flapping(state):
            # No culprit in N of the last M cycles: let go now, without the
            # calm period and cooldown meant for flapping caps. A cap it no
            # longer presses holds nothing back and goes whole.
            if want < params["busy_share"] * cap:
                cycle.propose("restore", host, vm, None, "release",
                              "no longer a culprit in %d of the last %d cycles and it uses %.2f of its %g CPUs: "
                              "restored exactly" % (released.count("1"), len(released), vm["used"], cap),
                              signals, state=cycle.restored(state))
            else:
                _step_up(cycle, host, vm, state, signals, cap + step, "release",
                         "no longer a culprit in %d of the last %d cycles" % (released.count("1"),
                                                                              len(released)),
                         "it wants %.2f CPUs" % want)
            continue
        since_change = now - state.get("changed_at", now)
        cooldown = state.get("cooldown", params["cooldown_seconds"])
        if calm_for < params["relax_calm_seconds"] or (state.get("direction") == TIGHTEN and since_change < cooldown):
            continue
        if innocent:
            new_cap, why = cap + step, "it no longer takes far above its entitlement (wants %.2f CPUs)" % want
            context = "host still contended for %d s" % calm_for
        elif want < params["busy_share"] * cap:
            new_cap, why = cap + step, "it uses %.2f of its %g CPUs" % (vm["used"], cap)
            context = "host calm for %d s" % calm_for
        else:
            # A whole step or nothing, and only while the pool keeps the
            # idle CPU at which the work-conservation guard would not let
            # it be capped (idle_guard_share) in each of the last trigger_m
            # cycles: grown into less, it takes the others' CPU when their
            # lull ends, or makes them queue, and is cut again: a flap.
            guard = params["idle_guard_share"] * host["pool"]
            if len(idle_seen) < params["trigger_m"] or min(room, min(idle_seen) - guard - grown) < step:
                continue
            room -= step
            grown += step
            new_cap = cap + step
            why = "it presses its cap and at least %.2f CPUs were idle in each of the last %d cycles" % (
                min(idle_seen), len(idle_seen))
            context = "host calm for %d s" % calm_for
        _step_up(cycle, host, vm, state, signals, new_cap, "relax", context, why)


def _step_up(cycle, host, vm, state, signals, new_cap, rule, context, why):
    """Raise a cap of ours to `new_cap`: the exact restore once that
    reaches the VM's vCPUs."""
    if new_cap >= vm["vcpus"] - 1e-9:
        cycle.propose("restore", host, vm, None, "restore" if rule == "relax" else rule,
                      "%s and %s: restored exactly" % (context, why), signals, state=cycle.restored(state))
    else:
        cycle.propose("relax", host, vm, new_cap, rule,
                      "%s and %s: cap raised one step to %.2f CPUs" % (context, why, new_cap),
                      signals, state=cycle.loosened(state, new_cap))


def apply(cycle, scene):
    """Only where a brake of ours is in force (a cap, a demoted weight)."""
    if any(state.get("cap") is not None for state in scene.states.values()) or cycle.demoted:
        relax(cycle, scene.host, scene.vms, scene.states, scene.idle)
