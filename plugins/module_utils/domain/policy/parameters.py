# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The policy's parameters: those every rule shares, here, and each rule's
own, declared in its file (rules/); parameters() checks them all. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy import rules
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import DEFAULT_FLOOR_FRACTION


NAME = "overcommit"

# name: (default, low, high, what it is). Defaults from the field: Crane
# (10 s samples, 2-of-2 style N-of-M triggers, 300 s cooldowns), Koordinator
# (cut fast, recover at most +10 % a round), PARTIES/Heracles (a band
# between the act and relax thresholds), public-cloud burstable credits.
SHARED_PARAMETERS = {
    "victim_steal_ratio": (0.10, 0.0, 1.0, "steal / (used + steal) at which a VM counts as waiting for CPU"),
    "min_steal_cpus": (0.05, 0.0, None, "steal in CPUs under which a VM never counts as waiting"),
    "severe_steal_ratio": (0.25, 0.0, 1.0, "steal ratio at which one cycle is enough to act (cut fast)"),
    "victim_pressure": (20.0, 0.0, 100.0, "PSI cpu some avg10 (%) of a VM's cgroup at which it counts as waiting"),
    "trigger_n": (2, 1, None, "cycles out of the last trigger_m a VM must wait in to be a victim"),
    "trigger_m": (3, 1, 64, "length of the trigger history"),
    "idle_guard_share": (0.10, 0.0, 1.0, "share of the host's CPUs idle at which nothing is throttled"),
    "headroom_share": (0.02, 0.0, 0.5, "share of the host's CPUs a containment leaves free"),
    "culprit_ratio": (3.0, 1.0, None, "wanted CPU / entitlement a VM needs to be a culprit"),
    "culprit_busy_share": (0.9, 0.0, 1.0, "share of its vCPUs a VM above its entitlement wants to be a culprit "
                                          "whatever culprit_ratio says (a VM running flat out)"),
    "culprit_min_excess_cpus": (0.25, 0.0, None, "CPUs above its entitlement a VM needs to be a culprit"),
    "floor_fraction": (DEFAULT_FLOOR_FRACTION, 0.0, 1.0, "least share of its vCPUs a shared VM is capped to"),
    "usual_hours": (6.0, 0.0, 168.0, "hours a VM's usual demand is averaged over (0: no usual demand, culprits "
                                     "by fair shares alone)"),
    "surge_ratio": (2.0, 1.0, None, "wanted CPU over its usual demand at which a VM surges: a culprit while victims "
                                    "wait, even under its fair share"),
    "min_change_cpus": (0.05, 0.0, None, "smallest cap change worth an action"),
    "cooldown_seconds": (300, 0, None, "seconds after a cap is tightened before it may be raised"),
    "max_cooldown_seconds": (1800, 0, None, "longest cooldown after repeated reversals (it doubles at each)"),
    "max_actions_per_cycle": (100, 1, None, "most actions one cycle plans; the rest wait for the next"),
}

SHARED_INTEGERS = ("trigger_n", "trigger_m", "max_actions_per_cycle")
# Every parameter: those above, then each rule's own.
PARAMETERS = dict(SHARED_PARAMETERS)
INTEGER_PARAMETERS = SHARED_INTEGERS
for _rule in rules.ALL:
    PARAMETERS.update(_rule.PARAMETERS)
    INTEGER_PARAMETERS += _rule.INTEGERS


def parameters(given=None):
    """The policy's parameters: defaults overridden by `given`, validated.
    Raises ValueRangeError naming the parameter."""
    given = given or {}
    if not isinstance(given, dict):
        raise ValueRangeError("policy", given, "a mapping of parameter names to values")
    unknown = sorted(set(given) - set(PARAMETERS))
    if unknown:
        raise ValueRangeError("policy.%s" % unknown[0], given[unknown[0]], "one of %s" % ", ".join(sorted(PARAMETERS)))
    params = {}
    for name, (default, low, high, _what) in PARAMETERS.items():
        value = given.get(name, default)
        if value is None:
            value = default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise ValueRangeError("policy.%s" % name, value, "a number")
        if name in INTEGER_PARAMETERS:
            if value != int(value):
                raise ValueRangeError("policy.%s" % name, value, "a whole number")
            value = int(value)
        if value < low or (high is not None and value > high):
            raise ValueRangeError("policy.%s" % name, value, "%s..%s" % (low, high if high is not None else "any"))
        params[name] = value
    if params["trigger_n"] > params["trigger_m"]:
        raise ValueRangeError("policy.trigger_n", params["trigger_n"], "at most trigger_m (%d)" % params["trigger_m"])
    if params["relax_steal_ratio"] > params["victim_steal_ratio"]:
        raise ValueRangeError("policy.relax_steal_ratio", params["relax_steal_ratio"],
                              "at most victim_steal_ratio (%g): the relax threshold is under the act threshold"
                              % params["victim_steal_ratio"])
    if params["open_pressure"] > params["gate_pressure"]:
        raise ValueRangeError("policy.open_pressure", params["open_pressure"],
                              "at most gate_pressure (%g)" % params["gate_pressure"])
    if params["severe_gate_pressure"] < params["gate_pressure"]:
        raise ValueRangeError("policy.severe_gate_pressure", params["severe_gate_pressure"],
                              "at least gate_pressure (%g): the hard gate is past the soft one" % params["gate_pressure"])
    return params
