# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The control policy's state and the kill switch on KubeVirt VMs: the
state in the VMI's annotation <prefix>policy (compact JSON, as on nodes),
the kill switch as the label <prefix>paused=true on the VirtualMachine that
owns the VMI (so that it outlives a restart) or on a VMI of its own. Each
write is a merge patch carrying the resourceVersion it was planned from.
Pure: the request and the patches; policy_state_runner.py writes them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.common.names import check_names
from ansible_collections.overcommit.control.plugins.module_utils.k8s import metadata

MISSING = ("fail", "ignore")


def _split(field, key):
    namespace, _sep, name = key.partition("/")
    if not namespace or not name or "/" in name:
        raise ValueRangeError(field, key, "a VMI named namespace/name")
    return namespace, name


def check_request(params):
    """The task's options, checked before any API call."""
    states = params.get("states")
    if states is not None and not isinstance(states, dict):
        raise ValueRangeError("states", type(states).__name__, "a mapping of namespace/name to a policy state")
    if params.get("paused") is not None and not params.get("names"):
        raise ValueRangeError("names", params.get("names"), "the VMs (namespace/name) whose kill switch `paused` sets")
    if states is None and params.get("paused") is None:
        raise ValueRangeError("states", None, "a mapping of namespace/name to a policy state, or `paused` with names")
    check_names({"states": list(states or {})}, ("states",))
    wanted = {}
    for key, state in (states or {}).items():
        _split("states.%s" % key, key)
        wanted.setdefault(key, {})["state"] = metadata.check_policy_state(state, "states.%s" % key) or None
    for index, key in enumerate(params.get("names") or []):
        _split("names[%d]" % index, key)
        if params.get("paused") is not None:
            wanted.setdefault(key, {})["paused"] = bool(params["paused"])
    prefix = metadata.check_prefix(params["prefix"])
    return {"wanted": wanted, "missing": params["missing"],
            "keys": {"policy": metadata.policy_key(prefix), "paused": metadata.paused_key(prefix)}}


def _paused(obj, keys):
    return ((obj.get("metadata") or {}).get("labels") or {}).get(keys["paused"]) == "true"


def policy_patch(vmi, wanted, keys):
    """The VMI annotation that makes its state `wanted["state"]`, or None."""
    if "state" not in wanted:
        return None
    text = ((vmi.get("metadata") or {}).get("annotations") or {}).get(keys["policy"])
    state, error = metadata.parse_policy(text)
    target = wanted["state"]
    if target == state and not error and (target is not None or text is None):
        return None
    return {"metadata": {"annotations": {keys["policy"]: None if target is None else metadata.policy_text(target)}}}


def paused_patch(obj, paused, keys):
    """The label that sets (paused) or clears the kill switch, or None."""
    if _paused(obj, keys) == paused:
        return None
    return {"metadata": {"labels": {keys["paused"]: "true" if paused else None}}}


def report_line(result, check_mode=False):
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
