# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Overcommit as figures any platform can report: how much is promised
against what the hardware has. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


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
