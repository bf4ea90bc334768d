# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One record per observed VM, whichever platform read it. Pure.

A libvirt domain (libvirt_cputune_info's entry, read on a hypervisor host)
and a KubeVirt VM (kubevirt_vm_cpu_info's entry, read from the API, its
usage from Prometheus) become the same record here, once, where the
readings are taken in: the policy's input, what a plan sees of the VM, a
plan's review and the report's rows all read this record, so none of them
asks which platform a VM is on.

The record: {key (the object in plans and states), platform, host (the
hypervisor host, or the host that stands for a KubeVirt VM's node), node,
name, class, vcpus, weight (CPU weight in cgroup v1 shares), usage
({cpus_used, steal_cpus}), wait (steal / (used + steal)), policy (the
policy state it carries), record (the collection's throttle record),
cap_cpus, min_cap_cpus, baseline_cpus, started_at, cpus_allowed, active,
paused, seen (what a plan sees of it), plan (the plan id its record names),
unreadable (why it could not be read, or None)}."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.common.record import unix_time
from ansible_collections.overcommit.control.plugins.module_utils.domain.plan import applied_plan, seen_of_domain
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy import KUBEVIRT, LIBVIRT, vm_key


def cpu_weight(domain):
    """The CPU weight the host's scheduler gives a VM, in cgroup v1 shares:
    a libvirt domain's live cpu_shares (libvirt's default 1024, or cgroup
    v2's cpu.weight, 100 by default, which libvirt reports in its place); a
    KubeVirt launcher pod's CPU request as the kubelet turns it into shares
    (1024 a CPU): the request the brake keeps when it demoted one, as a cap
    is the desired cap (a new pod gets it back from a reconcile). None when
    not known."""
    request = domain.get("desired_cpu_request")
    if request is None:
        request = domain.get("cpu_request")
    if request is not None:
        return round(float(request) * 1024, 3) or None
    shares = (domain.get("live") or {}).get("cpu_shares")
    return shares if isinstance(shares, (int, float)) and not isinstance(shares, bool) and shares > 0 else None


def vm_state(domain, platform=LIBVIRT):
    """The policy state a VM starts from when no cycle kept one: a cap an
    approved plan (or the loop) set is the policy's own, so it may later be
    relaxed and restored; any other cap is someone else's and left alone."""
    record = domain.get("throttle") or {}
    # The weight is the plan's where its record says it set it: libvirt's
    # cpu_shares, a KubeVirt launcher's desired (demoted) CPU request.
    owned = "cpu_shares" in (record.get("owns") or []) or domain.get("desired_request") is not None
    weight = cpu_weight(domain) if owned else None
    if not record.get("plan") or domain.get("cap_cpus") is None and weight is None:
        return {}
    since = unix_time(record.get("time"))
    state = {"rule": record.get("rule") or "contain"}
    if domain.get("cap_cpus") is not None:
        state["cap"] = domain["cap_cpus"]
    if weight is not None:
        # A CPU weight the plan demoted: what it was is the record's.
        state["weight"] = weight
        was = cpu_weight({"cpu_request": domain.get("previous_cpu_request")}) if platform == KUBEVIRT \
            else ((record.get("previous") or {}).get("live") or {}).get("cpu_shares")
        if was:
            state["weight_was"] = was
    if since is not None:
        state.update(capped_at=since, changed_at=since)
    return state


def policy_state(domain, platform=LIBVIRT):
    """The state stored on the VM; a cap an approved plan set since the last
    cycle (its record names the plan, the stored state has no cap) is taken
    as the policy's own too."""
    stored = domain.get("policy") or {}
    if stored.get("cap") is not None:
        return stored
    return dict(vm_state(domain, platform), **stored)


def wait_ratio(usage):
    """The share of the time the VM wanted a CPU that it waited for one:
    steal / (used + steal), or None without both readings."""
    used, steal = (usage or {}).get("cpus_used"), (usage or {}).get("steal_cpus")
    if used is None or steal is None or used + steal <= 0:
        return None
    return round(steal / (used + steal), 4)


def observed_vm(platform, host, reading, usage=None):
    """The record of one VM: `reading` is libvirt_cputune_info's domain (on
    hypervisor `host`) or kubevirt_vm_cpu_info's VM (on the node `host`
    stands for, which may be None where no host does); `usage` replaces
    the reading's own (a KubeVirt VM's usage in one round)."""
    if not isinstance(reading, dict) or not reading.get("name"):
        raise ValueRangeError("%s VM" % platform, reading, "a VM as the platform's info module returns it")
    if usage is None:
        usage = reading.get("usage") or {}
    vm = {"platform": platform, "host": host, "node": reading.get("node"), "name": reading["name"],
          "class": reading.get("class"), "vcpus": reading.get("vcpus"), "weight": cpu_weight(reading),
          "usage": usage, "wait": wait_ratio(usage), "policy": policy_state(reading, platform),
          "record": reading.get("throttle") or {}, "cap_cpus": reading.get("cap_cpus"),
          # Kubernetes refuses a launcher's CPU limit under its request.
          "min_cap_cpus": reading.get("cpu_request"), "baseline_cpus": reading.get("baseline_cpus"),
          "started_at": reading.get("started_at"), "cpus_allowed": reading.get("cpus_allowed"),
          "active": bool(reading.get("active")),
          # The kill switch an operator set in the VM's metadata.
          "paused": bool(reading.get("paused")),
          "seen": seen_of_domain(reading), "plan": applied_plan(reading),
          "unreadable": (reading.get("msg") or "unreadable") if reading.get("failed") else None}
    vm["key"] = vm_key(vm)
    return vm


def observed_vms(platform, host, readings):
    """The records of a list of readings of one platform (on one host for
    libvirt): the readings an info module returned."""
    return [observed_vm(platform, host, reading) for reading in readings or [] if isinstance(reading, dict)]


def acts_on(action, platform, host=None):
    """Whether a plan's action is on a VM of `platform` (on hypervisor
    `host`, for libvirt, whose VMs are named per host)."""
    if not action.get("vm") or (action.get("platform") or LIBVIRT) != platform:
        return False
    return platform == KUBEVIRT or action.get("host") == host
