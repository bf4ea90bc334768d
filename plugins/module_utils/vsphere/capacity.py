# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per host and per cluster: what running VMs were promised against the
hardware (vCPU:core, vCPU:thread, configured:physical memory) and how much
the VMs suffer for it (CPU ready, co-stop, balloon, swap). Pure: no I/O;
works on VsphereClient.inventory data and perf.vm_figures results."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.domain import overcommit
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.inventory import SelectorError

POWERED_ON = "poweredOn"


def _is_cluster(inventory, moid):
    return (inventory.get("clusters", {}).get(moid) or {}).get("kind") == "ClusterComputeResource"


def select_hosts(inventory, clusters=(), hosts=()):
    """Host ids in scope: those of the named clusters and the named hosts,
    or every host when neither is given. Unknown names are bad input."""
    all_hosts = inventory.get("hosts", {})
    if not clusters and not hosts:
        return sorted(all_hosts, key=lambda moid: all_hosts[moid].get("name") or moid)
    selected = []
    cluster_names = dict((c["name"], moid) for moid, c in inventory.get("clusters", {}).items()
                         if _is_cluster(inventory, moid))
    for name in clusters or ():
        if name not in cluster_names:
            raise SelectorError("clusters", "no cluster named %s (known: %s)" % (name, ", ".join(sorted(cluster_names)) or "none"))
        selected.extend(sorted((m for m, h in all_hosts.items() if h.get("parent") == cluster_names[name]),
                               key=lambda moid: all_hosts[moid].get("name") or moid))
    host_names = dict((h.get("name"), moid) for moid, h in all_hosts.items())
    for name in hosts or ():
        if name not in host_names:
            raise SelectorError("hosts", "no host named %s (known: %s)" % (name, ", ".join(sorted(host_names))))
        selected.append(host_names[name])
    unique = []
    for moid in selected:
        if moid not in unique:
            unique.append(moid)
    return unique


def vms_on(inventory, host_ids, names=()):
    """Powered-on VMs (not templates) on the given hosts, optionally only those named."""
    wanted = set(host_ids)
    vms = inventory.get("vms", {})
    return sorted((moid for moid, vm in vms.items()
                   if vm.get("runtime.host") in wanted and vm.get("runtime.powerState") == POWERED_ON
                   and not vm.get("config.template") and (not names or vm.get("name") in names)),
                  key=lambda moid: (vms[moid].get("name") or "", moid))


def _hardware(host):
    return host.get("summary.hardware") or {}


def _pressure(vm_rows):
    ready = [row["cpu_ready_pct"]["max"] for row in vm_rows if row.get("cpu_ready_pct", {}).get("max") is not None]
    per_vcpu = [row["cpu_ready_pct"]["avg_per_vcpu"] for row in vm_rows
                if row.get("cpu_ready_pct", {}).get("avg_per_vcpu") is not None]
    balloon = [row["balloon"]["max_mb"] for row in vm_rows if row.get("balloon", {}).get("max_mb") is not None]
    swapped = [row["swapped"]["max_mb"] for row in vm_rows if row.get("swapped", {}).get("max_mb") is not None]
    return {
        "vm_cpu_ready_pct_max": max(ready) if ready else None,
        "vm_cpu_ready_pct_per_vcpu_max": max(per_vcpu) if per_vcpu else None,
        "balloon_mb": round(sum(balloon), 3) if balloon else None,
        "vms_ballooned": sum(1 for value in balloon if value > 0),
        "swapped_mb": round(sum(swapped), 3) if swapped else None,
        "vms_swapped": sum(1 for value in swapped if value > 0),
    }


def vm_row(inventory, moid, figures=None):
    vm = inventory["vms"][moid]
    host_id = vm.get("runtime.host")
    host = inventory.get("hosts", {}).get(host_id) or {}
    cluster_id = host.get("parent")
    row = {"name": vm.get("name"), "moid": moid, "uuid": vm.get("config.uuid"), "host": host.get("name"),
           "cluster": inventory["clusters"][cluster_id]["name"] if _is_cluster(inventory, cluster_id) else None,
           "power_state": vm.get("runtime.powerState"), "vcpus": vm.get("config.hardware.numCPU"),
           "memory_mb": vm.get("config.hardware.memoryMB")}
    if figures is not None:
        row.update(figures)
    return row


def host_row(inventory, host_id, vm_rows_on_host):
    host = inventory["hosts"][host_id]
    hardware = _hardware(host)
    cluster_id = host.get("parent")
    running = [vm for vm in inventory.get("vms", {}).values()
               if vm.get("runtime.host") == host_id and vm.get("runtime.powerState") == POWERED_ON
               and not vm.get("config.template")]
    total = sum(1 for vm in inventory.get("vms", {}).values()
                if vm.get("runtime.host") == host_id and not vm.get("config.template"))
    vcpus = sum(vm.get("config.hardware.numCPU") or 0 for vm in running)
    configured_mb = sum(vm.get("config.hardware.memoryMB") or 0 for vm in running)
    physical_mb = int(hardware["memorySize"] // (1024 * 1024)) if hardware.get("memorySize") else None
    cpu = overcommit.cpu_figures(vcpus, hardware.get("numCpuCores"), hardware.get("numCpuThreads"))
    cpu.update(packages=hardware.get("numCpuPkgs"), mhz_per_core=hardware.get("cpuMhz"))
    return {
        "name": host.get("name"), "moid": host_id,
        "cluster": inventory["clusters"][cluster_id]["name"] if _is_cluster(inventory, cluster_id) else None,
        "connection_state": host.get("runtime.connectionState"),
        "in_maintenance_mode": host.get("runtime.inMaintenanceMode"),
        "cpu": cpu,
        "memory": overcommit.memory_figures(configured_mb, physical_mb),
        "vms": {"powered_on": len(running), "total": total},
        "pressure": _pressure(vm_rows_on_host),
    }


def cluster_rows(host_rows, vm_rows):
    """Clusters as the sum of their hosts in scope."""
    clusters = {}
    for host in host_rows:
        if host["cluster"] is None:
            continue
        entry = clusters.setdefault(host["cluster"], {"vcpus": 0, "cores": 0, "threads": 0, "configured_mb": 0,
                                                      "physical_mb": 0, "hosts": 0, "vms_powered_on": 0})
        entry["hosts"] += 1
        entry["vms_powered_on"] += host["vms"]["powered_on"]
        for key in ("vcpus", "cores", "threads"):
            entry[key] += host["cpu"][key] or 0
        for key in ("configured_mb", "physical_mb"):
            entry[key] += host["memory"][key] or 0
    rows = []
    for name in sorted(clusters):
        entry = clusters[name]
        rows.append({
            "name": name, "hosts": entry["hosts"],
            "cpu": overcommit.cpu_figures(entry["vcpus"], entry["cores"], entry["threads"]),
            "memory": overcommit.memory_figures(entry["configured_mb"], entry["physical_mb"]),
            "vms": {"powered_on": entry["vms_powered_on"]},
            "pressure": _pressure([row for row in vm_rows if row.get("cluster") == name]),
        })
    return rows
