# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vSphere performance counters as overcommit figures. Pure: no I/O.

`cpu.ready.summation` and `cpu.costop.summation` are milliseconds a VM spent
ready-but-not-running (or co-stopped) during one sample interval; the
aggregate instance ("") sums them over all vCPUs. As a percentage of the
interval: pct = ms / (interval_s x 1000) x 100. For real-time statistics the
interval is 20 s, so 1000 ms of ready time is 5 %; a 4-vCPU VM can reach 400 %
on the aggregate, which is why the per-vCPU figure divides by the vCPUs.
Memory counters (`mem.vmmemctl.average` balloon, `mem.swapped.average`) are
kilobytes. Counters are named, never numbered: ids differ between servers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

REALTIME_INTERVAL_ID = 20
REALTIME_INTERVAL_S = 20
# The sample window real-time statistics keep: one hour of 20 s samples.
MAX_REALTIME_SAMPLES = 180
COUNTERS = {
    "cpu_ready": "cpu.ready.summation",
    "cpu_costop": "cpu.costop.summation",
    "balloon": "mem.vmmemctl.average",
    "swapped": "mem.swapped.average",
}


def summation_pct(summation_ms, interval_s=REALTIME_INTERVAL_S):
    """A summation counter (ms within one interval) as a percentage of the interval."""
    if interval_s <= 0:
        raise ValueError("interval_s must be positive, got %r" % interval_s)
    return summation_ms / (interval_s * 1000.0) * 100.0


def valid_pairs(values, intervals):
    """(value, interval) per sample; vSphere reports -1 for a sample it has
    no value for, which is left out rather than counted as zero."""
    pairs = []
    for index, value in enumerate(values or []):
        interval = intervals[index] if index < len(intervals or []) else REALTIME_INTERVAL_S
        if value is not None and value >= 0:
            pairs.append((value, interval or REALTIME_INTERVAL_S))
    return pairs


def summation_stats(values, intervals, vcpus=None):
    """Average and maximum percentage over the samples of a summation
    counter's aggregate instance, plus the average per vCPU. None values
    when there is no sample."""
    pcts = [summation_pct(value, interval) for value, interval in valid_pairs(values, intervals)]
    if not pcts:
        return {"avg": None, "max": None, "avg_per_vcpu": None, "samples": 0}
    avg = sum(pcts) / len(pcts)
    return {"avg": round(avg, 3), "max": round(max(pcts), 3),
            "avg_per_vcpu": round(avg / vcpus, 3) if vcpus else None, "samples": len(pcts)}


def kilobytes_stats(values, intervals=()):
    """Average and maximum of a kilobyte gauge over the samples, in MB."""
    kbs = [value for value, _interval in valid_pairs(values, intervals)]
    if not kbs:
        return {"avg_mb": None, "max_mb": None, "samples": 0}
    return {"avg_mb": round(sum(kbs) / len(kbs) / 1024.0, 3), "max_mb": round(max(kbs) / 1024.0, 3),
            "samples": len(kbs)}


def vm_figures(sample, counter_ids, vcpus):
    """Ready, co-stop, balloon and swap of one VM from its QueryPerf sample
    ({"intervals": [...], "series": {counter_id: [...]}}); counter_ids maps
    the COUNTERS keys to this server's ids (missing: not offered)."""
    sample = sample or {}
    intervals = sample.get("intervals") or []
    series = sample.get("series") or {}

    def values(key):
        counter = counter_ids.get(key)
        return series.get(counter) if counter is not None else None

    return {
        "cpu_ready_pct": summation_stats(values("cpu_ready"), intervals, vcpus),
        "cpu_costop_pct": summation_stats(values("cpu_costop"), intervals, vcpus),
        "balloon": kilobytes_stats(values("balloon"), intervals),
        "swapped": kilobytes_stats(values("swapped"), intervals),
        "interval_s": intervals[0] if intervals else None,
    }


def raw_samples(sample, counter_ids):
    """The samples figures were computed from, by counter name, for audit."""
    sample = sample or {}
    series = sample.get("series") or {}
    raw = {"intervals": sample.get("intervals") or [], "timestamps": sample.get("timestamps") or []}
    for key, name in COUNTERS.items():
        counter = counter_ids.get(key)
        raw[name] = series.get(counter) if counter is not None else None
    return raw
