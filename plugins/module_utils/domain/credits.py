# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Burstable CPU credits as the public clouds define them. Pure: no I/O.

One credit is one vCPU at 100 % for one minute. A burstable VM earns credits
at its baseline rate (a baseline of 0.4 CPU earns 0.4 credits a minute) and
spends them at the rate it uses CPU, so over a span of constant use the
balance moves by (baseline - used) x minutes. The bank holds at most 24
hours of earnings and never goes under zero; at zero the VM is held to its
baseline until it has earned enough to burst again."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError

SECONDS_PER_CREDIT = 60.0
BANK_HOURS = 24
# Balances are stored on the objects as text; this many decimals keep the
# rounding far under the 1 % the accounting promises over a day.
DECIMALS = 3


def bank_cap(baseline_cpus):
    """Most credits a VM of this baseline may hold: 24 hours of earnings."""
    return baseline_cpus * BANK_HOURS * 3600.0 / SECONDS_PER_CREDIT


def accrue(balance, baseline_cpus, used_cpus, seconds):
    """The balance after `seconds` at `used_cpus`, earning at the baseline,
    clamped to the bank."""
    if seconds <= 0:
        return balance
    moved = (baseline_cpus - used_cpus) * seconds / SECONDS_PER_CREDIT
    return min(bank_cap(baseline_cpus), max(0.0, balance + moved))


def stored(balance):
    """The balance as kept on the object."""
    return round(balance, DECIMALS)


def release_level(baseline_cpus, vcpus, burst_minutes):
    """Credits a VM held to its baseline must earn before it may burst again:
    enough to run all its vCPUs flat out for `burst_minutes` (a hysteresis
    band, so a VM at zero is not released and capped again every cycle),
    never more than the bank holds."""
    return min(bank_cap(baseline_cpus), max(0.0, vcpus - baseline_cpus) * burst_minutes)


def check_baseline(field, baseline_cpus, vcpus, whose="the VM's"):
    """A burstable baseline must be above 0 and under the VM's vCPUs (at
    its vCPUs it is not burstable, it is a shared VM with no cap); `whose`
    says whose vCPUs they are in the error (a class's, for an instancetype)."""
    if baseline_cpus is None or not 0 < baseline_cpus < vcpus:
        raise ValueRangeError(field, baseline_cpus, "a number of CPUs above 0 and under %s %s vCPUs" % (whose, vcpus))
    return float(baseline_cpus)
