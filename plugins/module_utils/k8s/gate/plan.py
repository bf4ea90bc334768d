# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The admission gate of a node: what to write so that new VMs may (open) or
may not (gated) land on it, and the fleet-wide safety check. Pure: plain data
in, plain data out.

Gating sets owned taints (and optionally the cordon); why and when is kept in
an annotation on the node, which also says which taints the gate added and
whether it cordoned, so opening removes exactly those and never lifts a cordon
someone else set.

Beside the gate record the node carries the control policy's state between
cycles (annotation <prefix>policy, compact JSON), written in the same write
as the gate, and the operator's kill switch (label <prefix>paused=true). A
task may say what it saw of a node when it decided (`expected`, as
domain.plan.seen_of_node shapes it): a node no longer so is left alone."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal, ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain.plan import changed_since, seen_of_node
from ansible_collections.overcommit.control.plugins.module_utils.k8s import metadata
from ansible_collections.overcommit.control.plugins.module_utils.k8s.gate import taints as node_taints

STATES = ("gated", "open")
DEFAULT_TAINT = {"key": "gated", "effect": "NoSchedule"}
RECORD_FIELDS = ("reason", "time", "by")
# What a plan saw of a node (domain.plan.seen_of_node), key -> check.
EXPECTED_KEYS = ("gated", "gate_time", "taints", "cordoned")


class GateRefusal(ObjectRefusal):
    """A gate the fleet safety rule forbids; `force` overrides it."""


def check_expected(value, field="expected"):
    """What the caller saw of each node when it decided: node name ->
    {gated: bool, gate_time: str or null, taints: ["key=value:effect" or
    "key:effect"...], cordoned: bool} (domain.plan.seen_of_node). Taints
    are compared in sorted order."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueRangeError(field, value, "a mapping of node name to what was seen of it")
    checked = {}
    for name, seen in value.items():
        where = "%s.%s" % (field, name)
        if not isinstance(seen, dict):
            raise ValueRangeError(where, seen, "a mapping with %s" % ", ".join(EXPECTED_KEYS))
        for key in [k for k in EXPECTED_KEYS if k not in seen]:
            raise ValueRangeError("%s.%s" % (where, key), None, "a value: each entry has %s, as the plan saw the node"
                                  % ", ".join(EXPECTED_KEYS))
        for key in sorted(set(seen) - set(EXPECTED_KEYS)):
            raise ValueRangeError("%s.%s" % (where, key), seen[key], "only %s" % ", ".join(EXPECTED_KEYS))
        for key in ("gated", "cordoned"):
            if not isinstance(seen[key], bool):
                raise ValueRangeError("%s.%s" % (where, key), seen[key], "true or false")
        if seen["gate_time"] is not None and not isinstance(seen["gate_time"], str):
            raise ValueRangeError(where + ".gate_time", seen["gate_time"], "the gate record's time (text), or null")
        taints = seen["taints"]
        if not isinstance(taints, list) or not all(isinstance(t, str) for t in taints):
            raise ValueRangeError(where + ".taints", taints, "a list of taints as text, key=value:effect or key:effect")
        checked[name] = dict(seen, taints=sorted(taints))
    return checked


def check_request(params, policy_given=None):
    """The task's options, validated and normalised before anything is read
    or written. Raises ValueRangeError naming the field.

    policy_given: whether the task set policy_state at all (a null removes
    the state; an option left out leaves it); by default, whether params
    has a policy_state that is not null."""
    prefix = metadata.check_prefix(params["prefix"])
    state = params["state"]
    if state not in STATES:
        raise ValueRangeError("state", state, "one of %s" % ", ".join(STATES))
    share = params["max_gated_share"]
    if not 0 < share <= 1:
        raise ValueRangeError("max_gated_share", share, "a fraction of the nodes, greater than 0 and at most 1")
    given = params.get("taints")
    wanted = node_taints.check_taints(given if given is not None else [DEFAULT_TAINT], prefix)
    labels = {}
    for key, value in (params.get("labels") or {}).items():
        field = "labels.%s" % key
        labels[metadata.owned_key(field, key, prefix)] = metadata.check_label_value(field, value)
    if metadata.record_key(prefix) in labels:
        raise ValueRangeError("labels", metadata.record_key(prefix), "any owned key but %s, which holds the gate record"
                              % metadata.record_key(prefix))
    if policy_given is None:
        policy_given = params.get("policy_state") is not None
    request = {"names": params.get("names") or [], "label_selector": params.get("label_selector"),
               "prefix": prefix, "state": state, "taints": wanted, "taints_given": given is not None,
               "labels": labels, "cordon": bool(params.get("cordon")), "max_gated_share": share,
               "fleet_label_selector": params.get("fleet_label_selector"), "force": bool(params.get("force")),
               "expected": check_expected(params.get("expected"))}
    if policy_given:
        request["policy"] = metadata.check_policy_state(params.get("policy_state"))
    return request


def changed_since_read(view, expected):
    """Why the node is no longer as the caller saw it (expected: its entry
    of check_expected), or None when it is; compared as a plan compares
    (domain.plan.changed_since)."""
    why = changed_since({"object": view["name"], "expected": expected}, seen_of_node(view))
    if why is None:
        return None
    detail = why.partition(" changed since plan: ")[2] or why
    return "%s changed since it was read: %s" % (view["name"], detail)


def _cordon_after(view, request, record):
    """(unschedulable, cordoned by the gate): the gate lifts only a cordon it set."""
    we_cordoned = bool(record and record.get("cordoned"))
    if request["state"] == "gated" and request["cordon"]:
        return True, we_cordoned or not view["unschedulable"]
    if we_cordoned:
        return False, False
    return view["unschedulable"], False


def plan_node(view, request, record_fields):
    """Before, after and the merge patch (None when nothing changes) for one
    node. record_fields: reason, time, by of a new gate record."""
    prefix, record = request["prefix"], view["gate"]
    unschedulable, we_cordoned = _cordon_after(view, request, record)
    if request["state"] == "gated":
        taints_after = node_taints.with_gate(view["taints"], request["taints"])
        still_ours = set(t["key"] for t in taints_after)
        keys = sorted(set(k for k in (record or {}).get("taints", []) if k in still_ours)
                      | set(t["key"] for t in request["taints"]))
        unchanged = taints_after == view["taints"] and unschedulable == view["unschedulable"]
        if record and unchanged and record.get("taints") == keys and bool(record.get("cordoned")) == we_cordoned:
            record_after = record
        else:
            record_after = dict((k, v) for k, v in record_fields.items() if v is not None)
            record_after.update(taints=keys, cordoned=we_cordoned)
    else:
        keys = set((record or {}).get("taints", []))
        if request["taints_given"] or not record:
            keys |= set(t["key"] for t in request["taints"])
        taints_after = node_taints.without_keys(view["taints"], keys, prefix)
        record_after = None
    labels_patch = metadata.label_changes(view["labels"], request["labels"])
    labels_after = dict(view["labels"], **labels_patch)
    labels_after = dict((k, v) for k, v in labels_after.items() if v is not None)
    after = {"taints": taints_after, "unschedulable": unschedulable, "labels": labels_after, "gate": record_after}
    if "policy" in request:
        after["policy"] = request["policy"]
    before = dict((key, view[key]) for key in after)
    patch = _patch(before, after, labels_patch, prefix)
    if "policy" in request and (after["policy"] != before["policy"] or view["policy_error"]
                                or (after["policy"] is None and view["policy_stored"])):
        text = metadata.policy_text(after["policy"]) if after["policy"] is not None else None
        patch = patch or {}
        patch.setdefault("metadata", {}).setdefault("annotations", {})[metadata.policy_key(prefix)] = text
    return {"before": before, "after": after, "patch": patch, "gate_changed": gate_changed(before, after)}


def gate_changed(before, after):
    """Whether the node was gated or opened (its gate taints, cordon or
    record changed), as opposed to only labels or the policy state."""
    return any(before[key] != after[key] for key in ("taints", "unschedulable", "gate"))


def _patch(before, after, labels_patch, prefix):
    patch = {}
    if after["taints"] != before["taints"]:
        patch.setdefault("spec", {})["taints"] = after["taints"] or None
    if after["unschedulable"] != before["unschedulable"]:
        patch.setdefault("spec", {})["unschedulable"] = after["unschedulable"] or None
    if labels_patch:
        patch.setdefault("metadata", {})["labels"] = labels_patch
    if after["gate"] != before["gate"]:
        text = metadata.record_text(after["gate"]) if after["gate"] is not None else None
        patch.setdefault("metadata", {})["annotations"] = {metadata.record_key(prefix): text}
    return patch or None


def is_closed(view, prefix):
    """Closed to new VMs: cordoned (by anyone) or carrying an owned NoSchedule
    taint. Foreign taints are not counted: they usually reserve a node for some
    workloads rather than close it."""
    return bool(view["unschedulable"]) or node_taints.closes(view["taints"], prefix)


def check_share(views, planned_after, request):
    """Refuses (GateRefusal) a task that would leave more than
    max_gated_share of all nodes closed to new VMs: a whole fleet gated is an
    outage. A task that closes no additional node is never refused.

    views: every node of the fleet (node_view): the cluster, or the nodes of
    fleet_label_selector; planned_after: name -> the planned `after` of the
    nodes this task changes."""
    prefix = request["prefix"]
    total = len(views)
    closed_before = sum(1 for view in views if is_closed(view, prefix))
    closed_after = sum(1 for view in views if is_closed(planned_after.get(view["name"], view), prefix))
    allowed = int(request["max_gated_share"] * total + 1e-9)
    fleet = {"nodes": total, "closed_before": closed_before, "closed_after": closed_after,
             "max_gated_share": request["max_gated_share"], "max_closed": allowed}
    if not request["force"] and closed_after > closed_before and closed_after > allowed:
        raise GateRefusal("refusing to gate: %d of %d nodes%s would be closed to new VMs (%d now), more than "
                          "max_gated_share=%g allows (%d nodes); nothing was changed; use force to override"
                          % (closed_after, total, " of %s" % request["fleet_label_selector"]
                             if request.get("fleet_label_selector") else "", closed_before,
                             request["max_gated_share"], allowed))
    return fleet
