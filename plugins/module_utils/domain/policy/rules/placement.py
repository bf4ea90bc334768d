# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""placement: when victims still wait with every culprit at its floor, or a host is overloaded
with no culprit, for placement_cycles cycles in a row, propose moving a VM (never applied by the
loop; a plan made with moves opted in carries it as a migrate action a person approves)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


# This rule's parameters: name: (default, low, high, what it is).
PARAMETERS = {
    "placement_cycles": (3, 1, 64, "cycles in a row in which victims wait with every culprit at its floor, or with "
                                   "no culprit on an overloaded host, before the plan proposes moving a VM"),
}
INTEGERS = ("placement_cycles",)
# Whether it needs the VMs' state (else it runs on every host).
NEEDS_VM_STATE = True


def placement(cycle, host, vms, states):
    """Counts, in the VM's state, the cycles in a row this host would have
    a VM moved away for; at placement_cycles it is proposed (where to is
    decided once every host's idle CPU is known, in plan())."""
    movable, why = cycle.movable or (None, None)
    for vm in vms:
        state = states[vm["key"]]
        if vm["key"] != movable:
            state.pop("placement_waits", None)
            continue
        count = state["placement_waits"] = state.get("placement_waits", 0) + 1
        for _order, _priority, _seq, action, acted_state in cycle.proposed:
            # A VM acted on this cycle (capped to its floor) keeps the count in the state its action stores.
            if action.get("object") == vm["key"] and acted_state is not None:
                acted_state["placement_waits"] = count
        if count >= cycle.params["placement_cycles"]:
            cycle.to_move.append((vm, host, "%s, %d cycles in a row" % (why, count)))


def apply(cycle, scene):
    placement(cycle, scene.host, scene.vms, scene.states)
