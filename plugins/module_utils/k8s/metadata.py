# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes names, the keys this collection owns, and the records it keeps
under them that more than one feature reads: a node's gate record, the
control policy's state and the kill switch (node_view). Pure: no I/O.

Everything the collection writes on an object (labels, taints, annotations)
has a key under one configurable prefix; keys of other owners are never
changed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.overcommit.control.plugins.module_utils.common import untrusted
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.common.names import check_names
from ansible_collections.overcommit.control.plugins.module_utils.common.record import RECORD_SCHEMA, SCHEMA_FIELD, \
    schema_refusal

DEFAULT_PREFIX = "overcommit.control/"
# Names under the prefix: the gate record and the policy state (annotations),
# the kill switch (a label).
RECORD_NAME = "gate"
POLICY_NAME = "policy"
PAUSED_NAME = "paused"
_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def check_prefix(prefix, field="prefix"):
    """A key prefix: a DNS subdomain followed by '/', as Kubernetes requires
    for the prefix of a qualified name."""
    if not prefix.endswith("/") or len(prefix) > 254 or not _DNS_SUBDOMAIN.match(prefix[:-1]):
        raise ValueRangeError(field, prefix, "a DNS subdomain followed by '/', e.g. %s" % DEFAULT_PREFIX)
    return prefix


def check_name_part(field, value):
    if not value or len(value) > 63 or not _NAME.match(value):
        raise ValueRangeError(field, value, "1..63 characters [A-Za-z0-9-_.], starting and ending alphanumeric")
    return value


def check_object_name(field, value):
    """A node's (or any cluster-scoped object's) name: a DNS subdomain."""
    if not isinstance(value, str) or len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
        raise ValueRangeError(field, value, "a DNS subdomain name: lower-case alphanumerics, '-' and '.', at most 253 "
                                            "characters, starting and ending alphanumeric")
    return value


def owned_key(field, key, prefix):
    """A key this collection may write: a short name gets the prefix; a full
    key must already be under it (keys of other owners are not ours to set)."""
    if "/" not in key:
        return prefix + check_name_part(field, key)
    if not key.startswith(prefix):
        raise ValueRangeError(field, key, "a key under the prefix %r (or a short name, which gets the prefix): "
                                          "keys of other owners are never changed" % prefix)
    check_name_part(field, key[len(prefix):])
    return key


def check_label_value(field, value):
    if value is None:
        return None
    value = str(value)
    if value and (len(value) > 63 or not _NAME.match(value)):
        raise ValueRangeError(field, value, "empty or 1..63 characters [A-Za-z0-9-_.], starting and ending "
                                            "alphanumeric")
    return value


def owned(mapping, prefix):
    """The entries of a labels/annotations mapping that this collection owns."""
    return dict((key, value) for key, value in (mapping or {}).items() if key.startswith(prefix))


def label_changes(current, wanted):
    """A merge patch for labels: wanted values that differ, None to remove."""
    current = current or {}
    return dict((key, value) for key, value in wanted.items() if current.get(key) != value
                and not (value is None and key not in current))


def record_key(prefix):
    return prefix + RECORD_NAME


def policy_key(prefix):
    return prefix + POLICY_NAME


def paused_key(prefix):
    return prefix + PAUSED_NAME


def policy_text(state):
    """The annotation's text of a policy state: compact JSON, sorted keys,
    with the record schema it is in (common.record)."""
    return json.dumps(dict(state, **{SCHEMA_FIELD: RECORD_SCHEMA}), sort_keys=True, separators=(",", ":"))


def _stored(text):
    """(mapping, why not) of an annotation's JSON text, without its schema
    field; a record of a newer schema is not read."""
    try:
        value = untrusted.loads(text)
    except (TypeError, ValueError) as exc:
        return None, "the annotation is not valid JSON (%s)" % exc
    if not isinstance(value, dict):
        return None, "the annotation holds a %s, not a mapping" % type(value).__name__
    why = schema_refusal(value.get(SCHEMA_FIELD))
    if why:
        return None, why
    return dict((key, item) for key, item in value.items() if key != SCHEMA_FIELD), None


def check_policy_state(value, field="policy_state"):
    """A policy state to store: a mapping (JSON), or None to remove it; an
    empty mapping is no state and removes it too."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueRangeError(field, value, "a mapping (the policy's state of the node), or null to remove it")
    if SCHEMA_FIELD in value:
        raise ValueRangeError("%s.%s" % (field, SCHEMA_FIELD), value[SCHEMA_FIELD],
                              "no such key: the stored annotation keeps its record schema there")
    try:
        policy_text(value)
    except (TypeError, ValueError) as exc:
        raise ValueRangeError(field, value, "a mapping JSON can hold (%s)" % exc)
    return value or None


def normalise_taint(taint):
    """A taint as the API returns it, reduced to what identifies and matters."""
    entry = {"key": taint["key"], "effect": taint.get("effect")}
    if taint.get("value"):
        entry["value"] = taint["value"]
    if taint.get("timeAdded"):
        entry["timeAdded"] = taint["timeAdded"]
    return entry


def parse_record(text):
    return _stored(text)[0]


def record_text(record):
    """The gate record annotation's text, in the current record schema."""
    return json.dumps(dict(record, **{SCHEMA_FIELD: RECORD_SCHEMA}), sort_keys=True)


def record_error(annotations, prefix):
    """Why the gate record annotation on a node cannot be read (not JSON,
    not a mapping, a newer schema), naming the annotation, or None (none
    there, or readable)."""
    key = record_key(prefix)
    if key not in annotations:
        return None
    text = annotations[key]
    why = _stored(text)[1]
    if why is None:
        return None
    shown = text if len(text) <= 40 else "%s... (%d characters)" % (text[:40], len(text))
    if why.startswith("the annotation"):
        return ("the gate record in annotation %s cannot be read (%r is not a JSON mapping); nothing was changed: "
                "correct or remove the annotation" % (key, shown))
    return "the gate record in annotation %s cannot be read: %s; nothing was changed" % (key, why)


def parse_policy(text):
    """(policy state, why it cannot be read) of the annotation's text: a
    state is a mapping; no annotation is (None, None)."""
    if text is None:
        return None, None
    return _stored(text)


def node_view(node, prefix):
    """What the gate looks at on one Node object (the API's JSON)."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    annotations = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    policy, policy_error = parse_policy(annotations.get(policy_key(prefix)))
    return {
        "name": meta.get("name"),
        "taints": [normalise_taint(t) for t in spec.get("taints") or []],
        "unschedulable": bool(spec.get("unschedulable")),
        "labels": owned(labels, prefix),
        "gate": parse_record(annotations.get(record_key(prefix))) if record_key(prefix) in annotations else None,
        "gate_error": record_error(annotations, prefix),
        "policy": policy,
        "policy_error": policy_error,
        "policy_stored": policy_key(prefix) in annotations,
        "paused": labels.get(paused_key(prefix)) == "true",
    }


def check_policy_state_request(params, check_key, what):
    """A policy-state task's options (states, names, paused, missing,
    prefix), checked before any API call: {wanted: {key: {state, paused}},
    missing, keys}. check_key(field, key) refuses a key that names no object
    of the kind; `what` says what a key is ("node name", "namespace/name")."""
    states = params.get("states")
    if states is not None and not isinstance(states, dict):
        raise ValueRangeError("states", type(states).__name__, "a mapping of %s to a policy state" % what)
    if params.get("paused") is not None and not params.get("names"):
        raise ValueRangeError("names", params.get("names"), "the objects (%s) whose kill switch `paused` sets" % what)
    if states is None and params.get("paused") is None:
        raise ValueRangeError("states", None, "a mapping of %s to a policy state, or `paused` with names" % what)
    check_names({"states": list(states or {}), "names": params.get("names") or []}, ("states", "names"))
    wanted = {}
    for key, state in (states or {}).items():
        check_key("states.%s" % key, key)
        wanted.setdefault(key, {})["state"] = check_policy_state(state, "states.%s" % key) or None
    for index, key in enumerate(params.get("names") or []):
        check_key("names[%d]" % index, key)
        if params.get("paused") is not None:
            wanted.setdefault(key, {})["paused"] = bool(params["paused"])
    prefix = check_prefix(params["prefix"])
    return {"wanted": wanted, "missing": params["missing"],
            "keys": {"policy": policy_key(prefix), "paused": paused_key(prefix)}}


def policy_patch(obj, wanted, keys):
    """The annotation that makes an object's policy state `wanted["state"]`
    (None: removed), or None when it is so already or `wanted` has no state."""
    if "state" not in wanted:
        return None
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(keys["policy"])
    state, error = parse_policy(text)
    target = wanted["state"]
    if target == state and not error and (target is not None or text is None):
        return None
    return {"metadata": {"annotations": {keys["policy"]: None if target is None else policy_text(target)}}}


def is_paused(obj, keys):
    return ((obj.get("metadata") or {}).get("labels") or {}).get(keys["paused"]) == "true"


def paused_patch(obj, paused, keys):
    """The label that sets (paused) or clears the kill switch, or None."""
    if is_paused(obj, keys) == paused:
        return None
    return {"metadata": {"labels": {keys["paused"]: "true" if paused else None}}}


def policy_state_line(result, check_mode=False):
    """One object's line of a policy-state task's report (VMs, nodes)."""
    if result.get("failed"):
        return "%s: failed: %s" % (result["name"], result.get("msg"))
    if result.get("skipped"):
        return "%s: skipped: %s" % (result["name"], result.get("msg"))
    done = []
    if "policy" in result:
        done.append("state %s" % ("removed" if result["policy"] is None else "written"))
    if "paused" in result:
        done.append("paused" if result["paused"] else "not paused")
    text = ", ".join(done)
    if not result.get("changed"):
        return "%s: unchanged (%s)" % (result["name"], text)
    return "%s: %s%s" % (result["name"], "would be: " if check_mode else "", text)
