# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The first rung of contain: demote a culprit's CPU weight (a weight wastes no idle CPU and lets
a waking victim run first), and let a demoted weight go once the VM is no culprit (release)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.judgement import (
    IDLE_CPUS, WEIGHT_STEP_SHARE, demoted_weight, floor_of, is_culprit, pool_vms, trusted_usual)
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.views import (
    settable_weight, wanted, weight_fields)


# This rule's parameters: name: (default, low, high, what it is).
PARAMETERS = {
    "weight_cycles": (1, 0, 64, "cycles in which victims still wait behind a culprit whose CPU weight was demoted "
                                "before it is capped too (0: no weight rung, cap at once)"),
}
INTEGERS = ("weight_cycles",)


def busy_weight(pool, vm):
    """The CPU weight of the pool's other VMs that want CPU now: an idle VM
    takes no share of a full pool (as in the entitlements), so the floor a
    demotion keeps is kept against these; keep_floor raises the weight again
    in a cycle in which more of them are busy."""
    return sum(other["weight"] for other in pool if other["key"] != vm["key"] and wanted(other) >= IDLE_CPUS)


def weigh(cycle, host, vms, states, cut, signals, names, waiting_now):
    """The first rung: demote the CPU weight of the culprits not braked
    yet, so that a victim that wakes runs before them; the cut list's
    culprits that go on to the quota rung: those already capped, those
    whose demoted weight left victims waiting for weight_cycles cycles,
    and those no weight can brake (said in the notes)."""
    params = cycle.params
    if not params["weight_cycles"]:
        return cut
    pool = pool_vms(vms)
    unknown = [vm["name"] for vm in pool if vm["weight"] is None]
    quota = []
    for item in cut:
        _excess, vm, want, ent = item
        state = states[vm["key"]]
        if vm["cap"] is not None or vm["key"] in cycle.claimed:
            quota.append(item)
            continue
        if vm["key"] in cycle.demoted:
            if waiting_now:
                state["weight_waits"] = state.get("weight_waits", 0) + 1
            if state.get("weight_waits", 0) >= params["weight_cycles"]:
                # A cap keeps the weight under it (a throttle sets the whole
                # brake): a weight that no longer keeps the floor beside the
                # VMs busy now is raised or restored this cycle, the cap next.
                if not keep_floor(cycle, host, vms, vm, state):
                    quota.append(item)
            else:
                cycle.notes.append({"object": vm["key"], "rule": "contain",
                                    "note": "CPU weight demoted to %g: %s; the quota rung waits %d cycle(s) "
                                    "in which victims still wait" % (
                    state["weight"], "%s still wait" % ", ".join(waiting_now) if waiting_now
                    else "no victim waits this cycle", params["weight_cycles"])})
            continue
        floor = floor_of(vm, params)
        weight = None
        if unknown:
            why = "the CPU weight of %s was not read" % ", ".join(unknown)
        else:
            weight = demoted_weight(floor, host["pool"], busy_weight(pool, vm))
            weight = None if weight is None else settable_weight(vm, weight)
            why = "no weight under %g keeps its floor of %.2f CPUs beside the VMs busy now" % (
                WEIGHT_STEP_SHARE * vm["weight"], floor)
            if weight is not None and weight > WEIGHT_STEP_SHARE * vm["weight"]:
                weight = None
        if weight is None:
            cycle.notes.append({"object": vm["key"], "rule": "contain",
                                "note": "CPU weight not demoted (%s): the quota rung instead" % why})
            quota.append(item)
            continue
        above = cycle.above(vm, want, ent)
        reason = ("%s wait for CPU; %s wants %.2f CPUs, %s: CPU weight demoted from %g to %g (beside the VMs "
                  "busy now it still gets its floor of %.2f CPUs)"
                  % (", ".join(names), vm["name"], want, above, vm["weight"], weight, floor))
        vm_signals = dict(signals, cpus_used=vm["used"], steal_cpus=vm["steal"], wanted_cpus=round(want, 3),
                          entitled_cpus=round(ent, 3), floor_cpus=round(floor, 3), weight=vm["weight"])
        action = cycle.propose("weight", host, vm, None, "contain", reason, vm_signals,
                               state=cycle.weighted(state, weight, vm["weight"]), priority=want - ent)
        (action if action is not None else cycle.held[-1]).update(weight_fields(vm, weight, vm["weight"]))
    return quota


def release(cycle, host, vms, vm, state, ents):
    """A demoted weight with no cap is let go, exactly, once the VM was no
    culprit in trigger_n of the last trigger_m cycles (a weight wastes no
    idle CPU, so it stays as long as the VM is one); until then its floor is
    kept (keep_floor)."""
    params = cycle.params
    want = wanted(vm)
    released = (state.get("released", "") + ("0" if is_culprit(
        vm, want, ents[vm["key"]], params, trusted_usual(state, cycle.now, params),
        trusted_usual(state, cycle.now, params, settled=True)) else "1"))[-params["trigger_m"]:]
    state["released"] = released
    if vm["key"] in cycle.claimed:
        return
    if released.count("1") < params["trigger_n"] or \
            cycle.flapping(state) and cycle.now - state.get("changed_at", cycle.now) < state["cooldown"]:
        keep_floor(cycle, host, vms, vm, state)
        return
    cycle.propose("restore", host, vm, None, "release",
                  "no longer a culprit in %d of the last %d cycles (wants %.2f CPUs): CPU weight restored exactly"
                  % (released.count("1"), len(released), want),
                  {"cpus_used": vm["used"], "wanted_cpus": round(want, 3), "weight": vm["weight"],
                   "demoted_weight": state["weight"]}, state=cycle.restored(state))


def keep_floor(cycle, host, vms, vm, state):
    """A demoted weight that no longer keeps the VM's floor beside the VMs
    busy now (more of them woke since it was set) is raised to the weight
    that does; when that is no demotion worth keeping (over
    WEIGHT_STEP_SHARE of its own weight), it is restored exactly, and the
    quota rung brakes the VM if it still is a culprit. Whether it acted."""
    params = cycle.params
    floor = floor_of(vm, params)
    needed = demoted_weight(floor, host["pool"], busy_weight(pool_vms(vms), vm))
    needed = None if needed is None else settable_weight(vm, needed)
    if needed is not None and needed <= state["weight"]:
        return False
    signals = {"cpus_used": vm["used"], "wanted_cpus": round(wanted(vm), 3), "weight": state["weight_was"],
               "demoted_weight": state["weight"], "floor_cpus": round(floor, 3)}
    if needed is None or needed > WEIGHT_STEP_SHARE * state["weight_was"]:
        cycle.propose("restore", host, vm, None, "contain",
                      "more VMs are busy beside it: no demoted CPU weight keeps its floor of %.2f CPUs any more: "
                      "CPU weight restored exactly" % floor, signals, state=cycle.restored(state))
        return True
    action = cycle.propose("weight", host, vm, None, "contain",
                           "more VMs are busy beside it: CPU weight raised from %g to %g so that it keeps its floor "
                           "of %.2f CPUs" % (state["weight"], needed, floor), signals,
                           state=dict(state, weight=needed, changed_at=cycle.now))
    (action if action is not None else cycle.held[-1]).update(weight_fields(vm, needed, state["weight"]))
    return True
