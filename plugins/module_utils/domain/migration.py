# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Moving a running VM to another host as relief: what must hold before a
move starts, judged on what the collection knows of both hosts. Pure.

A move is refused, before anything changes, when it cannot work or would
break a promise the collection keeps:
- the VM does not run (a live move needs a running VM), or the target is its
  own host, or the target already has a VM of that name;
- a dedicated VM is pinned to CPUs the target does not have;
- the target has no room by the collection's accounting: the CPUs its
  running VMs are promised (a dedicated VM its vCPUs, a shared or burstable
  VM its floor) and the VM's own promise would exceed its CPUs, or its vCPUs
  per CPU would pass `max_vcpu_ratio` when one is given.

The collection's records (class, throttle record, policy state) are in the
domain's own metadata: a move that carries the domain's definition carries
them, and `records_lost` names any that did not arrive as they left."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import (
    CLASSES, DEDICATED, DEFAULT_CLASS, DEFAULT_FLOOR_FRACTION, floor_cpus)

# The parts of a domain's metadata that are the collection's.
RECORD_KEYS = ("class", "throttle", "policy", "paused")


def promised_cpus(vm, floor_fraction=DEFAULT_FLOOR_FRACTION):
    """CPUs the collection promises a VM on its host: a dedicated VM its
    vCPUs, a shared or burstable VM its floor (a burstable VM's baseline
    where it has one)."""
    vcpus = vm.get("vcpus") or 0
    klass = vm.get("class") or DEFAULT_CLASS
    if klass == DEDICATED:
        return float(vcpus)
    if vm.get("baseline_cpus") is not None:
        return float(vm["baseline_cpus"])
    return floor_cpus(vcpus, floor_fraction)


def _checked_target(target):
    if not isinstance(target, dict) or not target.get("name"):
        raise ValueRangeError("target", target, "the target host's name, CPUs and VMs")
    cpus = target.get("cpus")
    if isinstance(cpus, bool) or not isinstance(cpus, int) or cpus < 1:
        raise ValueRangeError("target.cpus", cpus, "the target host's number of CPUs (at least 1)")
    return target


def check_max_vcpu_ratio(value):
    """max_vcpu_ratio: None, or vCPUs per CPU above 0."""
    if value is None:
        return None
    try:
        ratio = float(value)
    except (TypeError, ValueError):
        raise ValueRangeError("max_vcpu_ratio", value, "vCPUs per CPU above 0 (e.g. 4), or none")
    if ratio <= 0:
        raise ValueRangeError("max_vcpu_ratio", value, "vCPUs per CPU above 0 (e.g. 4), or none")
    return ratio


def refusal(vm, source, target, floor_fraction=DEFAULT_FLOOR_FRACTION, max_vcpu_ratio=None):
    """Why `vm` (libvirt_cputune_info's shape: name, class, vcpus, active,
    cpus_allowed, baseline_cpus) may not move from host `source` to
    `target` ({name, cpus, vms: the target's domains in the same shape}),
    or None when it may."""
    target = _checked_target(target)
    klass = vm.get("class") or DEFAULT_CLASS
    if klass not in CLASSES:
        raise ValueRangeError("%s.class" % vm.get("name"), klass, "one of %s" % ", ".join(CLASSES))
    if target["name"] == source:
        return "%s is already on %s" % (vm["name"], source)
    if not vm.get("active"):
        return "%s is shut off: a live move needs it running" % vm["name"]
    if any(other.get("name") == vm["name"] for other in target.get("vms") or []):
        return "%s already has a domain named %s" % (target["name"], vm["name"])
    pinned = sorted(vm.get("cpus_allowed") or [])
    if klass == DEDICATED and pinned and pinned[-1] >= target["cpus"]:
        missing = [cpu for cpu in pinned if cpu >= target["cpus"]]
        return "%s is dedicated and pinned to CPUs %s that %s lacks (it has %d)" % (
            vm["name"], ",".join(str(cpu) for cpu in missing), target["name"], target["cpus"])
    running = [other for other in target.get("vms") or [] if other.get("active")]
    promised = sum(promised_cpus(other, floor_fraction) for other in running)
    own = promised_cpus(vm, floor_fraction)
    if promised + own > target["cpus"] + 1e-9:
        return ("no room on %s by the collection's accounting: its running VMs are promised %.2f of its %d CPUs "
                "and %s needs %.2f more (%s)" % (target["name"], promised, target["cpus"], vm["name"], own,
                                                 "its vCPUs" if klass == DEDICATED else "its floor"))
    ratio = check_max_vcpu_ratio(max_vcpu_ratio)
    if ratio is not None:
        vcpus = sum(other.get("vcpus") or 0 for other in running) + (vm.get("vcpus") or 0)
        if vcpus > ratio * target["cpus"] + 1e-9:
            return "no room on %s: %d vCPUs on its %d CPUs would pass max_vcpu_ratio %g" % (
                target["name"], vcpus, target["cpus"], ratio)
    return None


def records_of(domain):
    """The collection's records on a domain (libvirt_cputune_info's shape)."""
    return dict((key, domain.get(key)) for key in RECORD_KEYS)


def records_lost(before, after):
    """The records that did not arrive as they left ([] when all did)."""
    return [key for key in RECORD_KEYS if (before or {}).get(key) != (after or {}).get(key)]


def report_line(result, moved):
    """One VM's line of a move's report, on any platform: why it was
    refused or failed, `moved` (what was done, in words) when it changed,
    else what the module found (a move done already)."""
    name = result["name"]
    if result.get("refused"):
        return "%s: not moved: %s" % (name, result.get("msg"))
    if result.get("failed"):
        return "%s: failed: %s" % (name, result.get("msg"))
    if result.get("changed"):
        return "%s: %s" % (name, moved)
    return "%s: %s" % (name, result.get("msg") or "unchanged")
