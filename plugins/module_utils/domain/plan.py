# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A recommended plan as an artefact a person approves and a later run
applies exactly. Pure: no I/O, no clock (the caller says what time it is).

A plan is the policy's actions with what each one saw of its object (the
cap in force and the time of its throttle record; for a node, whether it was
gated and since when), an id, when it was made and until when it may be
applied. Applying checks, per object, that the object still is as the plan
saw it, and refuses the whole plan once it has expired."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
from datetime import datetime, timezone

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal, ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import actions as action_table
from ansible_collections.overcommit.control.plugins.module_utils.domain.cpu import cpus_text

VERSION = 1
DEFAULT_TTL_SECONDS = 3600
# Caps are compared as the modules report them, to the millicpu.
CAP_TOLERANCE = 0.0005


# What a plan sees of an object: what applying compares with the object then.

def taint_text(taint):
    value = taint.get("value")
    return "%s%s:%s" % (taint.get("key"), "" if value in (None, "") else "=%s" % value, taint.get("effect"))


def seen_of_domain(domain):
    """A libvirt domain as a plan sees it: the cap in force and the time of
    its throttle record (a hand throttle or restore changes one of them)."""
    record = domain.get("throttle") or {}
    return {"cap_cpus": domain.get("cap_cpus"), "throttle_time": record.get("time")}


def seen_of_node(node):
    """A Kubernetes node as a plan sees it: gated or not, since when, and
    its taints and cordon (someone editing them by hand changes these)."""
    gate = node.get("gate") or {}
    return {"gated": bool(node.get("gate")), "gate_time": gate.get("time"),
            "taints": sorted(taint_text(t) for t in node.get("taints") or []),
            "cordoned": bool(node.get("unschedulable"))}


def applied_plan(obj):
    """The plan id in an object's throttle or gate record, or None."""
    return ((obj.get("throttle") or obj.get("gate")) or {}).get("plan")


class PlanExpired(ObjectRefusal):
    """The plan's time to live has passed: nothing of it may be applied."""


def _rfc3339(unix):
    return datetime.fromtimestamp(unix, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def change_text(action):
    """What an action does, in words an approver reads."""
    kind = action["action"]
    if action_table.sets_cap(kind):
        return "%s to %s, was %s" % (kind, cpus_text(action["cpus"]), cpus_text(action.get("previous_cpus")))
    if kind == "weight":
        was = action.get("previous_shares")
        how = "raise" if was is not None and action["shares"] > was else "demote"
        request = " (CPU request %s)" % action["cpu_request"] if action.get("cpu_request") else ""
        return "%s CPU weight to %g%s, was %s" % (how, action["shares"], request, "unknown" if was is None else "%g" % was)
    if kind == "restore":
        return "restore exactly (now %s)" % cpus_text(action.get("previous_cpus"))
    if kind == "migrate":
        node = " (node %s)" % action["to_node"] if action.get("to_node") else ""
        return "move live to %s%s, with its records" % (action["to"], node)
    if kind == "gate" and action.get("effect"):
        return "gate node (%s)" % action["effect"]
    return "%s node" % kind


def make(policy_plan, seen, now, ttl_seconds=DEFAULT_TTL_SECONDS):
    """The artefact of one recommendation. policy_plan: what policy.decide
    returned; seen: {object: {...}} what each object looked like when the
    policy decided (vm: cap_cpus and throttle_time; node: gated and
    gate_time), keyed as the actions' `object`."""
    if not isinstance(ttl_seconds, (int, float)) or isinstance(ttl_seconds, bool) or ttl_seconds <= 0:
        raise ValueRangeError("ttl_seconds", ttl_seconds, "a number of seconds above 0")
    actions = []
    for action in policy_plan["actions"]:
        if action["object"] not in seen:
            raise ValueRangeError("seen", action["object"], "what the plan saw of every object it acts on")
        actions.append(dict(action, change=change_text(action), expected=seen[action["object"]]))
    body = {"version": VERSION, "created": _rfc3339(now), "created_unix": int(now),
            "expires_unix": int(now + ttl_seconds), "expires": _rfc3339(int(now + ttl_seconds)),
            "ttl_seconds": ttl_seconds, "actions": actions,
            "deferred": policy_plan.get("deferred", []), "held": policy_plan.get("held", []),
            "notes": policy_plan.get("notes", []), "proposals": policy_plan.get("proposals", []),
            "state": policy_plan.get("state", {})}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()[:10]
    body["id"] = "plan-%s-%s" % (body["created"].replace("-", "").replace(":", ""), digest)
    return body


def summary(plan):
    """One line per action, held or deferred action and unmeasured host, for
    the job's output and the approver."""
    lines = ["%s: %s (%s: %s)" % (a["object"], a["change"], a["rule"], a["reason"]) for a in plan["actions"]]
    lines += ["held: %s: %s" % (a["object"], a["held"]) for a in plan.get("held", [])]
    lines += ["deferred: %s: %s" % (a["object"], a["deferred"]) for a in plan.get("deferred", [])]
    lines += ["not measured: %s: %s" % (s["host"], s["reason"]) for s in plan.get("skipped", [])]
    lines += [proposal_line(p) for p in plan.get("proposals", [])]
    return lines


def proposal_line(proposal):
    """A proposed move in words: never applied by the collection."""
    where = "to %s" % proposal["to"] if proposal.get("to") else "(no host to move it to)"
    return "proposal, not applied: move %s from %s %s: %s" % (
        proposal["object"], proposal["host"], where, proposal["reason"])


def unmeasured(skipped, hosts, allowed_share=0.0):
    """Whether what a run could not measure fails it: each entry of the
    plan's `skipped` (a host, a node, a KubeVirt source or VM) counts as one
    of the `hosts` the run was to measure, and more than `allowed_share` of
    them fails the run. Returns {count, hosts, allowed_share, fail, msg}."""
    try:
        allowed_share = float(allowed_share)
    except (TypeError, ValueError):
        raise ValueRangeError("max_unmeasured_share", allowed_share, "a share from 0 to 1")
    if not 0 <= allowed_share <= 1:
        raise ValueRangeError("max_unmeasured_share", allowed_share, "a share from 0 to 1")
    count, hosts = len(skipped or []), max(int(hosts or 0), 1)
    fail = count > allowed_share * hosts
    msg = ""
    if fail:
        msg = ("%d of %d hosts (or their KubeVirt VMs or nodes) could not be measured, more than max_unmeasured_share=%g "
               "allows: %s" % (count, hosts, allowed_share,
                               "; ".join("%s: %s" % (s.get("host"), s.get("reason")) for s in skipped)))
    return {"count": count, "hosts": hosts, "allowed_share": allowed_share, "fail": fail, "msg": msg}


def check(plan, now):
    """Refuses, before anything is applied, a plan that is not one or has
    expired. Returns the plan."""
    if not isinstance(plan, dict) or plan.get("version") != VERSION or "id" not in plan:
        raise ValueRangeError("plan", type(plan).__name__, "a plan made by the recommend role (version %d)" % VERSION)
    if now > plan["expires_unix"]:
        raise PlanExpired("plan %s expired at %s (%d s ago): nothing was applied; make a new one"
                          % (plan["id"], _rfc3339(plan["expires_unix"]), now - plan["expires_unix"]))
    return plan


def select(plan, only):
    """The actions an approver picked by object name (VM name, namespace/name
    or node name, or the action's `object`); all of them when `only` is
    empty. Names that match no action are refused, naming `only`."""
    if not only:
        return list(plan["actions"])
    names = set(only)
    matched = [a for a in plan["actions"] if names & {a["object"], a.get("vm"), a.get("node")}]
    known = set()
    for action in plan["actions"]:
        known.update(name for name in (action["object"], action.get("vm"), action.get("node")) if name)
    unknown = sorted(names - known)
    if unknown:
        raise ValueRangeError("only", unknown[0], "objects of plan %s: %s" % (plan["id"], ", ".join(sorted(known))))
    return matched


def changed_since(action, now_seen):
    """Why the object is no longer as the plan saw it, or None when it is."""
    expected = action["expected"]
    for key in sorted(set(expected) | set(now_seen)):
        before, after = expected.get(key), now_seen.get(key)
        if key == "cap_cpus" and before is not None and after is not None:
            if abs(before - after) <= CAP_TOLERANCE:
                continue
        elif before == after:
            continue
        return "%s changed since plan: %s was %s, is %s now" % (
            action["object"], key, _shown(key, before), _shown(key, after))
    return None


EXPECTED_KEYS = ("cap_cpus", "throttle_time")


def check_expected(field, expected, read_by):
    """Option `expected` of a brake ({object name: {cap_cpus, throttle_time}},
    what the caller read of each object), each entry with both keys; raises
    ValueRangeError naming the field and the allowed values."""
    if expected is None:
        return {}
    if not isinstance(expected, dict):
        raise ValueRangeError(field, type(expected).__name__, "a mapping of object name to what %s read" % read_by)
    out = {}
    for name, seen in expected.items():
        entry = "%s.%s" % (field, name)
        if not isinstance(seen, dict):
            raise ValueRangeError(entry, seen, "a mapping with cap_cpus (CPUs or null) and throttle_time (text or "
                                               "null), as %s read them" % read_by)
        unknown = sorted(set(seen) - set(EXPECTED_KEYS))
        if unknown:
            raise ValueRangeError("%s.%s" % (entry, unknown[0]), seen[unknown[0]],
                                  "only the keys %s" % ", ".join(EXPECTED_KEYS))
        cap = seen.get("cap_cpus")
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float)) or cap <= 0):
            raise ValueRangeError(entry + ".cap_cpus", cap, "a number of CPUs above 0, or null for unlimited")
        when = seen.get("throttle_time")
        if when is not None and not isinstance(when, str):
            raise ValueRangeError(entry + ".throttle_time", when, "the throttle record's time as text, or null")
        out[name] = {"cap_cpus": None if cap is None else float(cap), "throttle_time": when}
    return out


def changed_since_read(name, expected, seen):
    """Why an object is not as the caller read it (the brakes' compare-and-
    swap), or None when it is."""
    why = changed_since({"object": name, "expected": expected}, seen)
    if why is None:
        return None
    # changed_since speaks of a plan; here the caller's read is what is compared.
    prefix = "%s changed since plan: " % name
    return "%s changed since it was read: %s" % (name, why[len(prefix):] if why.startswith(prefix) else why)


def _shown(key, value):
    if key == "cap_cpus":
        return cpus_text(value)
    return "none" if value is None else str(value)


def is_done(action, current, plan_id):
    """Whether the object already is as the action leaves it: this plan's
    record with the planned cap or gate on it, or (restore, open) no cap or
    gate left at all, whoever removed it."""
    seen = current.get("seen") or {}
    kind = action["action"]
    if kind == "migrate":
        # Still here: not moved (a moved VM is found on its target by the move's module).
        return False
    if action_table.sets_cap(kind):
        cap = seen.get("cap_cpus")
        return current.get("plan") == plan_id and cap is not None and abs(cap - action["cpus"]) <= CAP_TOLERANCE
    if kind == "weight":
        # The weight is in this plan's own record: nothing else sets it.
        return current.get("plan") == plan_id
    if kind == "restore":
        return seen.get("cap_cpus") is None and not seen.get("throttle_time")
    if kind == "gate":
        return current.get("plan") == plan_id and bool(seen.get("gated"))
    return not seen.get("gated")


def review(plan, actions, live, now):
    """Splits actions of the plan into those to apply, those already done
    and those refused with the reason. live: {object: {seen: what the
    object looks like now (as the plan recorded it), plan: the plan id in
    its record}} for every object the caller read; an object missing there
    is gone. A plan that expired meanwhile refuses everything left."""
    out = {"plan": plan["id"], "apply": [], "done": [], "refused": []}
    expired = now > plan["expires_unix"]
    for action in actions:
        current = live.get(action["object"])
        if current is None and action["action"] == "migrate" and not expired:
            # Moved already, or gone: the move's module looks on the target and says which.
            out["apply"].append(dict(action, call=action_table.call(action)))
            continue
        if current is None:
            why = "%s not found: it is gone since the plan was made" % action["object"]
        elif current.get("unreadable"):
            why = "%s could not be read: %s" % (action["object"], current["unreadable"])
        elif is_done(action, current, plan["id"]):
            out["done"].append(action)
            continue
        elif expired:
            why = "plan %s expired at %s" % (plan["id"], _rfc3339(plan["expires_unix"]))
        else:
            why = changed_since(action, current.get("seen") or {})
        if why:
            out["refused"].append(dict(action, refused=why))
        else:
            # The module and arguments that carry it out, from the one action table.
            out["apply"].append(dict(action, call=action_table.call(action)))
    return out


def _failure(result):
    """Why a module's result for one object failed, or None."""
    if result.get("failed"):
        return result.get("msg") or "failed"
    for entry in result.get("domains") or result.get("nodes") or result.get("vms") or []:
        if entry.get("failed"):
            return entry.get("msg") or "failed"
    return None


def _arrived(result):
    """Whether a move's module found the VM already on its target."""
    return any(entry.get("already") for entry in result.get("domains") or result.get("vms") or [])


def _conflict(result):
    """Why the module left the object alone because it changed since it was
    read (another runner acted on it first), or None."""
    for entry in result.get("domains") or result.get("nodes") or result.get("vms") or []:
        if entry.get("conflict"):
            return entry.get("msg") or "changed since it was read"
    return None


def outcome(review, results, check_mode=False):
    """Per object what applying a review did. results: [(action, the
    module's result for it)] for the actions of review['apply']."""
    out = {"plan": review["plan"], "applied": [], "done": [], "refused": [], "failed": [], "conflict": [], "lines": []}
    verb = "would apply" if check_mode else "applied"
    for action, result in results:
        why, raced = _failure(result), _conflict(result)
        if why:
            out["failed"].append(action["object"])
            out["lines"].append("failed: %s: %s: %s" % (action["object"], action["change"], why))
        elif _arrived(result):
            out["done"].append(action["object"])
            out["lines"].append("already applied: %s: %s" % (action["object"], action["change"]))
        elif raced:
            out["conflict"].append(action["object"])
            out["lines"].append("left alone: %s: %s" % (action["object"], raced))
        else:
            out["applied"].append(action["object"])
            out["lines"].append("%s: %s: %s (%s)" % (verb, action["object"], action["change"], action["rule"]))
    for action in review["done"]:
        out["done"].append(action["object"])
        out["lines"].append("already applied: %s: %s" % (action["object"], action["change"]))
    for action in review["refused"]:
        out["refused"].append(action["object"])
        out["lines"].append("refused: %s: %s" % (action["object"], action["refused"]))
    return out


def unreached(plan, actions, hosts):
    """The outcome of `actions` (of the plan) on VMs of hypervisor `hosts`
    that reported none: not applied, each a failure naming its host, so a
    host the run could not reach (or whose play failed) is never silent."""
    out = {"plan": plan["id"], "applied": [], "done": [], "refused": [], "failed": [], "conflict": [], "lines": []}
    for action in actions:
        if action.get("vm") and action_table.platform_of(action) == action_table.LIBVIRT and action["host"] in hosts:
            out["failed"].append(action["object"])
            out["lines"].append("not applied: %s: %s: host %s was not reached (unreachable, or its play failed)" % (
                action["object"], action["change"], action["host"]))
    return out
