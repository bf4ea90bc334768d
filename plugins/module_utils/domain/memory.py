# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Memory of a KubeVirt VM: the virt-launcher overhead as KubeVirt estimates
it, and the rules a guest/request/limit triple must keep. Pure: bytes in,
plain data out.

KubeVirt adds its overhead estimate to the launcher pod's request and limit,
but the estimate is not a bound: QEMU's real overhead grows with devices, I/O
and migrations. A VM limit of exactly the guest memory leaves no slack beyond
the estimate and is a classic source of OOM kills, so this collection keeps
every VM limit at least one overhead above the guest memory."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

MI = 2 ** 20
GI = 2 ** 30
# Components of KubeVirt's launcher overhead (GetMemoryOverhead, v1.7 to
# v1.9): page tables of the VMI's memory request, the resident memory of
# virt-launcher-monitor (25 Mi), virt-launcher (100 Mi), virtlogd (25 Mi),
# virtqemud (40 Mi) and QEMU itself (30 Mi).
PAGETABLE_DIVISOR = 512
FIXED_OVERHEAD = 220 * MI
PER_VCPU_OVERHEAD = 8 * MI
IOTHREAD_OVERHEAD = 8 * MI
VIDEO_OVERHEAD = 32 * MI
DEDICATED_OVERHEAD = 100 * MI
VFIO_OVERHEAD = GI


def launcher_overhead(request, vcpus, graphics=True, dedicated=False, vfio=False):
    """Bytes KubeVirt adds for the launcher of a VM whose VMI requests
    `request` bytes of memory (its page tables are counted on the request,
    not the guest memory) with `vcpus` vCPUs. A running VMI of a KubeVirt
    that reports it has the exact figure in status.memory.memoryOverhead;
    prefer that when there is one."""
    # KubeVirt takes the request in kB, rounded up, for the page tables.
    pagetables = -(-request // 1000) * 1000 // PAGETABLE_DIVISOR
    overhead = pagetables + FIXED_OVERHEAD + PER_VCPU_OVERHEAD * vcpus + IOTHREAD_OVERHEAD
    if graphics:
        overhead += VIDEO_OVERHEAD
    if dedicated:
        overhead += DEDICATED_OVERHEAD
    if vfio:
        overhead += VFIO_OVERHEAD
    return overhead


def round_up_mi(size):
    return -(-size // MI) * MI


def least_limit(guest, overhead):
    """The smallest VM memory limit the rules allow: guest + overhead, in Mi."""
    return round_up_mi(guest + overhead)


def findings(guest, request, limit, overhead):
    """(check, message) for every rule a guest/request/limit triple breaks.
    request/limit None: not set."""
    found = []
    if request is not None and request > guest:
        found.append(("memory_request_above_guest", "the memory request (%s) is above the guest memory (%s): "
                      "the difference is requested and never used" % (mib(request), mib(guest))))
    if limit is not None:
        if limit == guest:
            found.append(("memory_limit_equals_guest", "the memory limit equals the guest memory (%s): no room for "
                          "the launcher beyond KubeVirt's estimate; OOM-kill risk" % mib(guest)))
        elif limit < guest + overhead:
            found.append(("memory_limit_below_guest_plus_overhead", "the memory limit (%s) is under guest memory + "
                          "launcher overhead (%s + %s): OOM-kill risk" % (mib(limit), mib(guest), mib(overhead))))
    return found


def mib(size):
    return "%gMi" % round(size / float(MI), 1)


# Two scales of memory overcommit that are easily confused:
# - an instancetype's spec.memory.overcommitPercent (0-100): the launcher
#   requests guest x (1 - percent/100); 25 lets the guest see 4/3 of the request;
# - the KubeVirt CR's developerConfiguration.memoryOvercommit (>= 10, default
#   100): the guest sees memoryOvercommit % of the request; 150 means 1.5x.
OVERCOMMIT_PERCENT_RANGE = (0, 100)
# The most an instancetype may overcommit by default: the guest sees at most
# twice what its launcher requests.
DEFAULT_MAX_OVERCOMMIT_PERCENT = 50


def request_for_overcommit_percent(guest, percent):
    """Bytes the launcher requests for `guest` bytes at an instancetype's
    overcommitPercent, as KubeVirt computes it (rounded down to a byte)."""
    return guest * (100 - percent) // 100


def memory_overcommit_scale(percent):
    """The KubeVirt CR's memoryOvercommit value that overcommits as much as
    an instancetype's overcommitPercent (guest / request x 100); None at 100,
    where nothing at all is requested."""
    if percent >= 100:
        return None
    return round(100.0 * 100 / (100 - percent), 1)


def overcommit_percent_refusal(percent, dedicated, max_percent=DEFAULT_MAX_OVERCOMMIT_PERCENT):
    """Why an instancetype's overcommitPercent breaks the memory rules (None
    when it does not): outside 0-100 (the CRD's range), any for a dedicated
    class (never overcommitted), or above `max_percent`."""
    low, high = OVERCOMMIT_PERCENT_RANGE
    if isinstance(percent, bool) or not isinstance(percent, int) or not low <= percent <= high:
        return "an integer percentage %d-%d of the guest memory the launcher does not request" % (low, high)
    if dedicated and percent:
        return "0 for a dedicated class: its memory is never overcommitted"
    if percent > max_percent:
        return ("at most %d (the guest sees at most %g %% of what the launcher requests); %d would let it see %g %%"
                % (max_percent, memory_overcommit_scale(max_percent), percent,
                   memory_overcommit_scale(percent) or float("inf")))
    return None
