# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The control policy's state between cycles and the kill switch, kept on
many libvirt domains as one metadata element each (domain_xml.policy_xml).

`plan_policy` decides what one target of one domain should hold. Pure:
policy_state_runner.py reads, plans and writes many domains."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml, plan
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.domain_xml import CONFIG, LIVE
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.cputune import check_name_keys
STATE_ALLOWED = "a mapping of the policy state (JSON values: no NaN or infinity), or null to remove it"


def normalised_state(field, state):
    """The state as it reads back once stored (JSON round trip), None for
    None; raises ValueRangeError naming `field` when it is neither a
    mapping nor None, or not JSON."""
    if state is None:
        return None
    if not isinstance(state, dict):
        raise ValueRangeError(field, state, STATE_ALLOWED)
    try:
        return json.loads(domain_xml.state_text(state))
    except (TypeError, ValueError) as exc:
        raise ValueRangeError(field, state, "%s (%s)" % (STATE_ALLOWED, exc))


def check_states(states):
    """Checks option `states` and returns it normalised (normalised_state)."""
    check_name_keys("states", states)
    return dict((name, normalised_state("states.%s" % name, state)) for name, state in (states or {}).items())


def view(current):
    """What one target holds, as results show it."""
    return {"policy": current["state"], "pause": current["pause"]}


def plan_policy(current, wanted, pause_fields):
    """What one target of a domain should hold. current: domain_xml's
    parsed element ({state, pause, error}); wanted: {state: normalised state
    or None} when the task sets or removes it, {paused: bool} when it sets or
    clears the kill switch; pause_fields: {reason, by, time} of a new pause.

    A pause already set stays as it is (who and when) unless the task gives
    a different reason; clearing it removes who, why and when too. Returns
    the new {state, pause}; raises plan.PlanError when the stored state
    cannot be read and the task does not replace it."""
    state, pause = current["state"], current["pause"]
    if "state" in wanted:
        state = wanted["state"]
    elif current.get("error"):
        raise plan.PlanError("%s: give this domain a new state, or null to remove it, in states" % current["error"],
                             "states")
    if wanted.get("paused") is True:
        reason = pause_fields.get("reason")
        if pause is None or (reason is not None and reason != pause.get("reason")):
            pause = dict((key, value) for key, value in pause_fields.items() if value is not None)
    elif wanted.get("paused") is False:
        pause = None
    return {"state": state, "pause": pause}


def report_line(result, check_mode=False):
    """One domain's line of the task's report."""
    name = result["name"]
    if result.get("failed"):
        return "%s: failed: %s" % (name, result.get("msg"))
    if result.get("skipped"):
        return "%s: skipped: %s" % (name, result.get("msg"))
    paused = "paused" if result.get("paused") else "not paused"
    if not result.get("changed"):
        return "%s: unchanged (%s)" % (name, paused)
    before, after = result.get("before") or {}, result.get("after") or {}
    target = LIVE if LIVE in after else CONFIG
    was, now = before.get(target) or {}, after.get(target) or {}
    done = []
    if was.get("policy") != now.get("policy"):
        done.append("state removed" if now.get("policy") is None else "state written")
    if was.get("pause") != now.get("pause"):
        done.append("unpaused" if now.get("pause") is None else "paused")
    return "%s: %s%s" % (name, "would be: " if check_mode else "", ", ".join(done) or "written")


def check_request(params, check_mode):
    """The task's options as a request, checked before anything is read or
    changed; raises ValueRangeError naming the field and the allowed
    values. `targets`: the domains in order, those with a state first."""
    if params.get("states") is None and params.get("paused") is None:
        raise ValueRangeError("states", None, "a mapping of domain name to policy state, or paused "
                                              "with domains (at least one of them)")
    if params.get("paused") is not None and not params.get("domains"):
        raise ValueRangeError("domains", params.get("domains"),
                              "names of the domains to pause or unpause, needed with paused")
    if params.get("domains") and params.get("paused") is None:
        raise ValueRangeError("paused", None, "true or false, needed with domains")
    states = check_states(params.get("states"))
    targets = list(states) + [name for name in params.get("domains") or [] if name not in states]
    return dict(params, check_mode=check_mode, states=states, targets=targets)
