# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster's static overcommit model on the KubeVirt CR: validation of
the wanted settings and the merge patch that sets them. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import allocation
from ansible_collections.overcommit.control.plugins.module_utils.k8s import merge_patch, metadata

# option -> path under spec.configuration
FIELDS = {
    "cpu_allocation_ratio": "developerConfiguration.cpuAllocationRatio",
    "memory_overcommit": "developerConfiguration.memoryOvercommit",
    "auto_cpu_limit_namespace_selector": "autoCPULimitNamespaceLabelSelector",
    "vm_rollout_strategy": "vmRolloutStrategy",
}
DEFAULTS = {"cpu_allocation_ratio": allocation.DEFAULT_CPU_ALLOCATION_RATIO,
            "memory_overcommit": allocation.DEFAULT_MEMORY_OVERCOMMIT}
ROLLOUT_STRATEGIES = ("Stage", "LiveUpdate")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def check_label_selector(field, selector):
    """A metav1.LabelSelector as KubeVirt evaluates it. An empty selector
    matches every namespace, which is refused: say so explicitly with an
    Exists expression."""
    if not isinstance(selector, dict) or set(selector) - set(("matchLabels", "matchExpressions")):
        raise ValueRangeError(field, selector, "a label selector with matchLabels and/or matchExpressions")
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        raise ValueRangeError(field, selector, "a non-empty selector (an empty one matches every namespace; to mean "
                                               "that, use matchExpressions: [{key: kubernetes.io/metadata.name, "
                                               "operator: Exists}])")
    if not isinstance(selector.get("matchLabels") or {}, dict):
        raise ValueRangeError(field + ".matchLabels", selector["matchLabels"], "a mapping of label key to value")
    if not isinstance(selector.get("matchExpressions") or [], list):
        raise ValueRangeError(field + ".matchExpressions", selector["matchExpressions"],
                              "a list of dicts with key, operator and (for In/NotIn) values")
    for key, value in (selector.get("matchLabels") or {}).items():
        metadata.check_label_value("%s.matchLabels.%s" % (field, key), value)
    for index, expression in enumerate(selector.get("matchExpressions") or []):
        where = "%s.matchExpressions[%d]" % (field, index)
        if not isinstance(expression, dict) or not expression.get("key"):
            raise ValueRangeError(where, expression, "a dict with key, operator and (for In/NotIn) values")
        operator, values = expression.get("operator"), expression.get("values")
        if operator not in SELECTOR_OPERATORS:
            raise ValueRangeError(where + ".operator", operator, "one of %s" % ", ".join(SELECTOR_OPERATORS))
        if values is not None and (not isinstance(values, list) or not all(isinstance(v, str) for v in values)):
            raise ValueRangeError(where + ".values", values, "a list of label values (text)")
        if operator in ("In", "NotIn") and not values:
            raise ValueRangeError(where + ".values", values, "a non-empty list for operator %s" % operator)
        if operator in ("Exists", "DoesNotExist") and values:
            raise ValueRangeError(where + ".values", values, "no values for operator %s" % operator)
    return selector


def check_wanted(params):
    """option -> wanted value for the options given, None for a setting to
    remove (named in `clear`, or the selector with
    clear_auto_cpu_limit_namespace_selector), so that KubeVirt's default
    applies again; options neither given nor cleared are left as they are."""
    wanted = {}
    if params.get("cpu_allocation_ratio") is not None:
        wanted["cpu_allocation_ratio"] = allocation.check_cpu_allocation_ratio(params["cpu_allocation_ratio"])
    if params.get("memory_overcommit") is not None:
        wanted["memory_overcommit"] = allocation.check_memory_overcommit(params["memory_overcommit"])
    if params.get("auto_cpu_limit_namespace_selector") is not None:
        wanted["auto_cpu_limit_namespace_selector"] = check_label_selector(
            "auto_cpu_limit_namespace_selector", params["auto_cpu_limit_namespace_selector"])
    elif params.get("clear_auto_cpu_limit_namespace_selector"):
        wanted["auto_cpu_limit_namespace_selector"] = None
    if params.get("vm_rollout_strategy") is not None:
        if params["vm_rollout_strategy"] not in ROLLOUT_STRATEGIES:
            raise ValueRangeError("vm_rollout_strategy", params["vm_rollout_strategy"],
                                  "one of %s" % ", ".join(ROLLOUT_STRATEGIES))
        wanted["vm_rollout_strategy"] = params["vm_rollout_strategy"]
    for option in params.get("clear") or []:
        if option not in FIELDS:
            raise ValueRangeError("clear", option, "one of %s" % ", ".join(FIELDS))
        if wanted.get(option) is not None:
            raise ValueRangeError("clear", option, "a setting not also given a value in the same task")
        wanted[option] = None
    return wanted


def current(kubevirt):
    """The managed settings as set on the CR (None: not set)."""
    configuration = merge_patch.at(kubevirt, "spec.configuration") or {}
    return dict((option, merge_patch.at(configuration, path)) for option, path in FIELDS.items())


def effective(settings):
    """What KubeVirt applies: its defaults for what is not set, and its
    previous configuration (reported as 'ignored') for invalid values."""
    result = {}
    for option, value in settings.items():
        if option in DEFAULTS:
            checker = (allocation.check_cpu_allocation_ratio if option == "cpu_allocation_ratio"
                       else allocation.check_memory_overcommit)
            try:
                result[option] = DEFAULTS[option] if value is None else checker(value)
            except ValueRangeError:
                result[option] = "ignored by KubeVirt: %r is invalid" % (value,)
        else:
            result[option] = value
    return result


def plan(kubevirt, wanted):
    """Before, after and the merge patch (None when nothing changes)."""
    before = current(kubevirt)
    after = dict(before, **wanted)
    configuration_before = merge_patch.at(kubevirt, "spec.configuration") or {}
    configuration_after = configuration_before
    for option, value in wanted.items():
        if value is None and merge_patch.at(configuration_before, FIELDS[option]) is None:
            # Nothing to remove; nulling it would leave an empty parent behind.
            continue
        configuration_after = merge_patch.merge(configuration_after, merge_patch.nest(FIELDS[option], None))
        if value is not None:
            configuration_after = merge_patch.merge(configuration_after, merge_patch.nest(FIELDS[option], value))
    changes = merge_patch.diff(configuration_before, configuration_after)
    return {"before": before, "after": after, "patch": {"spec": {"configuration": changes}} if changes else None}
