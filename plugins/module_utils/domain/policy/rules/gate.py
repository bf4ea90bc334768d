# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gate_pressure, gate_severe, gate_memory, open_calm and open_hold: steer new VMs away from a node
whose host has sustained CPU pressure, close it at severe CPU or memory pressure, open it once calm."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.views import HARD, SOFT


# This rule's parameters: name: (default, low, high, what it is).
PARAMETERS = {
    "gate_pressure": (20.0, 0.0, 100.0, "host PSI cpu some avg60 and avg10 (%) at which new VMs are steered away "
                                        "from its node (a PreferNoSchedule taint)"),
    "severe_gate_pressure": (50.0, 0.0, 100.0, "host PSI cpu some avg60 and avg10 (%) at which its node is closed to "
                                               "new VMs (a NoSchedule taint)"),
    "memory_gate_pressure": (5.0, 0.0, 100.0, "host PSI memory full avg60 (%) at which its node is closed to new VMs "
                                              "(the collection has no memory brake)"),
    "open_pressure": (5.0, 0.0, 100.0, "host PSI cpu some avg60 and avg10 (%) a gated node must be under to open"),
    "gate_hold_seconds": (1800, 0, None, "least time a node stays gated"),
    "open_calm_seconds": (600, 0, None, "seconds under open_pressure before a gated node opens"),
    "max_gated_share": (0.25, 0.0, 1.0, "largest share of the nodes gated at once"),
}
INTEGERS = ()
# Whether it needs the VMs' state (else it runs on every host).
NEEDS_VM_STATE = False


def gate(cycle, host):
    """Two tiers: sustained CPU pressure steers new VMs away from the node
    (PreferNoSchedule), severe CPU pressure or memory pressure closes it
    (NoSchedule); a soft gate is hardened when pressure gets severe, and
    either opens once calm."""
    params, now = cycle.params, cycle.now
    node = host["node"]
    avg10, avg60, memory = host["avg10"], host["avg60"], host.get("memory_full60")
    state = dict(node["policy"])
    unbraked_psi = host.get("unbraked_psi")
    signals = {"pressure_some_avg10": avg10, "pressure_some_avg60": avg60,
               "procs_running": host["procs_running"]}
    if unbraked_psi:
        # What the host's PSI said, the brakes' own wait in it.
        signals.update(pressure_some_avg10_raw=host["avg10_raw"], pressure_some_avg60_raw=host["avg60_raw"],
                       braked_vms=host["braked_vms"])
    if memory is not None:
        signals["memory_full_avg60"] = memory
    # The unbraked VMs' wait averaged, carried to the next cycle; a state
    # an older collection kept (`capped_psi`) is dropped.
    carried = {"unbraked_psi": unbraked_psi} if unbraked_psi else {}
    state.pop("capped_psi", None)
    state.pop("unbraked_psi", None)
    state.update(carried)
    if (avg10 is None or avg60 is None) and memory is None:
        _keep_node_state(cycle, node, state)
        return
    tier = _gate_tier(cycle, avg10, avg60, memory)
    if not node["gated"]:
        opened_at = state.get("opened_at")
        state = dict(carried)
        if opened_at is not None and now - opened_at < params["gate_hold_seconds"]:
            # A node the policy opened stays open as long as a gate is held
            # closed, unless pressure turns severe: steering new VMs away
            # and back every few minutes helps no scheduler.
            state["opened_at"] = opened_at
            if tier is not None and tier[1] == SOFT:
                cycle.notes.append({"object": "node/%s" % node["name"], "rule": "open_hold",
                                    "note": "%s; opened %d s ago, it stays open for gate_hold_seconds (%d s) "
                                    "unless pressure turns severe" % (tier[2], now - opened_at,
                                                                      params["gate_hold_seconds"])})
                tier = None
        if tier is not None:
            _propose_gate(cycle, host, tier, signals, dict(carried, gated_at=now))
    elif state.get("gated_at") is not None:
        if tier is not None and tier[1] == HARD and node["effect"] == SOFT:
            _propose_gate(cycle, host, tier, signals, dict(state))
            return
        calm = avg60 is not None and avg10 is not None and avg60 <= params["open_pressure"] \
            and avg10 <= params["open_pressure"] and (memory is None or memory < params["memory_gate_pressure"])
        if not calm:
            state.pop("calm_since", None)
        else:
            state.setdefault("calm_since", now)
            held_for, calm_for = now - state["gated_at"], now - state["calm_since"]
            if held_for >= params["gate_hold_seconds"] and calm_for >= params["open_calm_seconds"]:
                cycle.propose("open", host, None, None, "open_calm",
                              "CPU pressure %.1f %% (avg60) under %g %% for %d s, gated for %d s"
                              % (avg60, params["open_pressure"], calm_for, held_for), signals,
                              state=dict(carried, opened_at=now))
    _keep_node_state(cycle, node, state)


def _keep_node_state(cycle, node, state):
    if state != node["policy"]:
        cycle.node_states[node["name"]] = state or None


def _gate_tier(cycle, avg10, avg60, memory):
    """(rule, taint effect, why) of the gate the pressures call for, or None."""
    params = cycle.params
    if memory is not None and memory >= params["memory_gate_pressure"]:
        return ("gate_memory", HARD, "memory pressure (full) %.1f %% (avg60) is at or above %g %%: closed to new "
                "VMs, which no brake could make room for" % (memory, params["memory_gate_pressure"]))
    if avg10 is None or avg60 is None:
        return None
    for rule, effect, level, what in (("gate_severe", HARD, params["severe_gate_pressure"], "closed to new VMs"),
                                      ("gate_pressure", SOFT, params["gate_pressure"], "new VMs steered away")):
        if avg60 >= level and avg10 >= level:
            return (rule, effect, "CPU pressure %.1f %% (avg60) and %.1f %% (avg10) is at or above %g %%: %s "
                    "until it is calm" % (avg60, avg10, level, what))
    return None


def _propose_gate(cycle, host, tier, signals, state):
    rule, effect, why = tier
    action = cycle.propose("gate", host, None, None, rule, why, signals,
                           state=dict(state, rule=rule, effect=effect),
                           priority=(host["avg60"] or 0.0) + (100.0 if effect == HARD else 0.0))
    if action is not None:
        action["effect"] = effect
    else:
        cycle.held[-1]["effect"] = effect


def apply(cycle, scene):
    if scene.host["node"] is not None:
        gate(cycle, scene.host)
