# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-object results of a fleet task: each object run on its own (a
refusal is that object's result), one summary, one diff, one failure
message naming every object that failed. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from concurrent.futures import ThreadPoolExecutor

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import PER_OBJECT, ObjectRefusal, ValueRangeError


def started(name):
    """An object's result before anything was done to it."""
    return {"name": name, "changed": False}


def outcome(refusal):
    """What an object's result says of a per-object refusal (errors.PER_OBJECT):
    its own outcome (a conflict, a skip), else failed with the reason."""
    if isinstance(refusal, ObjectRefusal):
        return refusal.outcome()
    return {"failed": True, "msg": str(refusal)}


def each(items, one, start=started, workers=1):
    """One result per item, in order. one(item, result) fills `result`
    (start(item)) and may return another dict to use instead (an early
    answer). A per-object refusal it raises (errors.PER_OBJECT) is merged
    into what was filled so far as the refusal's outcome, and the other
    items go on. Up to `workers` items run at once."""
    def run(item):
        result = start(item)
        try:
            answer = one(item, result)
        except PER_OBJECT as exc:
            result.update(outcome(exc))
            return result
        return result if answer is None else answer
    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(run, items))
    return [run(item) for item in items]


def diff_entries(results, kind):
    """Ansible diff list: one before/after pair per object that changed."""
    entries = []
    for result in results:
        if result.get("changed"):
            label = "%s %s" % (kind, result["name"])
            entries.append({"before_header": label, "after_header": label,
                            "before": result.get("before", {}), "after": result.get("after", {})})
    return entries


def cap_line(result, restore, now, was, check_mode=False):
    """One object's line of a throttle or restore report: the cap now in
    force (`now`) and what it replaced (`was`), both as text, e.g.
    "web-17: 0.5 CPU, was unlimited" or "web-17: restored to unlimited (was
    0.5 CPU)". A failed object gives its reason."""
    name = result["name"]
    if result.get("failed"):
        return "%s: failed: %s" % (name, result.get("msg"))
    if result.get("skipped"):
        return "%s: skipped: %s" % (name, result.get("msg"))
    if result.get("conflict"):
        return "%s: left alone: %s" % (name, result.get("msg"))
    if not result.get("changed"):
        done = "nothing to restore" if restore else "unchanged"
        # now None: the object was not looked at in detail (never throttled).
        return "%s: %s" % (name, done) if now is None else "%s: %s, %s" % (name, now, done)
    would = "would be " if check_mode else ""
    if restore:
        return "%s: %srestored to %s (was %s)" % (name, would, now, was)
    return "%s: %s%s, was %s" % (name, would, now, was)


def report(results, describe):
    """Per object what was done, as one line each (describe(result) -> line);
    names skipped (not on this host) are only counted, on one line, as a
    fleet run names every target on every host (summary.skipped lists them)."""
    lines = [describe(r) for r in results if not r.get("skipped")]
    skipped = [r for r in results if r.get("skipped")]
    if skipped:
        reasons = sorted(set(r.get("msg") or "skipped" for r in skipped))
        lines.append("%d skipped (%s)" % (len(skipped), "; ".join(reasons)))
    return lines


def summary(results, describe=None):
    """Names per outcome, for people (a per-host summary) and for the task's
    own changed/failed status (an object left alone because it changed since
    the caller read it is a `conflict`, not a failure); with
    describe(result) -> line, also a report of what was done to each object."""
    failed = [r for r in results if r.get("failed")]
    outcome = {
        "changed": [r["name"] for r in results if r.get("changed") and not r.get("failed")],
        "unchanged": [r["name"] for r in results
                      if not (r.get("changed") or r.get("failed") or r.get("skipped") or r.get("conflict"))],
        "skipped": [r["name"] for r in results if r.get("skipped")],
        # Left alone: changed by someone else since the caller read it.
        "conflict": [r["name"] for r in results if r.get("conflict") and not r.get("failed")],
        "failed": dict((r["name"], r.get("msg")) for r in failed),
        "failure_msg": ("%d of %d failed: %s" % (len(failed), len(results), "; ".join(
            "%s: %s" % (r["name"], r.get("msg")) for r in failed))) if failed else None,
    }
    if describe is not None:
        outcome["report"] = report(results, describe)
    return outcome


def found_nowhere(requested, host_results, field="domains"):
    """The names of `requested` that no host handled: a fleet task names
    every target on every host (missing=ignore) and each host skips the ones
    it does not have, so a name skipped by every host that answered was a
    typo or a VM that is gone. host_results: each host's registered result
    (None for a host that did not run the task); the hosts that did not
    answer are left out, and when none answered every name is returned: no
    host handled any of them."""
    if not isinstance(requested, list) or not all(isinstance(name, str) for name in requested):
        raise ValueRangeError(field, requested, "a list of names")
    summaries = [result["summary"] for result in host_results or []
                 if isinstance(result, dict) and isinstance(result.get("summary"), dict)]
    if not summaries:
        return list(requested)
    seen = set()
    for outcome in summaries:
        seen.update(outcome.get("changed") or [])
        seen.update(outcome.get("unchanged") or [])
        seen.update(outcome.get("conflict") or [])
        seen.update(outcome.get("failed") or {})
    return [name for name in requested if name not in seen]


def _ran(steps):
    """(step, result) of each task that ran, a loop's results one by one."""
    if not isinstance(steps, dict):
        raise ValueRangeError("steps", type(steps).__name__, "a mapping of step name to a registered result")
    for step, result in steps.items():
        if not isinstance(result, dict):
            continue
        for one in result["results"] if isinstance(result.get("results"), list) else [result]:
            if isinstance(one, dict) and not (one.get("skipped") and "summary" not in one):
                yield step, one


def failures(steps):
    """What could not be done, one line per object, over several fleet tasks
    run one after the other: `steps` maps a step's name to its registered
    result (a loop's result too: each of its `results`), or to None for a
    step that did not run. An object a task failed on is "step: name:
    why"; a task that failed as a whole gives no summary (a bad option, a
    server that could not be reached; registered with failed_when: false
    it no longer says failed) and is "step: why"."""
    lines = []
    for step, one in _ran(steps):
        if isinstance(one.get("summary"), dict):
            lines.extend("%s: %s: %s" % (step, name, why)
                         for name, why in sorted((one["summary"].get("failed") or {}).items()))
        else:
            lines.append("%s: %s" % (step, one.get("msg") or "failed with no message"))
    return lines


def summaries(steps):
    """{step: its task's summary, or the list of a loop's} of the tasks
    that ran and summarised what they did."""
    out = {}
    for step, one in _ran(steps):
        if isinstance(one.get("summary"), dict):
            if isinstance((steps[step] or {}).get("results"), list):
                out.setdefault(step, []).append(one["summary"])
            else:
                out[step] = one["summary"]
    return out


def by_namespace(keys, field="names"):
    """{namespace: [name, ...]} of `namespace/name` keys, names in the order
    given: a module that takes one namespace per task runs once for each."""
    if not isinstance(keys, list):
        raise ValueRangeError(field, type(keys).__name__, "a list of namespace/name")
    grouped = {}
    for index, key in enumerate(keys):
        namespace, _sep, name = key.partition("/") if isinstance(key, str) else ("", "", "")
        if not namespace or not name or "/" in name:
            raise ValueRangeError("%s[%d]" % (field, index), key, "namespace/name")
        grouped.setdefault(namespace, []).append(name)
    return grouped


def exit_fleet(module, results, kind, key, describe=None, **extra):
    """Ends the module: every object's result under `key`; the task fails
    when any object failed, after the others were done. describe: see
    summary."""
    outcome = summary(results, describe)
    failure_msg = outcome.pop("failure_msg")
    payload = dict(extra, changed=any(r.get("changed") for r in results), summary=outcome, **{key: results})
    if module._diff:
        payload["diff"] = diff_entries(results, kind)
    if failure_msg:
        module.fail_json(msg=failure_msg, **payload)
    module.exit_json(**payload)
