# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What host_pressure_info reports: the host's pressure, load and run
queue, the cgroup that holds the VMs, and per running libvirt domain the
CFS throttling of its cgroup, read through a ProcFS; the module asks
libvirt which domains run."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os


def host_signals(fs):
    """Host-wide signals; raises pressure.NoPressureInfo without PSI."""
    version = fs.cgroup_version()
    load = fs.load()
    return {
        "pressure": fs.host_pressure(),
        "cpus": fs.cpu_count(),
        "isolated_cpus": fs.isolated_cpus(),
        "load": {"load1": load["load1"], "load5": load["load5"], "load15": load["load15"]},
        "procs_running": load.get("procs_running", load["tasks_running"]),
        "procs_blocked": load.get("procs_blocked"),
        "cpu_time": load.get("cpu_time"),
        "cpu_time_per_cpu": load.get("cpu_time_per_cpu"),
        "cgroup_version": version,
        "vm_cgroup": fs.vm_parent(version),
    }


def domain_signals(fs, running, names):
    """One entry per domain named (every running one when `names` is
    empty): its cgroup's CFS statistics, or why there are none."""
    version = fs.cgroup_version()
    wanted = names or sorted(running)
    results = []
    for name in wanted:
        if name not in running:
            results.append({"name": name, "failed": True, "msg": "no running domain of this name"})
            continue
        directory = fs.find_domain_cgroup(running[name], version)
        if directory is None:
            results.append({"name": name, "id": running[name], "cgroup": None, "throttling": None,
                            "vcpu_throttling": None, "cpu_pressure": None,
                            "msg": "the domain has no cgroup with a CPU controller on this host"})
            continue
        try:
            entry = fs.domain_throttling(directory, version)
        except (IOError, OSError) as exc:
            # The domain stopped between the listing and the read.
            results.append({"name": name, "id": running[name], "failed": True,
                            "msg": "cannot read %s: %s" % (os.path.join(directory, "cpu.stat"), exc.strerror or exc)})
            continue
        entry.update({"name": name, "id": running[name]})
        results.append(entry)
    return results
