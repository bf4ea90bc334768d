# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a KubeVirt VM is promised at creation (the static overcommit model).
Pure: no I/O.

CPU: without an explicit request, the virt-launcher pod requests
vCPUs / cpuAllocationRatio CPUs. Memory: without an explicit request, the
launcher requests guest x 100 / memoryOvercommit. Values KubeVirt would not
take are refused here, because KubeVirt itself silently keeps its previous
configuration when given an invalid one."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError

DEFAULT_CPU_ALLOCATION_RATIO = 10
DEFAULT_MEMORY_OVERCOMMIT = 100
MEMORY_OVERCOMMIT_MIN = 10
# An instancetype's memory.overcommitPercent: request = guest x (1 - pct/100).
INSTANCETYPE_OVERCOMMIT_RANGE = (0, 100)


def check_cpu_allocation_ratio(ratio, field="cpu_allocation_ratio"):
    if isinstance(ratio, bool) or not isinstance(ratio, int) or ratio < 1:
        raise ValueRangeError(field, ratio, "a whole number of vCPUs per physical CPU, at least 1 (KubeVirt ignores "
                                            "values of 0 or less and silently keeps its previous configuration)")
    return ratio


def check_memory_overcommit(percent, field="memory_overcommit"):
    if isinstance(percent, bool) or not isinstance(percent, int) or percent < MEMORY_OVERCOMMIT_MIN:
        raise ValueRangeError(field, percent, "a whole percentage of at least %d (100 = no overcommit, 150 = the guest "
                                              "sees 1.5x what the launcher requests)" % MEMORY_OVERCOMMIT_MIN)
    return percent


def cpu_request(vcpus, ratio=DEFAULT_CPU_ALLOCATION_RATIO):
    """CPUs the launcher requests for a VM without an explicit CPU request."""
    return vcpus / float(check_cpu_allocation_ratio(ratio, "cpuAllocationRatio"))


def memory_request(guest_bytes, overcommit_percent=DEFAULT_MEMORY_OVERCOMMIT):
    """Bytes the launcher requests for the guest when the VM sets no memory
    request (memoryOvercommit applies only then)."""
    return int(guest_bytes * 100 // check_memory_overcommit(overcommit_percent, "memoryOvercommit"))


def cpu_overcommit_ratio(vcpus, requested_cpus):
    """vCPUs sold per requested physical CPU (None when nothing is requested)."""
    if not requested_cpus:
        return None
    return vcpus / float(requested_cpus)
