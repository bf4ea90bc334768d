# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A model of one host's CPU for the simulator. Pure: no I/O.

Demand beyond capacity is shared out as CFS shares it between VMs: max-min
fair, each VM weighted by its CPU weight (the trace's, else its vCPUs), caps
honoured (a capped VM cannot take more than its cap, whatever is
free). Dedicated VMs run on their own pinned cores, outside the shared pool.
What a VM wanted and did not get is its steal (vCPU delay); the part a cap
withheld shows as steal too, as CFS throttling does in a guest. The host's
CPU pressure (PSI cpu `some`: the share of time at least one runnable
thread waits) is modelled as the CPUs' worth of waiting, saturating at one
whole thread (once a CPU's worth waits, some thread always waits), averaged
like the kernel's avg10 and avg60 (exponentially, over 10 s and 60 s).
Time a cap withholds counts as host pressure, as the kernel counts it: a
throttled vCPU thread stays runnable and waits out the period (measured on
the lab's cgroup v1 host, docs/policy.md)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math


def share_out(capacity, demands, weights):
    """Max-min fair allocation of `capacity` between `demands` with
    `weights`: nobody gets more than it wants, and the rest is split in
    proportion to the weights among those who want more."""
    total = sum(demands)
    if total <= capacity:
        return list(demands)
    count = len(demands)
    order = sorted(range(count), key=lambda i: demands[i] / weights[i])
    allocation = [0.0] * count
    remaining, weight_left = float(capacity), float(sum(weights))
    for position, index in enumerate(order):
        level = remaining / weight_left
        if demands[index] <= level * weights[index]:
            allocation[index] = demands[index]
            remaining -= demands[index]
            weight_left -= weights[index]
            continue
        for rest in order[position:]:
            allocation[rest] = level * weights[rest]
        break
    return allocation


class HostModel(object):
    """One host's CPU across intervals: its pool, the VMs' caps, and the
    pressure averages that carry over from one interval to the next."""

    def __init__(self, name, cpus, interval_seconds):
        self.name = name
        self.cpus = float(cpus)
        self.avg10 = 0.0
        self.avg60 = 0.0
        self.decay10 = math.exp(-interval_seconds / 10.0)
        self.decay60 = math.exp(-interval_seconds / 60.0)

    def run(self, vms, demands, caps):
        """One interval. vms: [(vcpus, dedicated, weight)], demands: CPUs each VM
        wants, caps: each VM's cap in CPUs or None. Returns (used, steal,
        contention steal) per VM; updates the pressure averages."""
        count = len(vms)
        wants = [0.0] * count
        shared, shared_wants, weights = [], [], []
        pool = self.cpus
        for index in range(count):
            vcpus, dedicated, weight = vms[index]
            want = min(demands[index], vcpus)
            wants[index] = want
            if dedicated:
                pool -= vcpus
                continue
            cap = caps[index]
            shared.append(index)
            shared_wants.append(want if cap is None or cap >= want else cap)
            weights.append(weight)
        used = list(wants)
        contention = [0.0] * count
        if shared:
            allocation = share_out(max(pool, 0.0), shared_wants, weights)
            for position, index in enumerate(shared):
                used[index] = allocation[position]
                contention[index] = shared_wants[position] - allocation[position]
        steal = [wants[i] - used[i] for i in range(count)]
        # A capped VM's vCPUs wait out each throttled period, and the kernel
        # counts that wait as the host's CPU pressure (cgroup v1, measured on
        # the lab: docs/policy.md), so pressure is every VM's wait, the caps'
        # included.
        waiting = sum(steal)
        some = 100.0 * min(1.0, waiting)
        self.avg10 = self.avg10 * self.decay10 + some * (1.0 - self.decay10)
        self.avg60 = self.avg60 * self.decay60 + some * (1.0 - self.decay60)
        return used, steal, contention
