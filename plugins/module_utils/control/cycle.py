# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage 3: one cycle of the closed loop is a plan made and applied at
once; this is what the cycle records afterwards and what it reports. Pure:
no I/O, no clock.

The policy's state goes back onto each object it changed (the memory of the
next cycle, whoever runs it), except onto an object whose action was not
applied (refused, failed, or left alone because another runner acted on it
first): its state stays as that runner or the object says."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans

OUTCOME_KEYS = ("applied", "done", "refused", "failed", "conflict")


def _not_applied(outcomes):
    skipped = set()
    for outcome in outcomes or []:
        if not isinstance(outcome, dict):
            raise ValueRangeError("outcomes", outcome, "plan_outcome results")
        for key in ("refused", "failed", "conflict"):
            skipped.update(outcome.get(key) or [])
    return skipped


def _applied(outcomes):
    applied = set()
    for outcome in outcomes or []:
        applied.update(outcome.get("applied") or [])
        applied.update(outcome.get("done") or [])
    return applied


def vm_states(plan, host, outcomes=None):
    """{domain name: state, or None to clear it} of the plan's VMs on
    `host` whose state the cycle changed and may store."""
    skipped = _not_applied(outcomes)
    prefix = host + "/"
    return dict((key[len(prefix):], state) for key, state in sorted(plan["state"]["vms"].items())
                if key.startswith(prefix) and key not in skipped)


def node_records(plan, outcomes=None):
    """[{name, state: gated|open, policy_state, taints}] for the nodes whose
    state the cycle changed: the gate each has after the cycle (as seen, or
    as the applied action left it), so that writing the state changes
    nothing else (taints: the gate's, with the effect the policy gave it,
    when its state says). policy_state {} clears it."""
    skipped, applied = _not_applied(outcomes), _applied(outcomes)
    actions = dict((a["object"], a) for a in plan["actions"] if a.get("node"))
    records = []
    for name, state in sorted(plan["state"]["nodes"].items()):
        key = "node/%s" % name
        if key in skipped or name not in plan.get("nodes", {}):
            continue
        gated = plan["nodes"][name]["gated"]
        if key in actions and key in applied:
            gated = actions[key]["action"] == "gate"
        record = {"name": name, "state": "gated" if gated else "open", "policy_state": state or {}}
        if gated and (state or {}).get("effect"):
            record["taints"] = [{"key": "gated", "effect": state["effect"]}]
        records.append(record)
    return records


def summary(plan, outcomes, mode, check_mode=False):
    """The cycle's artefact: what it decided and what became of each action."""
    totals = dict((key, sorted(set(o for outcome in outcomes or [] for o in outcome.get(key) or [])))
                  for key in OUTCOME_KEYS)
    lines = []
    for outcome in outcomes or []:
        lines.extend(outcome.get("lines") or [])
    if mode == "dry_run":
        lines = ["dry run, nothing applied: %s" % line for line in plan.get("summary", [])]
    lines += ["held by the kill switch: %s: %s" % (a["object"], a.get("held")) for a in plan.get("held") or []]
    if mode != "dry_run":
        # A dry run's lines are the plan's summary, which names them already.
        lines += ["not measured: %s: %s" % (s.get("host"), s.get("reason")) for s in plan.get("skipped") or []]
        lines += [plans.proposal_line(p) for p in plan.get("proposals") or []]
    return {"cycle": plan["id"], "time": plan["created"], "mode": mode, "check_mode": bool(check_mode),
            "actions": plan["actions"], "held": plan.get("held") or [], "deferred": plan.get("deferred") or [],
            "notes": plan.get("notes") or [], "skipped": plan.get("skipped") or [],
            "proposals": plan.get("proposals") or [],
            "unmeasured": plan.get("unmeasured") or {}, "outcome": totals, "lines": lines or ["nothing to do"]}
