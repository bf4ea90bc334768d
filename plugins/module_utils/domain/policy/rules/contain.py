# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""contain: when VMs wait for CPU and the pool has no idle CPU, brake the VMs taking most above
their due, one rung a cycle (the weight, rules/weight.py, then the quota: the fluid need, then
steps while victims wait although the load fits), never dedicated VMs, never under a floor."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.judgement import (
    entitlements, floor_of, is_culprit, pool_vms, surges, takes_no_more_than_its_due, trusted_usual)
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.rules import weight
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.views import steal_ratio, wanted
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import DEDICATED


# This rule's parameters: name: (default, low, high, what it is).
PARAMETERS = {
    "culprit_peer_share": (0.5, 0.0, 1.0, "share of the biggest culprit's excess at which a culprit that waits too "
                                          "is still cut (a peer)"),
    "culprit_min_age_seconds": (60, 0, 3600, "seconds a VM must have run before it is judged a culprit: a booting "
                                             "guest burns its CPUs for seconds (a VM whose start is not known is "
                                             "judged at once)"),
    "quota_cut_share": (0.25, 0.0, 0.9, "share a culprit's cap is cut by in each cycle in which victims still "
                                        "wait while the pool's load fits, never under its floor (0: caps only for "
                                        "the fluid need)"),
}
INTEGERS = ()
# Whether it needs the VMs' state (else it runs on every host).
NEEDS_VM_STATE = True


def contain(cycle, host, vms, states, ents, victims, idle):
    """One host's containment: the culprits, the weight rung, then a cap
    for the fluid need or a step while victims wait although the load
    fits; every cycle that brakes nothing says why."""
    params = cycle.params
    cpus = host["pool"]
    names = [v["name"] for v in victims]
    signals = {"victims": names, "idle_cpus": round(idle, 3), "host_cpus": host["cpus"], "shared_cpus": cpus,
               "pressure_some_avg10": host["avg10"], "procs_running": host["procs_running"]}
    if idle >= params["idle_guard_share"] * cpus:
        cycle.notes.append({"object": host["name"], "rule": "work_conservation",
                            "note": "%s wait for CPU but %.2f of the %g CPUs of the shared pool are idle: nothing "
                            "throttled" % (", ".join(names), idle, cpus)})
        return
    candidates = _culprits(cycle, vms, states, ents)
    # The biggest culprit and those whose excess is comparable to it are
    # peers: a waiting peer is no victim. Only victims outside them
    # justify a cut.
    peers = set(item[1]["key"] for item in candidates if item[0] >= params["culprit_peer_share"] * candidates[0][0]) \
        if candidates else set()
    if not candidates or not [v for v in victims if v["key"] not in peers]:
        _no_culprit(cycle, host, vms, victims, bool(candidates))
        return
    # Culprits that may be braked, biggest excess first: the peers, then
    # smaller culprits that do not wait themselves (a victim that also
    # takes more than its share is what the containment is for, not what
    # pays for it).
    victim_keys = set(v["key"] for v in victims)
    cut = [item for item in candidates if item[1]["key"] in peers or item[1]["key"] not in victim_keys]
    biggest = candidates[0][0]
    for excess, vm, want, ent in candidates:
        if vm["key"] not in peers and vm["key"] in victim_keys:
            cycle.notes.append({"object": vm["key"], "rule": "contain",
                                "note": "a culprit (wants %.2f CPUs, entitled to %.2f) that waits itself, with "
                                "%d %% of the biggest culprit's excess (under culprit_peer_share %g): left alone"
                                % (want, ent, int(100 * excess / biggest), params["culprit_peer_share"])})
    # The reasons name the VMs a brake is for: the peers' own wait is theirs.
    names = [v["name"] for v in victims if v["key"] not in peers]
    signals["victims"] = names
    waiting_now = [v["name"] for v in victims
                   if v["key"] not in peers and states[v["key"]].get("hist", "").endswith("1")]
    cut = weight.weigh(cycle, host, vms, states, cut, signals, names, waiting_now)
    if not cut:
        return
    load = sum(min(wanted(vm), cycle.cap_after(vm)) if cycle.cap_after(vm) is not None else wanted(vm)
               for vm in pool_vms(vms))
    need = load - cpus * (1.0 - params["headroom_share"])
    culprit_names = ", ".join(item[1]["name"] for item in cut)
    stepped = {}
    if need >= params["min_change_cpus"]:
        targets, need = contain_targets(cut, need, params)
    else:
        # The pool's load fits, yet victims wait: a waking victim queues
        # behind a runnable culprit, which the fluid need cannot see.
        targets = stepped = _steps(cycle, cut, idle, cpus) if waiting_now else {}
        need = 0.0
        if not targets:
            why = _why_no_step(cycle, cut, idle, cpus, waiting_now)
            cycle.notes.append({"object": host["name"], "rule": "contain",
                                "note": "%s wait for CPU beside culprits (%s) while the pool's load (%.2f of %g "
                                "CPUs less headroom) fits: %s; nothing throttled" % (
                ", ".join(names), culprit_names, load, cpus, why)})
            if why.startswith("every culprit"):
                cycle.movable = (cut[0][1]["key"], "victims wait with every culprit at its floor while the "
                                 "pool's load fits")
            return
    _propose_caps(cycle, host, states, cut, targets, stepped, names, signals, load)
    if need >= params["min_change_cpus"]:
        cycle.notes.append({"object": host["name"], "rule": "contain",
                            "note": "culprits at their floors: %.2f CPUs of contention remain" % need})
        _excess, vm, want, _ent = cut[0]
        cycle.movable = (vm["key"], "victims wait with every culprit at its floor: %.2f CPUs of contention remain "
                         "on its host" % need)


def _culprits(cycle, vms, states, ents):
    """[(excess, vm, want, entitlement)] of the VMs judged culprits this
    cycle, biggest excess first; a VM judged by its own history (a surge)
    gets the bound it may want without surging."""
    params = cycle.params
    candidates = []
    for vm in vms:
        state = states[vm["key"]]
        if vm["class"] == DEDICATED or vm["key"] in cycle.claimed:
            continue
        if vm["cap"] is not None and not cycle.ours(vm, state):
            continue
        want, ent = wanted(vm), ents[vm["key"]]
        usual, settled = trusted_usual(state, cycle.now, params), trusted_usual(state, cycle.now, params, settled=True)
        if not is_culprit(vm, want, ent, params, usual, settled):
            continue
        age = None if vm.get("started_at") is None else cycle.now - vm["started_at"]
        if age is not None and age < params["culprit_min_age_seconds"]:
            cycle.notes.append({"object": vm["key"], "rule": "contain",
                                "note": "wants %.2f CPUs, entitled to %.2f, but started %d s ago: not judged a "
                                "culprit before culprit_min_age_seconds (%g; a booting guest burns its CPUs)"
                                % (want, ent, max(0, int(age)), params["culprit_min_age_seconds"])})
            continue
        if state.get("cap") is None and state.get("weight") is None and takes_no_more_than_its_due(
                vm, want, ent, params, usual, settled):
            # Not yet braked (a brake of ours lowers what it uses: that VM
            # is judged by its want, as the brake's release is).
            note = ("wants %.2f CPUs, %.1fx its entitlement of %.2f, but uses %.2f: it waits its way to that "
                    "want, taking no more than its due from the others (an overload, not a noisy neighbour); not "
                    "a culprit" % (want, want / ent if ent else 0.0, ent, vm["used"]))
            cycle.notes.append({"object": vm["key"], "rule": "contain", "note": note})
            continue
        if surges(want, usual, params):
            # Judged by its own history: its fair bound is what it
            # may want without surging, if that is under its due.
            cycle.surging[vm["key"]] = (usual, ent)
            ent = min(ent, params["surge_ratio"] * usual)
        candidates.append((want - ent, vm, want, ent))
    return sorted(candidates, key=lambda item: (-item[0], item[1]["key"]))


def _no_culprit(cycle, host, vms, victims, any_culprit):
    """Victims wait and no VM (or only the victims' peers) is a culprit:
    nothing is braked; an overload with no culprit names a VM to move."""
    names = ", ".join(v["name"] for v in victims)
    cycle.notes.append({"object": host["name"], "rule": "contain",
                        "note": "%s wait for CPU but no other VM wants %g x its entitlement or runs flat out: "
                        "nothing throttled" % (names, cycle.params["culprit_ratio"])})
    waiting = [v for v in victims if v["class"] != DEDICATED]
    if not any_culprit and waiting:
        # Overload with no culprit: no brake is fair; the answer is
        # fewer VMs here (the gate) or one moved away.
        biggest = max(waiting, key=lambda v: (wanted(v), v["key"]))
        load = sum(wanted(vm) for vm in pool_vms(vms))
        cycle.movable = (biggest["key"], "its host is overloaded with no culprit: the pool's VMs want %.2f of "
                         "%g CPUs" % (load, host["pool"]))


def _why_no_step(cycle, cut, idle, cpus, waiting_now):
    """Why no culprit's cap is stepped while the pool's load fits."""
    params = cycle.params
    if not waiting_now:
        return "no victim waits this cycle"
    if not params["quota_cut_share"]:
        return "quota_cut_share is 0, a cap answers only the fluid need"
    if idle + params["min_change_cpus"] > params["idle_guard_share"] * cpus:
        return "%.2f CPUs of the pool are idle already, near the idle guard's %.2f" % (
            idle, params["idle_guard_share"] * cpus)
    if all(min(want, vm["cap"] if vm["cap"] is not None else want) - floor_of(vm, params)
           < params["min_change_cpus"] for _excess, vm, want, _ent in cut if vm["key"] not in cycle.claimed):
        return "every culprit is at its floor or braked this cycle"
    return "no culprit's step changes its cap by min_change_cpus (%g)" % params["min_change_cpus"]


def _propose_caps(cycle, host, states, cut, targets, stepped, names, signals, load):
    """A throttle for each culprit with a target, its reason naming the
    victims and how the cap was found; a note for each one left as it is."""
    params, cpus = cycle.params, host["pool"]
    for _excess, vm, want, ent in cut:
        if vm["key"] not in targets:
            if vm["key"] not in cycle.claimed:
                cycle.notes.append({"object": vm["key"], "rule": "contain",
                                    "note": "a culprit (wants %.2f CPUs, entitled to %.2f) left as it is: %s"
                                    % (want, ent, _why_not_cut(vm, want, params))})
            continue
        target = targets[vm["key"]]
        above = cycle.above(vm, want, ent)
        if vm["key"] in stepped and vm["cap"] is not None:
            how = "victims still wait with it capped at %.2f: cap cut by %d %% to %.2f CPUs" % (
                vm["cap"], int(round(100 * (1.0 - target / vm["cap"]))), target)
        elif vm["key"] in stepped:
            how = "victims wait although the pool's load (%.2f of %g CPUs) fits: capped to %.2f CPUs" % (
                load, cpus, target)
        else:
            how = "capped to %.2f CPUs" % target
        reason = "%s wait for CPU; %s wants %.2f CPUs, %s: %s" % (", ".join(names), vm["name"], want, above, how)
        vm_signals = dict(signals, cpus_used=vm["used"], steal_cpus=vm["steal"], wanted_cpus=round(want, 3),
                          entitled_cpus=round(ent, 3), floor_cpus=round(floor_of(vm, params), 3))
        if vm["key"] in cycle.surging:
            usual, entitled = cycle.surging[vm["key"]]
            vm_signals.update(entitled_cpus=round(entitled, 3), usual_cpus=usual, surge_bound_cpus=round(ent, 3))
        cycle.propose("throttle", host, vm, target, "contain", reason, vm_signals,
                      state=cycle.capped(states[vm["key"]], target, "contain"), priority=want - ent)


def _steps(cycle, cut, idle, cpus):
    """{VM key: cap} of the stepwise quota (stepped_cap) for the cut's
    culprits not acted on this cycle; the steps together leave at most
    idle_guard_share of the pool idle, the line under which a cut is
    allowed at all."""
    params = cycle.params
    targets = {}
    if not params["quota_cut_share"]:
        return targets
    budget = params["idle_guard_share"] * cpus - idle
    for _excess, vm, want, ent in cut:
        target = stepped_cap(vm, want, ent, params, vm["key"] in cycle.surging) \
            if vm["key"] not in cycle.claimed else None
        if target is None:
            continue
        current = min(want, vm["cap"]) if vm["cap"] is not None else want
        target = max(target, current - budget)
        if current - target >= max(params["min_change_cpus"], 1e-6):
            budget -= current - target
            targets[vm["key"]] = target
    return targets


def contain_targets(culprits, need, params):
    """({VM key: the cap a containment sets}, the need left over) for
    culprits given as (excess, vm, wanted, entitlement), biggest excess
    first, and `need` CPUs to free. Each is first cut no lower than what
    fair sharing would give it anyway, max(floor, min(wanted, entitlement)),
    the next one only while need remains; if need remains when all are
    there, they are cut further in the same order, never under their
    floors. A cut under min_change_cpus, or a cap at or above the vCPUs, is
    no action and frees nothing."""
    current = dict((vm["key"], min(want, vm["cap"]) if vm["cap"] is not None else want)
                   for _excess, vm, want, _ent in culprits)
    level = dict(current)
    for fair in (True, False):
        for _excess, vm, want, ent in culprits:
            if need < params["min_change_cpus"]:
                break
            floor = floor_of(vm, params)
            target = max(max(floor, min(want, ent)) if fair else floor, level[vm["key"]] - need)
            if target < level[vm["key"]]:
                need -= level[vm["key"]] - target
                level[vm["key"]] = target
    targets = {}
    for _excess, vm, _want, _ent in culprits:
        key = vm["key"]
        target = min(level[key], vm["cap"]) if vm["cap"] is not None else level[key]
        if current[key] - target < params["min_change_cpus"] or target >= vm["vcpus"]:
            need += current[key] - level[key]
            continue
        targets[key] = target
    return targets, need


def stepped_cap(vm, want, ent, params, surging=False):
    """The cap of a culprit while victims wait although the pool's load fits
    (their wait is latency behind it, which the fluid need does not see):
    first the fair bound max(floor, min(want, entitlement)), then, capped,
    quota_cut_share less each cycle, never under its floor; a surging VM
    whose bound is about what it wants starts with that step. None when the
    step would change less than min_change_cpus or cap nothing."""
    floor = floor_of(vm, params)
    step = 1.0 - params["quota_cut_share"]
    if vm["cap"] is None:
        current, target = want, max(floor, min(want, ent))
        if surging and current - target < params["min_change_cpus"]:
            target = max(floor, current * step)
    else:
        current = min(vm["cap"], want)
        target = max(floor, current * step)
    if current - target < max(params["min_change_cpus"], 1e-6) or target >= vm["vcpus"]:
        return None
    return target


def _why_not_cut(vm, want, params):
    """Why contain_targets set no cap on a culprit, in words."""
    floor = floor_of(vm, params)
    current = min(want, vm["cap"]) if vm["cap"] is not None else want
    if current - floor < params["min_change_cpus"]:
        return "it is at its floor of %.2f CPUs" % floor
    return "the others' cuts free what is needed, or its cut would be under min_change_cpus (%g)" \
        % params["min_change_cpus"]


def apply(cycle, scene):
    """Contain on a host with victims: VMs that waited in trigger_n of the
    last trigger_m cycles, or in this one with severe steal, and are braked
    by nothing of ours (their wait would be the brake's)."""
    params, states = cycle.params, scene.states
    unbraked = [vm for vm in scene.vms if vm["cap"] is None and vm["key"] not in cycle.demoted]
    waiting = [vm for vm in unbraked if states[vm["key"]].get("hist", "").endswith("1")]
    victims = [vm for vm in unbraked if states[vm["key"]].get("hist", "").count("1") >= params["trigger_n"]
               or states[vm["key"]].get("hist", "").endswith("1") and steal_ratio(vm) >= params["severe_steal_ratio"]]
    if victims:
        contain(cycle, scene.host, scene.vms, states, entitlements(scene.host, scene.vms, states), victims, scene.idle)
    elif waiting:
        # Not yet victims: one cycle's wait is not a trend.
        cycle.notes.append({"object": scene.host["name"], "rule": "contain",
                            "note": "%s wait for CPU in this cycle but not in %d of the last %d (trigger_n, "
                            "trigger_m) nor by severe_steal_ratio: no victim yet, nothing throttled" % (
                                ", ".join(vm["name"] for vm in waiting), params["trigger_n"], params["trigger_m"])})
