# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""credits_exhausted and credits_earned: hold a burstable VM with no CPU credits left to its
baseline, and let it burst again once it has earned enough."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.domain import credits as credit_rules
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import BURSTABLE


# This rule's parameters: name: (default, low, high, what it is).
PARAMETERS = {
    "credit_release_minutes": (5.0, 0.0, None, "minutes of full burst a held burstable VM must earn to burst again"),
    "initial_credit_share": (0.10, 0.0, 1.0, "share of the bank a burstable VM starts with when it has no balance"),
}
INTEGERS = ()
# Whether it needs the VMs' state (else it runs on every host).
NEEDS_VM_STATE = True


def credits(cycle, host, vms, states):
    """Credit accounting of the burstable VMs, and the caps it calls for."""
    params, now = cycle.params, cycle.now
    for vm in vms:
        if vm["class"] != BURSTABLE:
            continue
        state = states[vm["key"]]
        baseline = vm["baseline"]
        balance = state.get("credits")
        if balance is None:
            balance = vm["credits"] if vm["credits"] is not None else \
                credit_rules.bank_cap(baseline) * params["initial_credit_share"]
        else:
            balance = credit_rules.accrue(balance, baseline, vm["used"], now - state.get("credits_at", now))
        state["credits"] = credit_rules.stored(balance)
        state["credits_at"] = now
        signals = {"credits": state["credits"], "baseline_cpus": baseline, "cpus_used": vm["used"]}
        release = credit_rules.release_level(baseline, vm["vcpus"], params["credit_release_minutes"])
        ours = cycle.ours(vm, state)
        if balance <= 0 and (vm["cap"] is None and not state.get("foreign") or ours and vm["cap"] > baseline + 1e-6):
            cycle.propose("throttle", host, vm, baseline, "credits_exhausted",
                          "burstable VM has no CPU credits left: held to its baseline of %g CPUs" % baseline,
                          signals, state=cycle.capped(state, baseline, "credits_exhausted"), priority=1.0)
        elif ours and state.get("rule") == "credits_exhausted" and balance >= release:
            cycle.propose("restore", host, vm, None, "credits_earned",
                          "burstable VM earned %.1f credits (%g needed to burst again)" % (balance, release),
                          signals, state=cycle.restored(state))


def apply(cycle, scene):
    credits(cycle, scene.host, scene.vms, scene.states)
