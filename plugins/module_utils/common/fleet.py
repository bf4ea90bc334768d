# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-object results of a fleet task: one summary, one diff, one failure
message naming every object that failed. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def diff_entries(results, kind):
    """Ansible diff list: one before/after pair per object that changed."""
    entries = []
    for result in results:
        if result.get("changed"):
            label = "%s %s" % (kind, result["name"])
            entries.append({"before_header": label, "after_header": label,
                            "before": result.get("before", {}), "after": result.get("after", {})})
    return entries


def summary(results):
    """Names per outcome, for people (a per-host summary) and for the task's
    own changed/failed status."""
    failed = [r for r in results if r.get("failed")]
    return {
        "changed": [r["name"] for r in results if r.get("changed") and not r.get("failed")],
        "unchanged": [r["name"] for r in results if not (r.get("changed") or r.get("failed") or r.get("skipped"))],
        "skipped": [r["name"] for r in results if r.get("skipped")],
        "failed": dict((r["name"], r.get("msg")) for r in failed),
        "failure_msg": ("%d of %d failed: %s" % (len(failed), len(results), "; ".join(
            "%s: %s" % (r["name"], r.get("msg")) for r in failed))) if failed else None,
    }


def exit_fleet(module, results, kind, key, **extra):
    """Ends the module: every object's result under `key`; the task fails
    when any object failed, after the others were done."""
    outcome = summary(results)
    failure_msg = outcome.pop("failure_msg")
    payload = dict(extra, changed=any(r.get("changed") for r in results), summary=outcome, **{key: results})
    if module._diff:
        payload["diff"] = diff_entries(results, kind)
    if failure_msg:
        module.fail_json(msg=failure_msg, **payload)
    module.exit_json(**payload)
