# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node taints this collection owns, and the list a node should carry. Pure.

Node.spec.taints is an atomic list: a write replaces it whole, so the new
list is always computed from the list just read, keeping every taint of
other owners as it was and in its place."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.k8s import metadata

# NoExecute is left out on purpose: it evicts running pods (running VMs), and
# the admission gate only decides whether *new* VMs may land.
GATE_EFFECTS = ("NoSchedule", "PreferNoSchedule")
# Effects that close a node to new pods (PreferNoSchedule only discourages).
CLOSING_EFFECTS = ("NoSchedule", "NoExecute")


def check_taints(taints, prefix, field="taints"):
    """Validated gate taints as {key, value, effect}, keys under the prefix."""
    checked = []
    for index, taint in enumerate(taints):
        where = "%s[%d]" % (field, index)
        if not isinstance(taint, dict) or not taint.get("key"):
            raise ValueRangeError(where, taint, "a dict with key, optional value and effect")
        unknown = set(taint) - set(("key", "value", "effect"))
        if unknown:
            raise ValueRangeError(where + "." + sorted(unknown)[0], taint[sorted(unknown)[0]], "only key, value, effect")
        effect = taint.get("effect") or "NoSchedule"
        if effect not in GATE_EFFECTS:
            raise ValueRangeError(where + ".effect", effect, "one of %s (NoExecute would evict running VMs; "
                                                             "the gate only stops new ones)" % ", ".join(GATE_EFFECTS))
        entry = {"key": metadata.owned_key(where + ".key", taint["key"], prefix), "effect": effect}
        value = metadata.check_label_value(where + ".value", taint.get("value"))
        if value:
            entry["value"] = value
        checked.append(entry)
    return checked


normalise = metadata.normalise_taint


def with_gate(current, wanted):
    """`current` with the owned taints of every wanted key replaced by the
    wanted ones; taints with other keys (foreign or owned) stay as they are."""
    wanted_keys = set(taint["key"] for taint in wanted)
    kept = [taint for taint in current if taint["key"] not in wanted_keys]
    existing = [taint for taint in current if taint["key"] in wanted_keys]
    if sorted(existing, key=_identity) == sorted(wanted, key=_identity):
        return list(current)
    return kept + list(wanted)


def without_keys(current, keys, prefix):
    """`current` without the owned taints whose key is listed."""
    return [taint for taint in current if not (taint["key"] in keys and taint["key"].startswith(prefix))]


def closes(taints, prefix):
    """Whether an owned taint closes the node to new pods."""
    return any(taint["key"].startswith(prefix) and taint.get("effect") in CLOSING_EFFECTS for taint in taints)


def _identity(taint):
    return (taint["key"], taint.get("effect") or "", taint.get("value") or "")
