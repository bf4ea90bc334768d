# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's own CPU signals as the kernel writes them: pressure stall
information (PSI), load, the run queue and CFS bandwidth statistics of
cgroups. Pure: text in, plain data out; reading the files is procfs.py's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal

RESOURCES = ("cpu", "memory", "io")
WINDOWS = ("avg10", "avg60", "avg300")


class NoPressureInfo(ObjectRefusal):
    """The kernel keeps no pressure stall information: the host, the object
    read, cannot give its pressure."""


def parse_psi(text):
    """`some`/`full` lines of a PSI file: {some: {avg10, avg60, avg300,
    total_seconds}, full: {...}} (avg in % of wall time; the kernel's total
    is in microseconds)."""
    result = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0] not in ("some", "full"):
            continue
        values = dict(field.split("=", 1) for field in fields[1:] if "=" in field)
        entry = dict((window, float(values[window])) for window in WINDOWS if window in values)
        if "total" in values:
            entry["total_seconds"] = int(values["total"]) / 1e6
        result[fields[0]] = entry
    if "some" not in result:
        raise ValueError("no 'some' line")
    return result


def parse_loadavg(text):
    """/proc/loadavg: the three load averages, running and all tasks."""
    fields = text.split()
    running, total = fields[3].split("/")
    return {"load1": float(fields[0]), "load5": float(fields[1]), "load15": float(fields[2]),
            "tasks_running": int(running), "tasks": int(total)}


# /proc/stat's cpu line: user nice system idle iowait irq softirq steal
# (guest time is counted in user already).
IDLE_FIELDS = (3, 4)
BUSY_FIELDS = (0, 1, 2, 5, 6, 7)


def parse_stat(text, ticks_per_second=100):
    """procs_running and procs_blocked from /proc/stat; cpu_time: the
    seconds all CPUs spent busy and idle since boot (their rate between two
    reads is the CPUs the host used, whatever used them); cpu_time_per_cpu:
    the same per CPU id, so that a pool's load is read from its own CPUs."""
    result = {"cpu_time_per_cpu": {}}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] in ("procs_running", "procs_blocked"):
            result[fields[0]] = int(fields[1])
        elif fields and fields[0].startswith("cpu") and len(fields) >= 9:
            ticks = [int(value) for value in fields[1:9]]
            times = {"busy_seconds": sum(ticks[i] for i in BUSY_FIELDS) / float(ticks_per_second),
                     "idle_seconds": sum(ticks[i] for i in IDLE_FIELDS) / float(ticks_per_second)}
            if fields[0] == "cpu":
                result["cpu_time"] = times
            elif fields[0][3:].isdigit():
                result["cpu_time_per_cpu"][int(fields[0][3:])] = times
    return result


def parse_cpu_stat(text, version):
    """CFS bandwidth statistics of one cgroup's cpu.stat: periods elapsed,
    periods in which the cgroup was throttled, and the time it was, in
    seconds (v1 writes nanoseconds, v2 microseconds)."""
    values = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2:
            try:
                values[fields[0]] = int(fields[1])
            except ValueError:
                continue
    if version == 2:
        throttled = values.get("throttled_usec", 0) / 1e6
    else:
        throttled = values.get("throttled_time", 0) / 1e9
    return {"periods": values.get("nr_periods", 0), "throttled_periods": values.get("nr_throttled", 0),
            "throttled_seconds": round(throttled, 6)}


def add_cpu_stats(stats):
    """The sum of several cgroups' statistics (the vCPU cgroups of a VM)."""
    total = {"periods": 0, "throttled_periods": 0, "throttled_seconds": 0.0}
    for stat in stats:
        for key in total:
            total[key] += stat[key]
    total["throttled_seconds"] = round(total["throttled_seconds"], 6)
    return total


def domain_cgroup_names(domain_id, version):
    """What libvirt names the cgroup of the running domain with this id:
    (prefix, suffix) of the directory, as machined (v2) or libvirt's own
    v1 layout write it."""
    if version == 2:
        return "machine-qemu\\x2d%d\\x2d" % domain_id, ".scope"
    return "qemu-%d-" % domain_id, ".libvirt-qemu"
