# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-host and per-cluster overcommit from one inventory read."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.vsphere import capacity
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.inventory import SelectorError

GIB = 1024 * 1024 * 1024


def host(name, parent, cores, threads, memory_gib):
    return {"name": name, "parent": parent, "runtime.connectionState": "connected", "runtime.inMaintenanceMode": False,
            "summary.hardware": {"numCpuPkgs": 2, "numCpuCores": cores, "numCpuThreads": threads, "cpuMhz": 2600,
                                 "memorySize": memory_gib * GIB}}


def vm(name, host_id, vcpus, memory_mb, power="poweredOn"):
    return {"name": name, "runtime.host": host_id, "runtime.powerState": power, "config.template": False,
            "config.hardware.numCPU": vcpus, "config.hardware.memoryMB": memory_mb}


INVENTORY = {
    "clusters": {"domain-c1": {"name": "C1", "kind": "ClusterComputeResource"},
                 "domain-s2": {"name": "esx3", "kind": "ComputeResource"}},
    "hosts": {"host-1": host("esx1", "domain-c1", 8, 16, 64), "host-2": host("esx2", "domain-c1", 8, 16, 64),
              "host-3": host("esx3", "domain-s2", 4, 8, 32)},
    "vms": {"vm-1": vm("a", "host-1", 8, 32768), "vm-2": vm("b", "host-1", 16, 65536),
            "vm-3": vm("off", "host-1", 32, 65536, power="poweredOff"),
            "vm-4": vm("c", "host-2", 4, 16384), "vm-5": vm("d", "host-3", 8, 16384)},
}


def test_host_counts_only_powered_on_vms_against_cores_threads_and_memory():
    row = capacity.host_row(INVENTORY, "host-1", [])
    assert row["cluster"] == "C1"
    assert row["cpu"]["vcpus"] == 24 and row["cpu"]["vcpu_per_core"] == 3.0 and row["cpu"]["vcpu_per_thread"] == 1.5
    assert row["memory"] == {"configured_mb": 98304, "physical_mb": 65536, "ratio": 1.5}
    assert row["vms"] == {"powered_on": 2, "total": 3}


def test_a_standalone_host_has_no_cluster():
    assert capacity.host_row(INVENTORY, "host-3", [])["cluster"] is None


def test_cluster_is_the_sum_of_its_hosts_and_carries_the_worst_vm():
    vm_rows = [dict(capacity.vm_row(INVENTORY, "vm-1"), cpu_ready_pct={"max": 12.0, "avg_per_vcpu": 1.0},
                    balloon={"max_mb": 0.0}, swapped={"max_mb": 0.0}),
               dict(capacity.vm_row(INVENTORY, "vm-4"), cpu_ready_pct={"max": 30.0, "avg_per_vcpu": 6.0},
                    balloon={"max_mb": 256.0}, swapped={"max_mb": 0.0})]
    hosts = [capacity.host_row(INVENTORY, h, [r for r in vm_rows if r["host"] == INVENTORY["hosts"][h]["name"]])
             for h in ("host-1", "host-2", "host-3")]
    clusters = capacity.cluster_rows(hosts, vm_rows)
    assert [c["name"] for c in clusters] == ["C1"]
    cluster = clusters[0]
    assert cluster["cpu"]["vcpus"] == 28 and cluster["cpu"]["cores"] == 16 and cluster["cpu"]["vcpu_per_core"] == 1.75
    assert cluster["memory"]["ratio"] == pytest.approx(114688 / 131072.0, abs=1e-3)
    assert cluster["pressure"]["vm_cpu_ready_pct_max"] == 30.0
    assert cluster["pressure"]["vms_ballooned"] == 1 and cluster["pressure"]["balloon_mb"] == 256.0


def test_scope_by_cluster_and_host_and_unknown_names():
    assert capacity.select_hosts(INVENTORY, clusters=["C1"]) == ["host-1", "host-2"]
    assert capacity.select_hosts(INVENTORY, hosts=["esx3"]) == ["host-3"]
    assert capacity.vms_on(INVENTORY, ["host-1"]) == ["vm-1", "vm-2"]
    with pytest.raises(SelectorError) as caught:
        capacity.select_hosts(INVENTORY, clusters=["esx3"])
    assert caught.value.field == "clusters"
