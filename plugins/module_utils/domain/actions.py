# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The actions the policy proposes and a plan carries, in one table: what
each does, in which order a cycle takes them, what undoes it, and the
module and arguments that carry it out on each platform. The policy, the
plans (domain/plan.py, the plan_review filter), the simulator and the
apply_plan role read it: a new action is an entry here and the rule that
proposes it. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

LIBVIRT = "libvirt"
KUBEVIRT = "kubevirt"
NODE = "node"

# name: order (a cycle's escalation: gates first, then weights and caps,
# then letting go, a move last), the object it acts on (a VM or a node), its
# effect (what the simulator replays: a cap, a weight, a lift of both, a gate
# or an opening; a move it does not replay) and what undoes it (a move: a
# move back, which a person decides).
ACTIONS = {
    "gate": {"order": 0, "on": NODE, "effect": "gate", "undone_by": "open"},
    "weight": {"order": 1, "on": "vm", "effect": "weight", "undone_by": "restore"},
    "throttle": {"order": 1, "on": "vm", "effect": "cap", "undone_by": "restore"},
    "relax": {"order": 2, "on": "vm", "effect": "cap", "undone_by": "restore"},
    "restore": {"order": 3, "on": "vm", "effect": "lift", "undone_by": None},
    "open": {"order": 4, "on": NODE, "effect": "open", "undone_by": "gate"},
    # Only in a plan made with moves opted in (the recommend role's
    # recommend_migrate), never by the closed loop: a placement proposal with
    # a target host (for a KubeVirt VM, one with a node).
    "migrate": {"order": 5, "on": "vm", "effect": "move", "undone_by": None},
}
NAMES = ("gate", "weight", "throttle", "relax", "restore", "open", "migrate")

# The module that carries out an action on each platform.
MODULES = {
    LIBVIRT: "overcommit.control.libvirt_cputune",
    KUBEVIRT: "overcommit.control.kubevirt_vm_cpu_limit",
    NODE: "overcommit.control.node_admission",
}
# The module that moves a VM, on the platforms where a plan may move one.
MOVERS = {
    LIBVIRT: "overcommit.control.libvirt_migrate",
    KUBEVIRT: "overcommit.control.kubevirt_vm_migrate",
}


def sets_cap(kind):
    return ACTIONS[kind]["effect"] == "cap"


def platform_of(action):
    """Where an action of a plan is carried out: a node, a KubeVirt VM or a libvirt domain."""
    if ACTIONS[action["action"]]["on"] == NODE:
        return NODE
    return KUBEVIRT if action.get("platform") == KUBEVIRT else LIBVIRT


def call(action):
    """{module, args}: the module that carries out a plan's `action` and the
    arguments that say what it changes (the role adds what every apply
    passes: the object, reason, plan id and expected state). A weight rides
    along with any cap on top of it; a restore gives back both."""
    kind = action["action"]
    platform = platform_of(action)
    if kind == "migrate":
        if platform == KUBEVIRT:
            return {"module": MOVERS[platform], "args": {"target_node": action["to_node"]}}
        # The role adds the target's URI, from the inventory's host `to`.
        return {"module": MOVERS[platform], "args": {"target_name": action["to"]}}
    if platform == NODE:
        args = {"state": "gated" if kind == "gate" else "open"}
        if kind == "gate" and action.get("effect"):
            # A soft gate (PreferNoSchedule) steers new VMs away; a hard one (NoSchedule) closes the node.
            args["taints"] = [{"key": "gated", "effect": action["effect"]}]
        return {"module": MODULES[platform], "args": args}
    args = {"state": "restored" if ACTIONS[kind]["effect"] == "lift" else "throttled"}
    if sets_cap(kind):
        # kubevirt_vm_cpu_limit takes a Kubernetes CPU quantity, libvirt_cputune a number.
        args["cpus"] = str(action["cpus"]) if platform == KUBEVIRT else action["cpus"]
    if args["state"] == "throttled":
        weight_key = "cpu_request" if platform == KUBEVIRT else "shares"
        if action.get(weight_key) is not None:
            args[weight_key] = action[weight_key]
    return {"module": MODULES[platform], "args": args}
