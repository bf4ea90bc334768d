# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Seeded generators of the simulator's scenarios. Pure: the same name and
seed give the same trace, byte for byte.

Demand is a VM's level times a daily curve (where a scenario has one) times
slow noise (an AR(1) process: load drifts, it does not jump every 10 s),
clipped to the VM's vCPUs. In the small scenarios a noisy neighbour wants
a level drawn between 60 % and all of its vCPUs while it is noisy (on either
side of the policy's flat-out line, never placed at it) and is marked as
the ground-truth culprit for those intervals only; in the fleet the ground
truth comes from each VM's own history (label_culprits_by_history)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import random

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.simulate.trace import Trace

INTERVAL = 10.0
HOUR = 3600.0
DAY = 24 * HOUR


def _intervals(seconds):
    return int(round(seconds / INTERVAL))


class Builder(object):
    """Adds VMs with demand curves to a trace."""

    def __init__(self, name, seed, hosts, seconds):
        self.rng = random.Random("%s/%s" % (name, seed))
        self.trace = Trace(name, INTERVAL, hosts)
        self.trace.grow(_intervals(seconds))
        self.trace.has_ground_truth = True

    def noise(self, sigma, tau_seconds=120.0):
        """Slow multiplicative noise around 1, one value per interval."""
        count = self.trace.count
        keep = math.exp(-INTERVAL / tau_seconds)
        spread = sigma * math.sqrt(1.0 - keep * keep)
        gauss = self.rng.gauss
        value, values = gauss(0.0, sigma), [0.0] * count
        for index in range(count):
            value = keep * value + spread * gauss(0.0, 1.0)
            values[index] = 1.0 + value
        return values

    def vm(self, host, name, vm_class, vcpus, level, sigma=0.05, curve=None, baseline_cpus=None, ceiling=1.0):
        """A VM wanting `level` CPUs (times the curve and the noise), never
        more than `ceiling` of its vCPUs."""
        key = self.trace.add_vm(host, name, vm_class, vcpus, baseline_cpus)
        demand = self.trace.demand[key]
        noise = self.noise(sigma) if sigma else None
        for index in range(self.trace.count):
            value = level * (curve[index] if curve is not None else 1.0) * (noise[index] if noise else 1.0)
            demand[index] = min(ceiling * vcpus, max(0.0, value))
        return key

    def vms(self, host, prefix, count, vcpus, level, sigma=0.05):
        """`count` shared VMs alike, named prefix-1, prefix-2, ..."""
        for number in range(1, count + 1):
            self.vm(host, "%s-%d" % (prefix, number), "shared", vcpus, level, sigma=sigma)

    def noisy_level(self, vcpus):
        """What a noisy neighbour of `vcpus` wants: drawn from 60 % to all of
        its vCPUs, as the fleet's are."""
        return self.rng.uniform(0.6, 1.0) * vcpus

    def burst(self, key, start, end, level, culprit=True):
        """From `start` to `end` seconds the VM wants `level` CPUs (with a
        little noise); a culprit in the ground truth when `culprit`."""
        vcpus = self.trace.vms[key]["vcpus"]
        first, last = _intervals(start), min(self.trace.count, _intervals(end))
        for index in range(first, last):
            self.trace.demand[key][index] = min(float(vcpus), level * (1.0 + self.rng.uniform(-0.02, 0.02)))
            if culprit:
                self.trace.culprit[key][index] = 1

    def label_culprits_by_history(self, ratio=2.0, excess_share=0.25):
        """Ground truth from each shared VM's own history, not from how its
        demand was made: a culprit in the intervals it wants at least `ratio`
        times its usual demand (its median over the trace) and at least
        `excess_share` of its vCPUs more than that."""
        for key, vm in self.trace.vms.items():
            if vm["class"] != "shared":
                continue
            demand = self.trace.demand[key]
            usual = sorted(demand)[len(demand) // 2]
            line = max(ratio * usual, usual + excess_share * vm["vcpus"])
            flags = self.trace.culprit[key]
            for index, value in enumerate(demand):
                flags[index] = 1 if value >= line else 0

    def daily_curve(self, low, high, phase=0.0):
        """A day's load shape from `low` (night) to `high` (afternoon)."""
        values = []
        for index in range(self.trace.count):
            hour = (index * INTERVAL / HOUR + phase) % 24
            values.append(low + (high - low) * 0.5 * (1.0 - math.cos(2 * math.pi * (hour - 3.0) / 24.0)))
        return values


def noisy_neighbour(seed):
    """One host: a noisy neighbour among idle VMs and three web VMs that
    want their CPU, for an hour; the neighbour is noisy from minute 10 to 40."""
    build = Builder("noisy_neighbour", seed, {"hv-1": 8}, HOUR)
    culprit = build.vm("hv-1", "batch-1", "shared", 8, 0.2)
    build.burst(culprit, 600, 2400, build.noisy_level(8))
    build.vms("hv-1", "web", 3, 2, 1.5)
    build.vms("hv-1", "idle", 6, 2, 0.05, sigma=0.2)
    return build.trace


def several_culprits(seed):
    """Four hosts, two noisy neighbours each at overlapping times, with
    several VMs on each host that want their CPU."""
    build = Builder("several_culprits", seed, dict(("hv-%d" % n, 16) for n in range(1, 5)), 2 * HOUR)
    for host_number in range(1, 5):
        host = "hv-%d" % host_number
        for number in range(1, 3):
            key = build.vm(host, "batch-%d" % number, "shared", 8, 0.3)
            start = build.rng.uniform(300, 2400)
            build.burst(key, start, start + build.rng.uniform(1800, 3600), build.noisy_level(8))
        for number in range(1, 5):
            build.vm(host, "app-%d" % number, "shared", 4, build.rng.uniform(2.2, 2.8))
        build.vms(host, "idle", 4, 2, 0.1, sigma=0.2)
    return build.trace


def role_swap(seed):
    """A noisy neighbour that stops, and a VM that was its victim turning
    noisy itself: the roles swap at minute 45."""
    build = Builder("role_swap", seed, {"hv-1": 8}, 90 * 60)
    first = build.vm("hv-1", "etl-1", "shared", 8, 0.2)
    build.burst(first, 600, 2700, build.noisy_level(8))
    second = build.vm("hv-1", "db-1", "shared", 8, 1.4)
    build.burst(second, 2700, 4800, build.noisy_level(8))
    build.vms("hv-1", "web", 3, 2, 1.5)
    build.vms("hv-1", "idle", 3, 2, 0.05, sigma=0.2)
    return build.trace


def diurnal(seed):
    """Four hosts for a day, every VM following the daily curve, no culprit:
    two hosts go past their capacity at the afternoon peak. Nobody may be
    throttled; gating the overloaded nodes is the right answer."""
    hosts = dict(("hv-%d" % n, 16) for n in range(1, 5))
    build = Builder("diurnal", seed, hosts, DAY)
    for host_number, peak in zip(range(1, 5), (1.08, 1.04, 0.85, 0.7)):
        host = "hv-%d" % host_number
        curve = build.daily_curve(0.2, 1.0, phase=build.rng.uniform(-1, 1))
        sizes = [4] * 12
        per_vcpu = peak * hosts[host] / sum(sizes)
        for number, vcpus in enumerate(sizes, start=1):
            build.vm(host, "app-%d" % number, "shared", vcpus, per_vcpu * vcpus * build.rng.uniform(0.8, 1.2),
                     sigma=0.08, curve=curve)
    return build.trace


def burstable_drain(seed):
    """A day on a host with room to spare: a burstable VM bursts until its
    credits run out, is held to its baseline, earns credits overnight and
    bursts again; a second burstable VM stays under its baseline."""
    build = Builder("burstable_drain", seed, {"hv-1": 8}, DAY)
    bursty = build.vm("hv-1", "api-1", "burstable", 2, 0.1, sigma=0.1, baseline_cpus=0.4)
    for start, end in ((1 * HOUR, 3 * HOUR), (9 * HOUR, 12 * HOUR), (18 * HOUR, 18.5 * HOUR)):
        build.burst(bursty, start, end, 1.9, culprit=False)
    build.vm("hv-1", "cron-1", "burstable", 2, 0.2, sigma=0.2, baseline_cpus=0.4)
    build.vms("hv-1", "web", 3, 2, 0.8)
    return build.trace


def dedicated_full_load(seed):
    """A dedicated VM on its pinned cores beside a noisy shared neighbour and
    VMs that want their CPU: the dedicated VM uses the most CPU of all, its
    load varies (from about a third to all of its cores), and it must never
    be touched; its idle pinned cores are no CPU the shared VMs can use."""
    build = Builder("dedicated_full_load", seed, {"hv-1": 16}, HOUR)
    build.vm("hv-1", "rt-1", "dedicated", 8, 5.5, sigma=0.3)
    culprit = build.vm("hv-1", "batch-1", "shared", 8, 0.2)
    build.burst(culprit, 600, 2700, build.noisy_level(8))
    build.vms("hv-1", "web", 4, 2, 1.5)
    return build.trace


def fleet(seed, hosts=50, vms_per_host=20, seconds=DAY):
    """About 1,000 VMs on 50 hosts of 16 to 48 CPUs for a day: daily load, a fifth
    of the VMs busy ones (at 75 % to 98 % of their vCPUs at their peak, on
    either side of the policy's flat-out line), noisy neighbours coming and
    going at strengths from 60 % to all of their vCPUs, burstable VMs and
    dedicated VMs pinned to their cores at a load that varies. A culprit is
    whatever VM wants far above its own usual demand (its history), not what
    the generator meant to be noisy."""
    sizes = (16, 24, 32, 40, 48)
    build = Builder("fleet", seed, {}, seconds)
    rng = build.rng
    host_cpus = dict(("hv-%02d" % n, rng.choice(sizes)) for n in range(1, hosts + 1))
    build.trace.hosts.update(host_cpus)
    for host_number in range(1, hosts + 1):
        host = "hv-%02d" % host_number
        cpus = host_cpus[host]
        curve = build.daily_curve(0.25, 1.0, phase=rng.uniform(-2, 2))
        peak = rng.uniform(0.7, 1.0)
        specs = []
        for number in range(1, max(4, int(round(vms_per_host * cpus / 32.0))) + 1):
            roll = rng.random()
            vm_class = "dedicated" if roll < 0.03 else "burstable" if roll < 0.10 else "shared"
            specs.append(("vm-%02d-%02d" % (host_number, number), vm_class, rng.choice((2, 4, 4, 8))))
        dedicated = sum(vcpus for _name, vm_class, vcpus in specs if vm_class == "dedicated")
        shared_vcpus = sum(vcpus for _name, vm_class, vcpus in specs if vm_class != "dedicated")
        per_vcpu = peak * max(cpus - dedicated, 1) / shared_vcpus
        for name, vm_class, vcpus in specs:
            if vm_class == "dedicated":
                build.vm(host, name, vm_class, vcpus, vcpus * rng.uniform(0.3, 0.9), sigma=0.3)
                continue
            baseline = round(0.2 * vcpus, 2) if vm_class == "burstable" else None
            # A fifth of the VMs are busy ones, wanting twice the host's mean
            # per vCPU: those a noisy neighbour makes wait.
            busy = rng.random() < 0.2
            share = rng.uniform(1.8, 2.4) if busy else rng.uniform(0.5, 1.1)
            key = build.vm(host, name, vm_class, vcpus, per_vcpu * vcpus * share, sigma=0.08,
                           curve=curve, baseline_cpus=baseline, ceiling=rng.uniform(0.75, 0.98) if busy else 0.8)
            if vm_class == "shared" and rng.random() < 0.08:
                start = rng.uniform(0, seconds - 2 * HOUR)
                build.burst(key, start, start + rng.uniform(1200, 7200), rng.uniform(0.6, 1.0) * vcpus, culprit=False)
    build.label_culprits_by_history()
    return build.trace


SCENARIOS = {
    "noisy_neighbour": noisy_neighbour,
    "several_culprits": several_culprits,
    "role_swap": role_swap,
    "diurnal": diurnal,
    "burstable_drain": burstable_drain,
    "dedicated_full_load": dedicated_full_load,
    "fleet": fleet,
}
# The scenarios `all` stands for: everything but the fleet, which is a
# benchmark of its own (minutes, not seconds).
SMALL = ("noisy_neighbour", "several_culprits", "role_swap", "diurnal", "burstable_drain", "dedicated_full_load")


def generate(name, seed=1):
    if name not in SCENARIOS:
        raise ValueRangeError("scenario", name, "one of %s" % ", ".join(sorted(SCENARIOS)))
    return SCENARIOS[name](seed)
