"""vsphere_overcommit_info against the lab's vcsim, driven as a real module
and checked independently with pyVmomi."""

import pytest
from pyVmomi import vim

pytestmark = pytest.mark.xdist_group("vcsim")

MODULE = "vsphere_overcommit_info"
MIB = 1024 * 1024


def inventory(si, vim_type):
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim_type], True)
    try:
        return list(view.view)
    finally:
        view.Destroy()


def counter_ids(si):
    return dict(("%s.%s.%s" % (c.groupInfo.key, c.nameInfo.key, c.rollupType), c.key)
                for c in si.RetrieveContent().perfManager.perfCounter)


def ready_samples(si, vm, samples):
    """The VM's cpu.ready.summation samples (aggregate instance) with their intervals."""
    metric = vim.PerformanceManager.MetricId(counterId=counter_ids(si)["cpu.ready.summation"], instance="")
    spec = vim.PerformanceManager.QuerySpec(entity=vm, metricId=[metric], intervalId=20, maxSample=samples)
    result = si.RetrieveContent().perfManager.QueryPerf([spec])[0]
    return ([info.interval for info in result.sampleInfo], [info.timestamp for info in result.sampleInfo],
            list(result.value[0].value) if result.value else [])


def test_host_and_cluster_ratios_match_the_inventory(run, vsphere):
    result = run(MODULE, {"vm_stats": False})
    assert not result.get("failed") and result["changed"] is False, result
    hosts = inventory(vsphere, vim.HostSystem)
    vms = [vm for vm in inventory(vsphere, vim.VirtualMachine) if vm.runtime.powerState == "poweredOn"]
    reported = dict((row["name"], row) for row in result["hosts"])
    assert sorted(reported) == sorted(h.name for h in hosts)
    for host in hosts:
        hardware = host.summary.hardware
        vcpus = sum(vm.config.hardware.numCPU for vm in vms if vm.runtime.host == host)
        memory = sum(vm.config.hardware.memoryMB for vm in vms if vm.runtime.host == host)
        row = reported[host.name]
        assert row["cpu"]["cores"] == hardware.numCpuCores and row["cpu"]["threads"] == hardware.numCpuThreads
        assert row["cpu"]["vcpus"] == vcpus
        assert row["cpu"]["vcpu_per_core"] == round(float(vcpus) / hardware.numCpuCores, 3)
        assert row["memory"]["physical_mb"] == hardware.memorySize // MIB
        assert row["memory"]["configured_mb"] == memory
        assert row["cluster"] == host.parent.name
    cluster = result["clusters"][0]
    assert cluster["name"] == "DC0_C0" and cluster["hosts"] == 3
    assert cluster["cpu"]["vcpus"] == sum(vm.config.hardware.numCPU for vm in vms)
    assert cluster["cpu"]["cores"] == sum(h.summary.hardware.numCpuCores for h in hosts)
    assert "cpu_ready_pct" not in result["vms"][0] and "counters" not in result


def test_cpu_ready_is_converted_from_the_summation_counter_found_by_name(run, vsphere):
    vm = [v for v in inventory(vsphere, vim.VirtualMachine) if v.name == "DC0_C0_RP0_VM0"][0]
    result = run(MODULE, {"vms": [vm.name], "samples": 3, "return_samples": True})
    assert not result.get("failed"), result
    ids = counter_ids(vsphere)
    for name in ("cpu.ready.summation", "cpu.costop.summation", "mem.vmmemctl.average", "mem.swapped.average"):
        assert result["counters"][name] == ids[name]
    row = result["vms"][0]
    # vcsim makes up new samples on every query, so the figures are checked
    # against the samples the module used, converted here by hand.
    raw = row["samples"]
    assert raw["intervals"] == [20, 20, 20] and len(raw["cpu.ready.summation"]) == 3
    assert len(ready_samples(vsphere, vm, 3)[2]) == 3
    ready = [ms / (20 * 1000.0) * 100 for ms in raw["cpu.ready.summation"] if ms >= 0]
    assert row["interval_s"] == 20
    assert row["cpu_ready_pct"]["samples"] == len(ready) > 0
    assert row["cpu_ready_pct"]["avg"] == round(sum(ready) / len(ready), 3)
    assert row["cpu_ready_pct"]["max"] == round(max(ready), 3)
    assert row["cpu_ready_pct"]["avg_per_vcpu"] == round(sum(ready) / len(ready) / vm.config.hardware.numCPU, 3)
    swapped = [kb for kb in raw["mem.swapped.average"] or [] if kb >= 0]
    if swapped:
        assert row["swapped"]["max_mb"] == round(max(swapped) / 1024.0, 3)
    host = [h for h in result["hosts"] if h["name"] == vm.runtime.host.name][0]
    assert host["pressure"]["vm_cpu_ready_pct_max"] == row["cpu_ready_pct"]["max"]


def test_scope_and_bad_input(run):
    one = run(MODULE, {"hosts": ["DC0_C0_H0"], "vm_stats": False})
    assert [h["name"] for h in one["hosts"]] == ["DC0_C0_H0"]
    assert all(vm["host"] == "DC0_C0_H0" for vm in one["vms"])
    unknown = run(MODULE, {"clusters": ["nope"]})
    assert unknown["failed"] is True and unknown["field"] == "clusters" and "DC0_C0" in unknown["msg"]
    bad_samples = run(MODULE, {"samples": 0})
    assert bad_samples["failed"] is True and bad_samples["field"] == "samples" and "1..180" in bad_samples["msg"]


def test_named_vms_that_are_not_reported_are_listed(run):
    result = run(MODULE, {"vms": ["DC0_C0_RP0_VM0", "ghost"], "vm_stats": False})
    assert [vm["name"] for vm in result["vms"]] == ["DC0_C0_RP0_VM0"]
    assert [vm["name"] for vm in result["vms_not_reported"]] == ["ghost"]
