# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What libvirt CPU tuning to set, and in which order. Pure: no I/O.

Tuning is a dict of libvirt's typed scheduler parameters. Live values always
hold numbers (period 100000 and quota -1 when nothing is set); persistent
config values use 0 for "not set".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import cpu

# (period, quota) per cgroup: the domain's own cgroup ("global") is the parent
# of one cgroup per vCPU and of the emulator's.
GROUPS = {
    "global": ("global_period", "global_quota"),
    "vcpu": ("vcpu_period", "vcpu_quota"),
    "emulator": ("emulator_period", "emulator_quota"),
}
CHILD_GROUPS = ("vcpu", "emulator")
TUNE_KEYS = ("cpu_shares",) + tuple(key for group in ("vcpu", "global", "emulator") for key in GROUPS[group])
LIVE_UNSET = {"vcpu_period": cpu.DEFAULT_PERIOD, "vcpu_quota": cpu.UNLIMITED,
              "global_period": cpu.DEFAULT_PERIOD, "global_quota": cpu.UNLIMITED,
              "emulator_period": cpu.DEFAULT_PERIOD, "emulator_quota": cpu.UNLIMITED}
SCOPES = ("domain", "vcpu")


class PlanError(ValueRangeError):
    """A combination of values that cannot hold for this domain, as the
    error of the field that asked for it (`cpus` by default); says why."""

    def __init__(self, why, field="cpus"):
        super(PlanError, self).__init__(field, None, why, message=why)


def pick(values):
    """Only the tuning keys this collection manages."""
    return dict((key, values[key]) for key in TUNE_KEYS if key in values)


def cap_values(vcpus, cpus=None, scope="domain", period=cpu.DEFAULT_PERIOD, quota=None,
               shares=None, emulator_cpus=None, emulator_quota=None):
    """The scheduler parameters a cap sets, validated against libvirt's
    ranges. `cpus` is for the whole domain (scope=domain) or for each vCPU
    (scope=vcpu); `quota` is the raw alternative to `cpus`."""
    if scope not in SCOPES:
        raise ValueRangeError("scope", scope, "one of %s" % ", ".join(SCOPES))
    cpu.check_period("period", period)
    period_key, quota_key = GROUPS["global" if scope == "domain" else "vcpu"]
    values = {}
    if cpus is not None:
        values[period_key] = period
        values[quota_key] = cpu.quota_for_cpus(cpus, period, "cpus")
    elif quota is not None:
        values[period_key] = period
        values[quota_key] = cpu.check_quota("quota", quota)
    if emulator_cpus is not None:
        values["emulator_period"] = period
        values["emulator_quota"] = cpu.quota_for_cpus(emulator_cpus, period, "emulator_cpus")
    elif emulator_quota is not None:
        values["emulator_period"] = period
        values["emulator_quota"] = cpu.check_quota("emulator_quota", emulator_quota)
    if shares is not None:
        values["cpu_shares"] = shares
    return values


def check_cap_brakes(cap, vcpus, field, value):
    """Refuses a cap (cap_values) that caps nothing on a domain of `vcpus`
    vCPUs: a whole-domain cap of `vcpus` CPUs or more, or a per-vCPU cap of
    one CPU or more. Raises ValueRangeError naming `field` (cpus or quota)
    and the domain's vCPUs; shares and emulator caps alone pass."""
    # A quota asked for is judged as the CPUs it allows, libvirt's largest included (which libvirt reads back
    # as no limit on cgroup v2): only a negative one asks for no cap.
    if cap.get("global_quota") is not None and cap["global_quota"] > 0:
        cpu.check_cap_brakes(field, value, cap["global_quota"] / float(cap["global_period"]), vcpus)
    if cap.get("vcpu_quota") is not None and cap["vcpu_quota"] > 0:
        cpu.check_cap_brakes(field, value, cap["vcpu_quota"] / float(cap["vcpu_period"]), vcpus, per_vcpu=True)


def live_equivalent(config_values):
    """Live values a domain started from this persistent config would have
    (shares left out when the config does not set them)."""
    live = {}
    for key, value in pick(config_values).items():
        if key == "cpu_shares":
            if value:
                live[key] = value
        elif not value:
            live[key] = LIVE_UNSET[key]
        else:
            live[key] = cpu.UNLIMITED if key.endswith("_quota") and value < 0 else value
    return live


def _group_ratio(values, group):
    period_key, quota_key = GROUPS[group]
    period = values.get(period_key) or cpu.DEFAULT_PERIOD
    return cpu.ratio(period, values.get(quota_key))


def hierarchy_violation(values):
    """Why these values cannot hold on cgroup v1 (a child cgroup's CPU share
    may not exceed its parent's), or None."""
    parent = _group_ratio(values, "global")
    for group in CHILD_GROUPS:
        child = _group_ratio(values, group)
        # An unlimited child inherits its parent's cap, as the kernel does.
        if child != float("inf") and child > parent + 1e-12:
            return ("the %s cap (%g CPU) exceeds the whole-domain cap (%g CPU): cgroup v1 refuses a child "
                    "cgroup a larger share of CPU than its parent" % (group, child, parent))
    return None


def changed(current, target):
    """The keys of `target` whose value differs from `current`."""
    return dict((key, value) for key, value in target.items() if current.get(key) != value)


def live_write_order(current, target):
    """Single-parameter writes from `current` to `target` such that every
    intermediate state satisfies the cgroup v1 hierarchy (which also
    satisfies v2). Raises PlanError when the target itself cannot hold."""
    violation = hierarchy_violation(dict(current, **target))
    if violation:
        raise PlanError(violation)
    writes = changed(current, target)
    if not writes:
        return []
    keys = sorted(writes, key=_preferred_position)
    # At most seven keys: trying orders is cheap and obviously correct.
    for order in itertools.permutations(keys):
        state = dict(current)
        for key in order:
            state[key] = writes[key]
            if hierarchy_violation(state):
                break
        else:
            return [(key, writes[key]) for key in order]
    raise PlanError("no order of writes keeps every cgroup within its parent's cap")


def _preferred_position(key):
    # Children first when tightening is the usual case; periods before quotas.
    order = ["cpu_shares", "vcpu_quota", "emulator_quota", "vcpu_period", "emulator_period",
             "global_period", "global_quota"]
    return order.index(key)


def throttle_target(previous, cap):
    """A throttled domain is its pre-throttle tuning with the cap on top, so
    switching scope returns the other scope to what it was before us.

    A whole-domain cap also lowers any pre-existing vCPU or emulator cap that
    is looser than it (cgroup v1 refuses such a child, and on v2 it would be
    moot); restore returns those to their recorded values."""
    target = pick(previous)
    target.update(cap)
    if "global_quota" in cap:
        parent = _group_ratio(target, "global")
        for group in CHILD_GROUPS:
            period_key, quota_key = GROUPS[group]
            if quota_key in cap or parent == float("inf"):
                continue
            child = _group_ratio(target, group)
            if child != float("inf") and child > parent:
                period = target.get(period_key) or cpu.DEFAULT_PERIOD
                target[quota_key] = max(cpu.QUOTA_RANGE[0], int(parent * period))
    return target


def targets_for(apply, active, persistent):
    """Where a change goes: live (running domain), config (persistent
    definition) or both. `auto` means both for a running persistent domain, so
    a cap survives a guest restart."""
    if apply == "auto":
        return [t for t, ok in (("live", active), ("config", persistent)) if ok]
    wanted = ["live", "config"] if apply == "both" else [apply]
    if "live" in wanted and not active:
        raise PlanError("the domain is shut off: live tuning needs a running domain (use apply=config or auto)",
                        "apply")
    if "config" in wanted and not persistent:
        raise PlanError("the domain is transient: it has no persistent config (use apply=live or auto)", "apply")
    return wanted


def _previous_for(record, current, target):
    """The pre-throttle values of one target: from the record when it has
    them (a running domain throttled while shut off gets the live equivalent of
    its recorded config), else what is there now."""
    previous = (record or {}).get("previous", {})
    if target in previous:
        return previous[target]
    if record and target == "live" and "config" in previous:
        return dict(pick(current["live"]), **live_equivalent(previous["config"]))
    return pick(current[target])


def recorded_previous(record, current, target):
    """The values one target returns to on restore and starts from on a new
    throttle: the recorded ones of the values the throttle set (`owns`), the
    others as they are now, so that what someone else changed meanwhile in a
    value the throttle never set is neither undone nor recorded stale. A record
    without `owns` (written before it was kept) owns all it recorded."""
    recorded = _previous_for(record, current, target)
    owns = (record or {}).get("owns")
    if owns is None:
        return recorded
    return dict(pick(current[target]), **dict((key, recorded[key]) for key in owns if key in recorded))


def plan_throttle(state, cap, targets, record_fields):
    """Desired tuning per target and the throttle record for one domain.

    state: current values per target ({"live": {...}, "config": {...}}) and
           the existing record, if any;
    cap: scheduler parameters of the cap (cap_values);
    record_fields: reason, time, by, class, scope, cpus for a new record.

    The record keeps the values before the first throttle and `owns`, the
    keys any throttle of the domain set (so restore writes back only those).
    """
    record = state.get("record")
    changes = {}
    previous = dict((record or {}).get("previous", {}))
    owns = set((record or {}).get("owns") or ())
    for target in targets:
        previous[target] = recorded_previous(record, state["current"], target)
        desired = throttle_target(previous[target], cap)
        violation = hierarchy_violation(dict(LIVE_UNSET, **desired) if target == "live" else desired)
        if violation:
            raise PlanError(violation)
        owns.update(changed(previous[target], desired))
        changes[target] = {"before": pick(state["current"][target]), "after": desired}
    unchanged = all(not changed(c["before"], c["after"]) for c in changes.values())
    if record and unchanged and set(targets) <= set(record.get("previous", {})) and \
            owns <= set(record.get("owns") or TUNE_KEYS):
        record_after = record
    else:
        record_after = dict(record_fields, previous=previous, owns=sorted(owns, key=TUNE_KEYS.index))
    return {"changes": changes, "record_before": record, "record_after": record_after}


def plan_restore(state, targets):
    """Desired tuning per target to return a domain exactly to its recorded
    pre-throttle values - those the throttle set (`owns`); a value it never
    set stays as it is, whoever changed it. The record goes once every
    recorded target that still exists is restored. A domain never throttled
    needs nothing."""
    record = state.get("record")
    if not record:
        return {"changes": {}, "record_before": None, "record_after": None}
    changes = {}
    remaining = dict(record.get("previous", {}))
    for target in targets:
        desired = recorded_previous(record, state["current"], target)
        changes[target] = {"before": pick(state["current"][target]),
                           "after": dict(pick(state["current"][target]), **desired)}
        remaining.pop(target, None)
    # A recorded live target of a domain now shut off died with its process.
    if not state.get("active"):
        remaining.pop("live", None)
    record_after = dict(record, previous=remaining) if remaining else None
    return {"changes": changes, "record_before": record, "record_after": record_after}


def report_line(result, restore, check_mode=False):
    """One domain's line of the task's report (fleet.cap_line): the cap now
    in force and what it replaced, from the result's before/after tuning
    (live, else persistent config) and its vCPUs; shares when they changed."""
    before, after = result.get("before") or {}, result.get("after") or {}
    target = "live" if "live" in after else "config"
    if result.get("failed") or result.get("skipped") or target not in after:
        return fleet.cap_line(result, restore, None, None, check_mode)
    vcpus = result.get("vcpus") or 1
    texts = [cpu.cap_text(before.get(target) or {}, vcpus), cpu.cap_text(after[target], vcpus)]
    old_shares, new_shares = (before.get(target) or {}).get("cpu_shares"), after[target].get("cpu_shares")
    if old_shares != new_shares:
        texts = ["%s, shares %s" % (text, shares or "unset") for text, shares in zip(texts, (old_shares, new_shares))]
    if target == "config":
        # Only the persistent definition changed: the cap holds from the next start.
        texts[1] += " from its next start (persistent config)"
    return fleet.cap_line(result, restore, texts[1], texts[0], check_mode)
