# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""VM classes and the rules every platform applies to them. Pure: no I/O.

dedicated: never throttled, never overcommitted.
shared:    overcommitted, may be throttled, never below a floor.
burstable: baseline + burst; throttled like shared, floor at its baseline.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DEDICATED = "dedicated"
SHARED = "shared"
BURSTABLE = "burstable"
CLASSES = (DEDICATED, SHARED, BURSTABLE)
# A VM with no class is treated as shared: overcommit is the default product.
DEFAULT_CLASS = SHARED
# The shared floor as a fraction of the vCPUs: a 4 vCPU VM is not capped
# under 1 CPU unless forced.
DEFAULT_FLOOR_FRACTION = 0.25


class Refusal(Exception):
    """A change the class rules forbid; `force` overrides it."""


def resolve_class(declared, pinned=False, realtime=False):
    """The effective class and why. Pinned or realtime vCPUs make a VM
    dedicated whatever its label says: throttling it would break the promise
    its placement encodes."""
    if pinned:
        return DEDICATED, "its vCPUs are pinned"
    if realtime:
        return DEDICATED, "it has realtime vCPU scheduling"
    if declared == DEDICATED:
        return DEDICATED, "its class is dedicated"
    if declared in CLASSES:
        return declared, "its class is %s" % declared
    return DEFAULT_CLASS, "it has no class (treated as %s)" % DEFAULT_CLASS


def floor_cpus(vcpus, floor_fraction=DEFAULT_FLOOR_FRACTION):
    """Least a throttle may leave a VM with, in CPUs for the whole VM."""
    return vcpus * floor_fraction


def check_throttle(vm_class, why, vcpus, domain_cpus, floor_fraction=DEFAULT_FLOOR_FRACTION, force=False):
    """Raises Refusal when the class rules forbid capping a VM of `vcpus`
    vCPUs to `domain_cpus` CPUs in all (None: no CPU cap, e.g. shares only)."""
    if force:
        return
    if vm_class == DEDICATED:
        raise Refusal("refusing to throttle a dedicated VM (%s); use force to override" % why)
    if domain_cpus is not None:
        floor = floor_cpus(vcpus, floor_fraction)
        if domain_cpus + 1e-9 < floor:
            raise Refusal("a cap of %g CPUs is under the %s floor of %g CPUs (%d vCPUs x %g); use force to override"
                          % (domain_cpus, vm_class, floor, vcpus, floor_fraction))
