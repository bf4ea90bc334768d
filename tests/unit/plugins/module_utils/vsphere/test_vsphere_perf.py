# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CPU ready % and the other overcommit figures, against samples computed by
hand: ready% = summation_ms / (interval_s x 1000) x 100."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.domain import overcommit
from ansible_collections.overcommit.control.plugins.module_utils.vsphere import perf


@pytest.mark.parametrize("summation_ms, interval_s, expected_pct", [
    (1000, 20, 5.0),      # 1 s of 20 s
    (200, 20, 1.0),
    (0, 20, 0.0),
    (20000, 20, 100.0),   # one vCPU ready the whole interval
    (8000, 20, 40.0),     # e.g. 4 vCPUs, 2 s each
    (3000, 300, 1.0),     # a 5-minute historical interval
    (1500, 1800, 1500 / 1800000.0 * 100),
])
def test_summation_ms_as_a_percentage_of_the_interval(summation_ms, interval_s, expected_pct):
    assert perf.summation_pct(summation_ms, interval_s) == pytest.approx(expected_pct)


def test_the_default_interval_is_real_time_20_seconds():
    assert perf.summation_pct(1000) == pytest.approx(5.0)


def test_aggregate_instance_sums_vcpus_so_per_vcpu_divides():
    # A 4-vCPU VM: 8000, 4000 and 12000 ms ready in three 20 s samples
    # -> 40 %, 20 %, 60 % aggregate; average 40 %, 10 % per vCPU.
    stats = perf.summation_stats([8000, 4000, 12000], [20, 20, 20], vcpus=4)
    assert stats == {"avg": 40.0, "max": 60.0, "avg_per_vcpu": 10.0, "samples": 3}


def test_missing_samples_are_left_out_not_counted_as_zero():
    # vSphere reports -1 for a sample it has no value for.
    stats = perf.summation_stats([400, -1, 1200], [20, 20, 20], vcpus=1)
    assert stats == {"avg": 4.0, "max": 6.0, "avg_per_vcpu": 4.0, "samples": 2}


def test_no_samples_give_no_figure():
    assert perf.summation_stats([], [], 2) == {"avg": None, "max": None, "avg_per_vcpu": None, "samples": 0}
    assert perf.summation_stats(None, [], 2)["avg"] is None


def test_a_bad_interval_is_refused():
    with pytest.raises(ValueError):
        perf.summation_pct(100, 0)


def test_memory_gauges_are_kilobytes_reported_in_mb():
    assert perf.kilobytes_stats([1048576, 0], [20, 20]) == {"avg_mb": 512.0, "max_mb": 1024.0, "samples": 2}


def test_vm_figures_use_the_ids_this_server_gave_each_counter_name():
    counters = {"cpu_ready": 12, "cpu_costop": 399, "balloon": 90, "swapped": None}
    sample = {"intervals": [20, 20], "series": {12: [1000, 3000], 399: [200, 200], 90: [2048, 4096], 70: [1, 1]}}
    figures = perf.vm_figures(sample, counters, vcpus=2)
    assert figures["cpu_ready_pct"] == {"avg": 10.0, "max": 15.0, "avg_per_vcpu": 5.0, "samples": 2}
    assert figures["cpu_costop_pct"]["avg"] == 1.0
    assert figures["balloon"] == {"avg_mb": 3.0, "max_mb": 4.0, "samples": 2}
    # Not offered by this server: no figure, rather than another counter's.
    assert figures["swapped"]["samples"] == 0
    assert figures["interval_s"] == 20


def test_overcommit_ratios():
    assert overcommit.cpu_figures(96, 32, 64) == {"vcpus": 96, "cores": 32, "threads": 64,
                                                  "vcpu_per_core": 3.0, "vcpu_per_thread": 1.5}
    assert overcommit.memory_figures(655360, 524288)["ratio"] == 1.25
    assert overcommit.ratio(4, 0) is None
    assert overcommit.compound(1.5, 3.0) == 4.5
    assert overcommit.compound(1.5, None) is None
