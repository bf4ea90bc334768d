# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Overcommit as figures any platform can report: how much is promised
against what the hardware has. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError


def ratio(promised, physical, digits=3):
    """promised / physical, rounded; None when there is no physical capacity
    to compare with (a host without data is not "infinitely" overcommitted)."""
    if not physical:
        return None
    return round(float(promised) / physical, digits)


def cpu_figures(vcpus, cores, threads):
    """vCPUs of running VMs against physical cores and hardware threads."""
    return {"vcpus": vcpus, "cores": cores, "threads": threads,
            "vcpu_per_core": ratio(vcpus, cores), "vcpu_per_thread": ratio(vcpus, threads)}


def memory_figures(configured_mb, physical_mb):
    """Memory configured in running VMs against physical memory."""
    return {"configured_mb": configured_mb, "physical_mb": physical_mb,
            "ratio": ratio(configured_mb, physical_mb)}


def compound(*ratios):
    """Two stacked optimistic schedulers bet the product of their ratios
    (e.g. Kubernetes limits/allocatable on a VM times the ESXi host's
    vCPU:pCPU); None when any layer is unknown."""
    product = 1.0
    for value in ratios:
        if value is None:
            return None
        product *= value
    return round(product, 3)


def compound_figures(kubernetes, hypervisor):
    """The compound bet per resource: the Kubernetes limits ratio of a node
    times the hypervisor ratio of the host under it. kubernetes: {cpu,
    memory} limits/allocatable; hypervisor: {cpu, memory} vCPU:core and
    configured:physical memory."""
    return dict((resource, compound(kubernetes.get(resource), hypervisor.get(resource))) for resource in ("cpu", "memory"))


# Host figures a watermark can be set on, in the order reasons name them.
WATERMARKS = ("cpu_ready_pct", "balloon_mb", "swapped_mb", "vcpu_per_core", "memory_ratio")


def check_watermarks(watermarks, reopen_fraction=1.0):
    """Watermarks as {name: number or None (not checked)}; raises
    ValueRangeError naming the field for an unknown name, a negative or
    non-numeric value, or a reopen fraction outside (0, 1]."""
    checked = {}
    for name, value in (watermarks or {}).items():
        field = "watermarks.%s" % name
        if name not in WATERMARKS:
            raise ValueRangeError(field, value, "a watermark named one of %s" % ", ".join(WATERMARKS))
        if value is None:
            continue
        if isinstance(value, bool):
            raise ValueRangeError(field, value, "a number, 0 or more (or null: not checked)")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueRangeError(field, value, "a number, 0 or more (or null: not checked)")
        if number < 0:
            raise ValueRangeError(field, value, "a number, 0 or more (or null: not checked)")
        checked[name] = number
    if isinstance(reopen_fraction, bool) or not isinstance(reopen_fraction, (int, float)) \
            or not 0 < reopen_fraction <= 1:
        raise ValueRangeError("reopen_fraction", reopen_fraction, "greater than 0 and at most 1")
    return checked


def crossed(figures, watermarks, fraction=1.0):
    """The watermarks a host's figures are above (strictly), in WATERMARKS
    order: [{name, value, watermark}]. A figure without data (None) never
    crosses: no statistics is not pressure. fraction scales the watermarks
    (hysteresis)."""
    above = []
    for name in WATERMARKS:
        limit, value = watermarks.get(name), figures.get(name)
        if limit is None or value is None:
            continue
        if value > limit * fraction:
            above.append({"name": name, "value": value, "watermark": round(limit * fraction, 6)})
    return above


def describe_crossed(above):
    """'vcpu_per_core 1.0 > 0.75; balloon_mb 12 > 0' for people and gate records."""
    return "; ".join("%s %s > %s" % (entry["name"], _plain_number(entry["value"]), _plain_number(entry["watermark"]))
                     for entry in above)


def _plain_number(value):
    return ("%d" % value) if float(value).is_integer() else ("%g" % value)


def watermark_decision(figures, watermarks, gated_now=False, reopen_fraction=1.0):
    """Whether a host's nodes should be closed to new VMs: {"gated": bool,
    "crossed": [...], "held": bool}. Above any watermark: gated. A host whose
    nodes are gated now stays gated until every figure is at or under
    watermark x reopen_fraction (hysteresis, so a figure hovering at the
    watermark does not open and close the nodes on every run); "held" says
    that is why it is still gated."""
    above = crossed(figures, watermarks)
    if above:
        return {"gated": True, "crossed": above, "held": False}
    if gated_now and reopen_fraction < 1:
        still = crossed(figures, watermarks, reopen_fraction)
        if still:
            return {"gated": True, "crossed": still, "held": True}
    return {"gated": False, "crossed": [], "held": False}
