# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The overcommit view of a vSphere inventory, read: one inventory query,
one counter lookup by name, performance queries for many VMs at once; the
figures are the pure ones of `capacity` and `perf`."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.vsphere import capacity, perf
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.client import HOST_PROPERTIES

VM_PROPERTIES = ("name", "config.uuid", "runtime.powerState", "runtime.host", "config.template",
                 "config.hardware.numCPU", "config.hardware.memoryMB")
# VMs per QueryPerf call: vCenter caps the metrics of one query
# (config.vpxd.stats.maxQueryMetrics), so very large fleets go in slices.
PERF_BATCH = 50


def gather(client, params):
    inventory = client.inventory(vm_properties=VM_PROPERTIES, host_properties=HOST_PROPERTIES)
    host_ids = capacity.select_hosts(inventory, params["clusters"], params["hosts"])
    vm_ids = capacity.vms_on(inventory, host_ids, params["vms"])
    counters = {}
    figures = {}
    if params["vm_stats"]:
        by_name = client.perf_counters()
        counters = dict((key, by_name.get(name)) for key, name in perf.COUNTERS.items())
        wanted = [cid for cid in counters.values() if cid is not None]
        samples = {}
        for start in range(0, len(vm_ids), PERF_BATCH):
            samples.update(client.query_perf(vm_ids[start:start + PERF_BATCH], wanted, instance="",
                                             interval_id=perf.REALTIME_INTERVAL_ID, max_samples=params["samples"]))
        for moid in vm_ids:
            figures[moid] = perf.vm_figures(samples.get(moid), counters, inventory["vms"][moid].get("config.hardware.numCPU"))
            if params["return_samples"]:
                figures[moid]["samples"] = perf.raw_samples(samples.get(moid), counters)
    vm_rows = [capacity.vm_row(inventory, moid, figures.get(moid)) for moid in vm_ids]
    host_rows = []
    for host_id in host_ids:
        name = inventory["hosts"][host_id].get("name")
        host_rows.append(capacity.host_row(inventory, host_id, [row for row in vm_rows if row["host"] == name]))
    reported = set(row["name"] for row in vm_rows)
    return {
        "vms_not_reported": [{"name": name, "reason": "no powered-on VM of this name on the hosts in scope"}
                             for name in params["vms"] or [] if name not in reported],
        "hosts": host_rows,
        "clusters": capacity.cluster_rows(host_rows, vm_rows),
        "vms": vm_rows,
        "counters": dict((perf.COUNTERS[key], cid) for key, cid in counters.items()),
    }
