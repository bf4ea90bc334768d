# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The policy's input, checked: a host's and a VM's view (host_view,
vm_view), what a VM wants and how long it waits. Raises ValueRangeError
naming the field of the input. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import credits as credit_rules
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import (
    BURSTABLE, CLASSES, DEDICATED, DEFAULT_CLASS)


# Where a VM runs: a libvirt domain on its host, or a KubeVirt VM (named
# namespace/name, braked through its launcher pod) on the node of its host.
LIBVIRT, KUBEVIRT = "libvirt", "kubevirt"

PLATFORMS = (LIBVIRT, KUBEVIRT)
# A KubeVirt VM's CPU weight is its launcher's CPU request, which is set in
# millicores: the kubelet gives a container 1.024 cgroup v1 shares for each.
SHARES_PER_MILLICPU = 1.024


def settable_weight(vm, weight):
    """The least CPU weight at or above `weight` that the VM's platform can
    set: libvirt's cpu_shares are whole numbers; a KubeVirt VM's weight is
    its launcher's CPU request, in millicores."""
    if vm.get("platform") == KUBEVIRT:
        return round(math.ceil(weight / SHARES_PER_MILLICPU - 1e-9) * SHARES_PER_MILLICPU, 3)
    return int(math.ceil(weight))


def weight_fields(vm, weight, previous=None):
    """What an action that sets a VM's CPU weight carries: `shares` (and
    `previous_shares`) and, for a KubeVirt VM, the launcher's CPU request
    that gives that weight (`cpu_request`, a CPU quantity)."""
    fields = {"shares": weight}
    if previous is not None:
        fields["previous_shares"] = previous
    if vm.get("platform") == KUBEVIRT:
        fields["cpu_request"] = "%dm" % max(1, int(round(weight / SHARES_PER_MILLICPU)))
    return fields


def vm_key(vm):
    """The object a VM is in plans and states: host/domain for libvirt;
    kubevirt/namespace/name for KubeVirt, whichever node it runs on (a
    migration moves it, its state travels on the VMI)."""
    if vm.get("platform") == KUBEVIRT:
        return "%s/%s" % (KUBEVIRT, vm["name"])
    return "%s/%s" % (vm["host"], vm["name"])


def checked_number(field, value, required=False, low=0.0):
    if value is None:
        if required:
            raise ValueRangeError(field, value, "a number")
        return None
    if isinstance(value, bool):
        raise ValueRangeError(field, value, "a number")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueRangeError(field, value, "a number")
    if number < low:
        raise ValueRangeError(field, value, "a number of at least %g" % low)
    return number


def _pressure(value, field):
    """PSI cpu some (avg10, avg60) from host_pressure_info's `pressure`
    ({cpu: {some: {avg10, avg60}}}), its `vm_cgroup.cpu_pressure` (the VMs'
    cgroup parent: {some: {avg10, avg60}}), or a flat {some_avg10, some_avg60}."""
    if not value:
        return None, None
    if not isinstance(value, dict):
        raise ValueRangeError(field, value, "a mapping with some_avg10/some_avg60, some.avg10/avg60 or cpu.some.avg10/avg60")
    if isinstance(value.get("cpu"), dict) and isinstance(value["cpu"].get("some"), dict):
        some, path = value["cpu"]["some"], ".cpu.some."
    elif isinstance(value.get("some"), dict):
        some, path = value["some"], ".some."
    else:
        return checked_number(field + ".some_avg10", value.get("some_avg10")), checked_number(field + ".some_avg60", value.get("some_avg60"))
    return checked_number(field + path + "avg10", some.get("avg10")), checked_number(field + path + "avg60", some.get("avg60"))


def _memory_full(value, field):
    """PSI memory full avg60 from host_pressure_info's `pressure`
    ({memory: {full: {avg60}}}) or a flat {memory_full_avg60}; None when
    not given."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("memory"), dict) and isinstance(value["memory"].get("full"), dict):
        return checked_number(field + ".memory.full.avg60", value["memory"]["full"].get("avg60"))
    return checked_number(field + ".memory_full_avg60", value.get("memory_full_avg60"))


GATE_EFFECTS = (SOFT, HARD) = ("PreferNoSchedule", "NoSchedule")


def _shared_cpus(value, cpus, field):
    shared = checked_number(field, value)
    if shared is not None and shared > cpus:
        raise ValueRangeError(field, value, "0..%g (the host's CPUs)" % cpus)
    return shared


def host_view(host, index=0):
    """One host of the input, checked. Accepts {name, cpus, shared_cpus,
    pressure, procs_running, cpus_used, pool_cpus_used, node, paused};
    `pool_cpus_used` is what the shared pool's own CPUs were busy (read per
    CPU; preferred to `cpus_used`, the whole host's); `shared_cpus` is the
    size of the shared pool (the CPUs shared VMs may run on, read from their
    cpusets), `node` is the Kubernetes node
    on this host ({name, gated, gate, policy, effect: the taint effect of
    its gate, NoSchedule when gated and not said}) or absent."""
    field = "hosts[%d]" % index
    if not isinstance(host, dict) or not host.get("name"):
        raise ValueRangeError(field + ".name", host.get("name") if isinstance(host, dict) else host, "a host name")
    avg10, avg60 = _pressure(host.get("pressure"), field + ".pressure")
    node = host.get("node")
    if node is not None and not (isinstance(node, dict) and node.get("name")):
        raise ValueRangeError(field + ".node", node, "a mapping with the node's name, or absent")
    cpus = checked_number(field + ".cpus", host.get("cpus"), required=True)
    if cpus <= 0:
        raise ValueRangeError(field + ".cpus", host.get("cpus"), "a number of CPUs above 0")
    gated = node is not None and bool(node.get("gated") or node.get("gate"))
    effect = node.get("effect") if node is not None else None
    if effect is not None and effect not in GATE_EFFECTS:
        raise ValueRangeError(field + ".node.effect", effect, "one of %s, or absent" % ", ".join(GATE_EFFECTS))
    return {
        "name": host["name"], "cpus": cpus, "avg10": avg10, "avg60": avg60,
        "memory_full60": _memory_full(host.get("pressure"), field + ".pressure"),
        "shared_cpus": _shared_cpus(host.get("shared_cpus"), cpus, field + ".shared_cpus"),
        "cpus_used": checked_number(field + ".cpus_used", host.get("cpus_used")),
        "pool_cpus_used": checked_number(field + ".pool_cpus_used", host.get("pool_cpus_used")),
        "procs_running": checked_number(field + ".procs_running", host.get("procs_running")),
        "paused": bool(host.get("paused")),
        "node": None if node is None else {
            "name": node["name"], "gated": gated, "effect": (effect or HARD) if gated else None,
            "policy": _state(node.get("policy"), field + ".node.policy"),
        },
    }


def _weight(value, field):
    weight = checked_number(field, value)
    if weight is not None and weight <= 0:
        raise ValueRangeError(field, value, "a CPU weight above 0 (cpu.shares, cpu.weight or a CPU request), or absent")
    return weight


def _state(value, field):
    if value is None or value == "":
        return {}
    if not isinstance(value, dict):
        raise ValueRangeError(field, value, "the mapping a previous cycle returned")
    hist = value.get("hist")
    if hist is not None and not (isinstance(hist, str) and set(hist) <= set("01")):
        # A trigger history of another shape (a state written by hand or by
        # another tool) starts over rather than failing every rule that reads it.
        value = dict((key, item) for key, item in value.items() if key != "hist")
    return value


def vm_view(vm, index=0):
    """One VM of the input, checked. Accepts libvirt_cputune_info's domain
    shape ({name, class, vcpus, cap_cpus, throttle, usage: {cpus_used,
    steal_cpus}}) plus `host`, `policy` (the state of the last cycle),
    `floor_cpus`, `baseline_cpus`, `entitled_cpus`, `credits`, `pressure`
    `paused`, `platform` (libvirt, kubevirt), `min_cap_cpus` (the least
    cap the platform takes: a KubeVirt launcher's CPU request) and `weight`
    (the CPU weight the host's scheduler gives it), `started_at` (when it
    started, epoch seconds); flat cpus_used/steal_cpus are accepted too."""
    field = "vms[%d]" % index
    if not isinstance(vm, dict) or not vm.get("name") or not vm.get("host"):
        raise ValueRangeError(field, vm, "a mapping with name and host")
    platform = vm.get("platform") or LIBVIRT
    if platform not in PLATFORMS:
        raise ValueRangeError(field + ".platform", platform, "one of %s" % ", ".join(PLATFORMS))
    cls = vm.get("class") or DEFAULT_CLASS
    if cls not in CLASSES:
        raise ValueRangeError(field + ".class", cls, "one of %s" % ", ".join(CLASSES))
    vcpus = checked_number(field + ".vcpus", vm.get("vcpus"), required=True)
    if vcpus < 1:
        raise ValueRangeError(field + ".vcpus", vm.get("vcpus"), "at least 1")
    usage = vm.get("usage") or {}
    used = checked_number(field + ".usage.cpus_used", usage.get("cpus_used", vm.get("cpus_used")))
    steal = checked_number(field + ".usage.steal_cpus", usage.get("steal_cpus", vm.get("steal_cpus")))
    cap = checked_number(field + ".cap_cpus", vm.get("cap_cpus"))
    baseline = None
    if cls == BURSTABLE:
        baseline = credit_rules.check_baseline(field + ".baseline_cpus", vm.get("baseline_cpus"), vcpus)
    pressure = vm.get("pressure")
    if isinstance(pressure, dict):
        pressure = _pressure(pressure, field + ".pressure")[0]
    return {
        "key": vm_key(dict(vm, platform=platform)), "platform": platform, "name": vm["name"], "host": vm["host"],
        "class": cls, "vcpus": vcpus, "used": used or 0.0, "steal": steal, "cap": cap,
        # No reading of its usage (a shut-off or unsampled VM): no demand to learn from.
        "usage_known": used is not None,
        "pressure": checked_number(field + ".pressure", pressure),
        "state": _state(vm.get("policy"), field + ".policy"),
        "floor": checked_number(field + ".floor_cpus", vm.get("floor_cpus")),
        "min_cap": checked_number(field + ".min_cap_cpus", vm.get("min_cap_cpus")),
        "baseline": baseline,
        "entitled": checked_number(field + ".entitled_cpus", vm.get("entitled_cpus")),
        "weight": _weight(vm.get("weight"), field + ".weight"),
        # A dedicated VM pinned to CPUs that shared VMs may run on too.
        "in_shared_pool": bool(vm.get("in_shared_pool")) if cls == DEDICATED else True,
        "credits": checked_number(field + ".credits", vm.get("credits")),
        "paused": bool(vm.get("paused")),
        # When it started (epoch seconds), where the platform says: a booting guest is no culprit.
        "started_at": checked_number(field + ".started_at", vm.get("started_at")),
    }


def wanted(vm):
    """CPU the VM would use with no contention and no cap: what it used plus
    what it waited for (a cap's throttled time shows up as steal too)."""
    return min(vm["vcpus"], vm["used"] + (vm["steal"] or 0.0))


def steal_ratio(vm):
    total = vm["used"] + (vm["steal"] or 0.0)
    return (vm["steal"] or 0.0) / total if total > 0 else 0.0
