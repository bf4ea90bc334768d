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
thread waits) is modelled from the CPUs' worth of waiting w as 1 - e^-w
(waits that fall at random overlap), averaged like the kernel's avg10 and
avg60 (exponentially, over 10 s and 60 s).

The fluid share-out says a VM that wants less than its fair share never
waits; on a real host its vCPUs wait whenever they wake to find every CPU
busy. A VM whose vCPUs sleep (it wants less than all of them) waits
QUEUE_DELAY of what it runs times the chance that the others' busy CPUs
fill the pool's last one (queue_wait), fitted on the lab's cores
(bench/host_queueing.py, measured beside modelled in docs/policy.md).
Where the VMs' CPU weights differ, a waking vCPU preempts a busy neighbour
of lower weight: its wait is scaled by its two most preemptible busy
neighbours' weight ratios (theirs over its own, at most 1), the first raised
to WEIGHT_EXPONENTS[0], the second to WEIGHT_EXPONENTS[1] (fitted on a lab
sweep of a light guest beside two spinners at several cpu_shares,
bench/weight_sweep.py; on 2 cores, so only two neighbours are in the form).
With equal weights the model is the QUEUE_DELAY fit unchanged.
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


# The wait of a waking vCPU that finds every CPU of the pool busy, as a share
# of what it runs: fitted on the lab by bench/host_queueing.py (docs/policy.md,
# "The model of a host").
QUEUE_DELAY = 1.06
# How a waking vCPU's wait shrinks with its busy neighbours' weight ratios
# (the most preemptible first, then the next): fitted on the lab by
# bench/weight_sweep.py (docs/policy.md, "The model of a host").
WEIGHT_EXPONENTS = (0.82, 0.24)


def preemption_share(neighbours, mine, exponents=None):
    """The share of its queue wait a waking vCPU of weight `mine` still has
    beside busy `neighbours` [(CPUs wanted, weight)]: 1 beside equal or
    higher weights; less the lower the weights of the two it preempts most
    easily (a neighbour that wants under a CPU counts in proportion: it is
    not always there to be preempted)."""
    exponents = WEIGHT_EXPONENTS if exponents is None else exponents
    ratios = sorted(1.0 - min(1.0, want) * (1.0 - min(1.0, weight / mine)) for want, weight in neighbours)
    share = 1.0
    for ratio, exponent in zip(ratios, exponents):
        share *= ratio ** exponent
    return share


def queue_wait(queue_delay, used, others_busy, pool):
    """CPUs' worth of waiting of a VM whose vCPUs sleep and wake (it wants
    less than its vCPUs), beyond what the fluid share-out withholds: each time
    they wake they find every CPU busy with the chance that the others' busy
    CPUs fill the last one too (others_busy less pool - 1, between 0 and 1),
    and then wait queue_delay of what they run. Measured on 2 cores only: on a
    bigger pool, VMs that wake independently may find it full sooner."""
    full = min(1.0, max(0.0, others_busy - (pool - 1.0)))
    return queue_delay * used * full


def pressure_some(waiting):
    """PSI `some` (%) of `waiting` CPUs' worth of waiting threads. It is the
    share of time at least one thread waits: waits that fall at random
    overlap, so a CPU's worth of them leaves a third of the time with nobody
    waiting (the lab's figures, docs/policy.md)."""
    return 100.0 * (1.0 - math.exp(-waiting))


class HostModel(object):
    """One host's CPU across intervals: its pool, the VMs' caps, and the
    pressure averages that carry over from one interval to the next."""

    def __init__(self, name, cpus, interval_seconds, queue_delay=QUEUE_DELAY, weight_exponents=None):
        self.name = name
        self.cpus = float(cpus)
        self.queue_delay = queue_delay
        self.weight_exponents = WEIGHT_EXPONENTS if weight_exponents is None else weight_exponents
        self.avg10 = 0.0
        self.avg60 = 0.0
        self.decay10 = math.exp(-interval_seconds / 10.0)
        self.decay60 = math.exp(-interval_seconds / 60.0)

    def run(self, vms, demands, caps, weighted_queue=False):
        """One interval. vms: [(vcpus, dedicated, weight)], demands: CPUs each VM
        wants, caps: each VM's cap in CPUs or None; weighted_queue: the
        weights are the host's own (read, or set by a policy), not vCPUs
        standing in for them, so they order the wake-ups too. Returns (used, steal,
        contention steal: the part no cap of its own explains, queue waits
        included) per VM; updates the pressure averages."""
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
        if self.queue_delay and shared and pool > 0:
            busy = sum(used[index] for index in shared)
            weighted = weighted_queue and len(set(weights)) > 1
            for position, index in enumerate(shared):
                if wants[index] >= vms[index][0] - 1e-9 or (caps[index] is not None and caps[index] <= wants[index]):
                    continue  # a vCPU that never sleeps never wakes to a full host; a cap's wait is steal already
                wait = queue_wait(self.queue_delay, used[index], busy - used[index], pool)
                if weighted:
                    # A waking vCPU runs before a busy neighbour of lower
                    # weight (its virtual time runs slower).
                    wait *= preemption_share([(wants[other], vms[other][2]) for other in shared if other != index],
                                             vms[index][2], self.weight_exponents)
                steal[index] += wait
                contention[index] += wait
        # A capped VM's vCPUs wait out each throttled period, and the kernel
        # counts that wait as the host's CPU pressure (cgroup v1, measured on
        # the lab: docs/policy.md), so pressure is every VM's wait, the caps'
        # included.
        some = pressure_some(sum(steal))
        self.avg10 = self.avg10 * self.decay10 + some * (1.0 - self.decay10)
        self.avg60 = self.avg60 * self.decay60 + some * (1.0 - self.decay60)
        return used, steal, contention


# -- calibration (bench/host_queueing.py measures, these fit)

def lab_point(cpus, point, queue_delay):
    """The model on one of bench/host_queueing.py's loads: a light VM of one
    vCPU wanting `demand`, `spinners` VMs each spinning one vCPU, and what the
    host itself ran (`background`, CPUs) as one more consumer; all weighted
    alike, as libvirt's default shares are. Returns the light VM's steal, the
    spinners' mean use (None without any) and the host's PSI some (%)."""
    spinners = point["spinners"]
    model = HostModel("lab", cpus, 10.0, queue_delay=queue_delay)
    vms = [(1, False, 1.0)] + [(1, False, 1.0)] * spinners + [(cpus, False, 1.0)]
    demands = [point["demand"]] + [1.0] * spinners + [point["background"]]
    used, steal, _contention = model.run(vms, demands, [None] * len(vms))
    return steal[0], (sum(used[1:1 + spinners]) / spinners if spinners else None), pressure_some(sum(steal))


def weighted_lab_point(cpus, point, queue_delay=QUEUE_DELAY, exponents=None):
    """The model on one of bench/weight_sweep.py's loads: a light VM of one
    vCPU at `light_shares` wanting `demand`, spinners of one vCPU at their
    `spinner_shares`, and what the host itself ran (`background`) at the
    default weight. Returns the light VM's steal and the spinners' use."""
    spinners = point["spinner_shares"]
    model = HostModel("lab", cpus, 10.0, queue_delay=queue_delay, weight_exponents=exponents)
    default = point["default_shares"]
    vms = [(1, False, float(point["light_shares"]))] + [(1, False, float(shares)) for shares in spinners] + \
        [(cpus, False, float(default))]
    demands = [point["demand"]] + [1.0] * len(spinners) + [point["background"]]
    used, steal, _contention = model.run(vms, demands, [None] * len(vms), weighted_queue=True)
    return steal[0], used[1:1 + len(spinners)]


def fit_weight_exponents(cpus, points, queue_delay=QUEUE_DELAY, step=0.01):
    """The WEIGHT_EXPONENTS (each 0..2, to `step`) that bring the model's
    wait ratio of the light VM closest to the one measured, over the points
    where the weights differ (least squares); the equal-weight points are
    QUEUE_DELAY's."""
    weighted = [p for p in points if any(s != p["light_shares"] for s in p["spinner_shares"])]
    if not weighted:
        return WEIGHT_EXPONENTS

    def error(exponents):
        total = 0.0
        for point in weighted:
            steal = weighted_lab_point(cpus, point, queue_delay, exponents)[0]
            total += (wait_ratio(point["used"], point["delay"]) - wait_ratio(point["used"], steal)) ** 2
        return total

    grid = [round(n * step, 6) for n in range(int(round(2.0 / step)) + 1)]
    # The first exponent alone decides the points with one demoted neighbour:
    # a coarse pass over both, then the best to `step` around it.
    coarse = min(((a, b) for a in grid[::5] for b in grid[::5]), key=error)
    near = [value for value in grid if abs(value - coarse[0]) <= 5 * step]
    near_b = [value for value in grid if abs(value - coarse[1]) <= 5 * step]
    return min(((a, b) for a in near for b in near_b), key=error)


def wait_ratio(used, delay):
    """delay / (used + delay): the share of the time a VM wanted CPU that it waited."""
    return delay / (used + delay) if used + delay > 0 else 0.0


def fit_queue_delay(cpus, points):
    """The queue_delay that brings the model's steal of the light VM closest
    to the delay measured (least squares over the points)."""
    numerator = denominator = 0.0
    for point in points:
        fluid = lab_point(cpus, point, 0.0)[0]
        per_unit = lab_point(cpus, point, 1.0)[0] - fluid
        numerator += (point["delay"] - fluid) * per_unit
        denominator += per_unit * per_unit
    return numerator / denominator if denominator else 0.0
