# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CPU caps as CFS bandwidth: conversions between "CPUs" and period/quota,
and the ranges libvirt accepts. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError

DEFAULT_PERIOD = 100000
PERIOD_RANGE = (1000, 1000000)
QUOTA_RANGE = (1000, 17592186044415)
# libvirt stores any negative quota as -1: no limit.
UNLIMITED = -1
SHARES_RANGE_V1 = (2, 262144)
WEIGHT_RANGE_V2 = (1, 10000)


# One rule for a number of CPUs given by a person, on every platform: a
# number, or millicores as Kubernetes writes them ("500m" is 0.5).
CPUS_ALLOWED = "a number of CPUs above 0, such as 2, 0.5 or \"500m\""
_CPUS_TEXT = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(m?)\s*$")


def parse_cpus(field, value):
    """A number of CPUs above 0 from a number or a text ("2", "0.5",
    "500m"); raises ValueRangeError naming `field` for anything else
    (booleans, NaN, infinity, zero, negative, other units)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueRangeError(field, value, CPUS_ALLOWED)
    if isinstance(value, str):
        match = _CPUS_TEXT.match(value)
        if not match:
            raise ValueRangeError(field, value, CPUS_ALLOWED)
        number = float(match.group(1)) / (1000.0 if match.group(2) else 1.0)
    else:
        number = float(value)
    if not math.isfinite(number) or number <= 0 or number >= 2 ** 63:
        raise ValueRangeError(field, value, CPUS_ALLOWED)
    return number


def check_range(field, value, bounds, extra=""):
    low, high = bounds
    if not low <= value <= high:
        raise ValueRangeError(field, value, "%d..%d%s" % (low, high, extra))
    return value


def check_period(field, period):
    return check_range(field, period, PERIOD_RANGE)


def check_quota(field, quota):
    """A raw quota: in range, or negative for no limit (normalised to -1)."""
    if quota < 0:
        return UNLIMITED
    return check_range(field, quota, QUOTA_RANGE, " (or negative for no limit)")


def quota_for_cpus(cpus, period=DEFAULT_PERIOD, field="cpus"):
    """The quota that lets a cgroup use `cpus` CPUs per `period` microseconds."""
    if cpus <= 0:
        raise ValueRangeError(field, cpus, "a number of CPUs greater than 0")
    check_period("period", period)
    quota = int(round(cpus * period))
    if not QUOTA_RANGE[0] <= quota <= QUOTA_RANGE[1]:
        raise ValueRangeError(field, cpus, "%g..%g CPUs with period %d" % (
            QUOTA_RANGE[0] / period, QUOTA_RANGE[1] / period, period))
    return quota


def check_cap_brakes(field, value, cap_cpus, vcpus, per_vcpu=False):
    """Refuses a cap that caps nothing: a VM of `vcpus` vCPUs never uses
    more than `vcpus` CPUs, and one vCPU never more than one CPU, so a whole-VM
    cap of `vcpus` CPUs or more, or a per-vCPU cap of 1 CPU or more, is no
    brake at all (often millicores written as CPUs: 500 for 500m). Raises
    ValueRangeError naming `field` (with the `value` given) and the VM's
    vCPUs; cap_cpus None (no CPU cap) passes."""
    if cap_cpus is None:
        return
    if vcpus <= 0:
        raise ValueRangeError("vcpus", vcpus, "at least 1")
    plural = "" if vcpus == 1 else "s"
    if per_vcpu:
        if cap_cpus >= 1 - 1e-9:
            raise ValueRangeError(field, value, "under 1 CPU per vCPU: a vCPU never uses more than one CPU, so a "
                                                "per-vCPU cap of %g CPU caps nothing on this VM's %d vCPU%s "
                                                "(caps are in CPUs: 0.5 means 500m)" % (cap_cpus, vcpus, plural))
        return
    if cap_cpus >= vcpus - 1e-9:
        raise ValueRangeError(field, value, "under the VM's %d vCPU%s: a cap of %g CPU caps nothing on a VM of %d "
                                            "vCPU%s (caps are in CPUs: 0.5 means 500m)"
                              % (vcpus, plural, cap_cpus, vcpus, plural))


def is_unlimited(quota):
    """Whether a quota as libvirt reports it sets no limit: none, -1 (cgroup
    v1's), 0 (not set in a config), or libvirt's largest quota, which it
    reads back from cgroup v2's "max"."""
    return quota is None or quota <= 0 or quota >= QUOTA_RANGE[1]


def cpus_for_quota(quota, period):
    """CPUs a period/quota pair allows; None means no limit."""
    if is_unlimited(quota) or not period:
        return None
    return quota / period


def domain_cpus_from_vcpu_cap(cpus_per_vcpu, vcpus):
    """A per-vCPU cap expressed as what the whole domain may use."""
    return cpus_per_vcpu * vcpus


def vcpu_cap_from_domain_cpus(domain_cpus, vcpus):
    """A whole-domain cap spread evenly over the vCPUs."""
    if vcpus <= 0:
        raise ValueRangeError("vcpus", vcpus, "at least 1")
    return domain_cpus / vcpus


def ratio(period, quota):
    """Share of one CPU a period/quota pair allows; infinity when unlimited."""
    if is_unlimited(quota) or not period:
        return float("inf")
    return quota / period


def usage_from_samples(first, second):
    """CPUs used and CPUs of steal between two samples of one VM.

    Samples hold cumulative nanoseconds, `cpu_time` (all CPU the VM burnt)
    and `vcpu_delay` (time its vCPUs were runnable but waited for a host CPU,
    what the guest sees as steal), and the monotonic `at` they were taken.
    None when a counter went back between them.
    """
    elapsed = second["at"] - first["at"]
    if elapsed <= 0:
        return {"cpus_used": None, "steal_cpus": None, "sample_seconds": 0.0}
    if second["cpu_time"] < first["cpu_time"] or second["vcpu_delay"] < first["vcpu_delay"]:
        # A counter went back (the domain started again between the samples,
        # a new QEMU process counting from zero, or a vCPU's delay missing
        # from one sample): their difference measures nothing.
        return None
    return {
        "cpus_used": round((second["cpu_time"] - first["cpu_time"]) / 1e9 / elapsed, 3),
        "steal_cpus": round((second["vcpu_delay"] - first["vcpu_delay"]) / 1e9 / elapsed, 3),
        "sample_seconds": round(elapsed, 3),
    }


# ---------------------------------------------------------------- caps as people read them

def cpus_text(cpus):
    """A CPU cap as people read it: "0.5 CPU", or "unlimited" for None."""
    return "unlimited" if cpus is None else "%g CPU" % cpus


def domain_cpus(values, vcpus):
    """What a set of cap values lets the whole domain use, in CPUs (None: no
    CPU cap). A per-vCPU cap allows vcpus times its share."""
    global_cpus = cpus_for_quota(values.get("global_quota"), values.get("global_period"))
    vcpu_cpus = cpus_for_quota(values.get("vcpu_quota"), values.get("vcpu_period"))
    candidates = [c for c in (global_cpus, None if vcpu_cpus is None else vcpu_cpus * vcpus) if c is not None]
    return min(candidates) if candidates else None


def cap_text(values, vcpus):
    """The CPU cap a set of tuning values puts on a domain of `vcpus` vCPUs,
    as people read it: "unlimited", "0.5 CPU", or "0.5 CPU per vCPU (2 CPU in
    all)" when the per-vCPU cap is the tighter one."""
    total = domain_cpus(values, vcpus)
    if total is None:
        return cpus_text(None)
    per_vcpu = cpus_for_quota(values.get("vcpu_quota"), values.get("vcpu_period"))
    whole = cpus_for_quota(values.get("global_quota"), values.get("global_period"))
    if per_vcpu is not None and (whole is None or per_vcpu * vcpus < whole - 1e-9):
        return "%g CPU per vCPU (%g CPU in all)" % (per_vcpu, total)
    return cpus_text(total)
