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

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal

DEDICATED = "dedicated"
SHARED = "shared"
BURSTABLE = "burstable"
CLASSES = (DEDICATED, SHARED, BURSTABLE)
# A VM with no class is treated as shared: overcommit is the default product.
DEFAULT_CLASS = SHARED
# The shared floor as a fraction of the vCPUs: a 4 vCPU VM is not capped
# under 1 CPU unless forced.
DEFAULT_FLOOR_FRACTION = 0.25


class Refusal(ObjectRefusal):
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


def cpu_template(vm_class, vcpus, request=None, limit=None, floor_fraction=DEFAULT_FLOOR_FRACTION, force=False):
    """The CPU a VM of a class is promised and capped at, in CPUs (None: not
    set, so the request follows the cluster's allocation ratio and there is
    no limit), and whether it gets dedicated CPUs. Raises Refusal when the
    class rules forbid the values.

    dedicated: dedicated CPUs, request = limit = vCPUs: never overcommitted.
    shared:    request explicit or from the ratio, optional limit, not under the floor.
    burstable: request = baseline, limit = ceiling, both required."""
    if vm_class == DEDICATED:
        for name, value in (("cpu_request", request), ("cpu_limit", limit)):
            if value is not None and abs(value - vcpus) > 1e-9 and not force:
                raise Refusal("%s=%g would overcommit a dedicated VM: its request and limit are its %d vCPUs; use "
                              "force to override" % (name, value, vcpus))
        return {"request": float(vcpus), "limit": float(vcpus), "dedicated": True}
    if vm_class == BURSTABLE and (request is None or limit is None):
        raise Refusal("a burstable VM needs cpu_request (its baseline) and cpu_limit (its ceiling)")
    if request is not None and request > vcpus + 1e-9:
        raise Refusal("cpu_request=%g is above the VM's %d vCPUs" % (request, vcpus))
    if limit is not None:
        if request is not None and limit + 1e-9 < request:
            raise Refusal("cpu_limit=%g is under cpu_request=%g" % (limit, request))
        floor = floor_cpus(vcpus, floor_fraction)
        if limit + 1e-9 < floor and not force:
            raise Refusal("cpu_limit=%g is under the %s floor of %g CPUs (%d vCPUs x %g); use force to override"
                          % (limit, vm_class, floor, vcpus, floor_fraction))
    return {"request": request, "limit": limit, "dedicated": False}
