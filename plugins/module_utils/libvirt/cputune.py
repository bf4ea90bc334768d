# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""libvirt_cputune and libvirt_cputune_info, the pure part: the request,
the selection options, what a domain's record and expected state say, and
the report lines. cputune_runner.py writes, reader.py reads. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common import names
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal, ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import cpu, vm_class
from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml, plan
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.domain_xml import CONFIG, LIVE

WORKERS = 4
# The options of the libvirt modules that are lists of domain names.
NAME_FIELDS = ("domains",)


def selection_argument_spec():
    """Options libvirt_cputune and libvirt_cputune_info share (doc fragment
    overcommit.control.libvirt; the connection's `uri` is LibvirtModule's)
    and the way both select domains."""
    return dict(
        class_namespace=dict(type="str", default=domain_xml.CLASS_NAMESPACE),
        domains=dict(type="list", elements="str", default=[], aliases=["names"]),
        classes=dict(type="list", elements="str", default=[], choices=list(vm_class.CLASSES)),
    )


EXPECTED_KEYS = ("cap_cpus", "throttle_time")


class NotOnThisHost(ObjectRefusal):
    """A domain named but not defined on this host, with missing=ignore: a
    fleet run names every target on every host, so absent is no error."""

    def outcome(self):
        return {"skipped": True, "msg": "not defined on this host"}


def check_name_keys(field, mapping):
    """Refuses (names.NameListError) keys of a mapping option that cannot be
    a domain's name (empty, surrounding spaces), naming `field.<key>`."""
    problems = []
    for key in mapping or {}:
        why = names.problem(key)
        if why:
            problems.append("%s.%s: the name %r %s" % (field, key, key, why))
    if problems:
        raise names.NameListError(field, problems)


def check_expected(expected, domains, classes):
    """Checks option `expected` ({domain: {cap_cpus, throttle_time}}) and
    returns it with both keys on every entry; raises ValueRangeError
    naming the field and the allowed values."""
    check_name_keys("expected", expected)
    out = {}
    for name, seen in (expected or {}).items():
        field = "expected.%s" % name
        if not isinstance(seen, dict):
            raise ValueRangeError(field, seen, "a mapping with cap_cpus (CPUs or null) and throttle_time "
                                               "(text or null), as libvirt_cputune_info read them")
        unknown = sorted(set(seen) - set(EXPECTED_KEYS))
        if unknown:
            raise ValueRangeError("%s.%s" % (field, unknown[0]), seen[unknown[0]],
                                  "only the keys %s" % ", ".join(EXPECTED_KEYS))
        cap = seen.get("cap_cpus")
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float)) or cap <= 0):
            raise ValueRangeError(field + ".cap_cpus", cap, "a number of CPUs above 0, or null for unlimited")
        when = seen.get("throttle_time")
        if when is not None and not isinstance(when, str):
            raise ValueRangeError(field + ".throttle_time", when, "the throttle record's time as text, or null")
        if not classes and name not in domains:
            raise ValueRangeError(field, name, "a domain the task acts on (one of domains: %s)"
                                  % ", ".join(domains))
        out[name] = {"cap_cpus": None if cap is None else float(cap), "throttle_time": when}
    return out


def cap_cpus(state):
    """What a domain's quotas let it use, in CPUs (None: unlimited), from
    its live tuning when it runs, else its persistent config: the cap_cpus
    libvirt_cputune_info reports and `expected` is compared with."""
    tuning = state["current"].get(LIVE) or state["current"].get(CONFIG) or {}
    return cpu.domain_cpus(tuning, state["vcpus"])


def seen_target(described):
    """The target cap_cpus is read from."""
    return LIVE if described["active"] else CONFIG


def conflict(name, expected, state):
    """What the domain looks like now (plans.seen_of_domain: cap_cpus and
    throttle_time) and why that is not what the caller saw when it decided
    (domain.plan.changed_since), or None when it is."""
    seen = plans.seen_of_domain({"cap_cpus": cap_cpus(state), "throttle": state["record"]})
    why = plans.changed_since({"object": name, "expected": expected}, seen)
    if why is None:
        return seen, None
    # changed_since speaks of a plan; here the caller's read is what is compared.
    prefix = "%s changed since plan: " % name
    detail = why[len(prefix):] if why.startswith(prefix) else why
    return seen, "%s changed since it was read: %s" % (name, detail)


def shares_range(cgroup_version):
    if cgroup_version == 1:
        return cpu.SHARES_RANGE_V1
    if cgroup_version == 2:
        return cpu.WEIGHT_RANGE_V2
    return (cpu.WEIGHT_RANGE_V2[0], cpu.SHARES_RANGE_V1[1])


def check_request(params, check_mode):
    """The task's options as a request, every value checked before anything
    is read (the shares range, which depends on the host's cgroup version,
    is checked by the runner before any write); raises ValueRangeError
    naming the field and the allowed values."""
    if params["floor"] < 0 or params["floor"] > 1:
        raise ValueRangeError("floor", params["floor"], "0..1 (a fraction of the vCPUs)")
    # One rule for a number of CPUs on every platform: 2, 0.5 or "500m".
    cpus = None if params.get("cpus") is None else cpu.parse_cpus("cpus", params["cpus"])
    request = dict(params, cpus=cpus, check_mode=check_mode, cap=None,
                   expected=check_expected(params.get("expected"), params["domains"], params["classes"]))
    if params["state"] == "throttled":
        request["cap"] = plan.cap_values(
            vcpus=1, cpus=cpus, scope=params["scope"], period=params["period"], quota=params["quota"],
            shares=params["shares"], emulator_cpus=params["emulator_cpus"], emulator_quota=params["emulator_quota"])
    return request


def report_line(result, request):
    """The result's line of the task's report (plan.report_line)."""
    return plan.report_line(result, request["state"] == "restored", request["check_mode"])


def check_sample_seconds(params):
    """libvirt_cputune_info's sample_seconds: 0 (no measuring) or more."""
    if params["sample_seconds"] < 0:
        raise ValueRangeError("sample_seconds", params["sample_seconds"], "0 or more")
