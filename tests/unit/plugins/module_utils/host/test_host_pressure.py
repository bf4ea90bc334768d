# -*- coding: utf-8 -*-
"""Reading a host's PSI, load and cgroup CFS statistics from /proc and /sys,
on trees laid out as cgroup v1 and v2 hosts lay them out."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.host import pressure
from ansible_collections.overcommit.control.plugins.module_utils.host.procfs import ProcFS
from ansible_collections.overcommit.control.plugins.module_utils.host.signals import domain_signals, host_signals

PSI = "some avg10=12.50 avg60=30.10 avg300=8.20 total=535667579\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"


def write(root, path, text):
    target = root.joinpath(*path.split("/"))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def host_tree(root, version, psi=True):
    if psi:
        for resource in ("cpu", "memory", "io"):
            write(root, "proc/pressure/%s" % resource, PSI)
    write(root, "proc/loadavg", "1.47 1.92 1.86 3/152 20172\n")
    write(root, "proc/stat", "cpu  1 2 3\nprocs_running 5\nprocs_blocked 1\n")
    write(root, "sys/devices/system/cpu/online", "0-3,6\n")
    write(root, "sys/devices/system/cpu/isolated", "2-3\n")
    if version == 2:
        write(root, "sys/fs/cgroup/cgroup.controllers", "cpu io memory\n")
        write(root, "sys/fs/cgroup/machine.slice/cpu.pressure", PSI)
        scope = "sys/fs/cgroup/machine.slice/machine-qemu\\x2d7\\x2dweb\\x2d1.scope"
        # libvirt under systemd: the domain's threads and its quota in a nested `libvirt` cgroup of the
        # machine scope, which has no limit of its own.
        write(root, scope + "/cpu.stat", "usage_usec 10\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n")
        write(root, scope + "/cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n")
        write(root, scope + "/libvirt/cpu.stat", "usage_usec 10\nnr_periods 200\nnr_throttled 50\nthrottled_usec 2500000\n")
        write(root, scope + "/libvirt/cpu.pressure", PSI)
        write(root, scope + "/libvirt/vcpu0/cpu.stat", "nr_periods 100\nnr_throttled 10\nthrottled_usec 1000000\n")
        write(root, scope + "/libvirt/vcpu1/cpu.stat", "nr_periods 100\nnr_throttled 20\nthrottled_usec 500000\n")
        write(root, scope + "/libvirt/emulator/cpu.stat", "nr_periods 9\nnr_throttled 9\nthrottled_usec 9\n")
    else:
        domain = "sys/fs/cgroup/cpu,cpuacct/machine/qemu-7-web-1.libvirt-qemu"
        write(root, domain + "/cpu.stat", "nr_periods 200\nnr_throttled 50\nthrottled_time 2500000000\n")
        write(root, domain + "/vcpu0/cpu.stat", "nr_periods 100\nnr_throttled 10\nthrottled_time 1000000000\n")
        write(root, domain + "/vcpu1/cpu.stat", "nr_periods 100\nnr_throttled 20\nthrottled_time 500000000\n")
        write(root, domain + "/emulator/cpu.stat", "nr_periods 9\nnr_throttled 9\nthrottled_time 9\n")


def test_psi_lines_are_parsed_with_totals_in_seconds():
    parsed = pressure.parse_psi(PSI)
    assert parsed["some"] == {"avg10": 12.5, "avg60": 30.1, "avg300": 8.2, "total_seconds": 535.667579}
    assert parsed["full"]["avg60"] == 0.0
    with pytest.raises(ValueError):
        pressure.parse_psi("garbage\n")


def test_proc_stat_gives_busy_and_idle_time_of_the_host_and_of_each_cpu():
    text = ("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 60 0 40 350 0 0 0 0 0 0\ncpu1 40 0 10 450 50 0 0 0 0 0\n"
            "intr 5\nprocs_running 3\n")
    parsed = pressure.parse_stat(text, ticks_per_second=100)
    assert parsed["cpu_time"] == {"busy_seconds": 1.5, "idle_seconds": 8.5}
    assert parsed["cpu_time_per_cpu"] == {0: {"busy_seconds": 1.0, "idle_seconds": 3.5},
                                          1: {"busy_seconds": 0.5, "idle_seconds": 5.0}}
    assert parsed["procs_running"] == 3


@pytest.mark.parametrize("version", [1, 2])
def test_host_signals_feed_the_policy_as_they_are(tmp_path, version):
    host_tree(tmp_path, version)
    signals = host_signals(ProcFS(str(tmp_path)))
    assert signals["pressure"]["cpu"]["some"]["avg10"] == 12.5 and signals["pressure"]["io"]["full"]["avg60"] == 0
    assert signals["cpus"] == 5 and signals["procs_running"] == 5 and signals["procs_blocked"] == 1
    assert signals["isolated_cpus"] == [2, 3]
    assert signals["load"] == {"load1": 1.47, "load5": 1.92, "load15": 1.86}
    assert signals["cgroup_version"] == version
    if version == 2:
        assert signals["vm_cgroup"] == {"path": "/sys/fs/cgroup/machine.slice",
                                        "cpu_pressure": pressure.parse_psi(PSI)}
    else:
        assert signals["vm_cgroup"] == {"path": "/sys/fs/cgroup/cpu,cpuacct/machine", "cpu_pressure": None}


def test_v1_throttling_of_the_domain_and_its_vcpus(tmp_path):
    host_tree(tmp_path, 1)
    entry, = domain_signals(ProcFS(str(tmp_path)), {"web-1": 7}, [])
    assert entry["cgroup"] == "/sys/fs/cgroup/cpu,cpuacct/machine/qemu-7-web-1.libvirt-qemu"
    assert entry["throttling"] == {"periods": 200, "throttled_periods": 50, "throttled_seconds": 2.5}
    # Summed over vcpu0 and vcpu1 only: the emulator is not a vCPU.
    assert entry["vcpu_throttling"] == {"periods": 200, "throttled_periods": 30, "throttled_seconds": 1.5}
    assert entry["cpu_pressure"] is None


def test_v2_throttling_and_pressure_of_the_domain(tmp_path):
    host_tree(tmp_path, 2)
    entry, = domain_signals(ProcFS(str(tmp_path)), {"web-1": 7}, ["web-1"])
    assert entry["cgroup"] == "/sys/fs/cgroup/machine.slice/machine-qemu\\x2d7\\x2dweb\\x2d1.scope/libvirt"
    assert entry["throttling"] == {"periods": 200, "throttled_periods": 50, "throttled_seconds": 2.5}
    assert entry["vcpu_throttling"] == {"periods": 200, "throttled_periods": 30, "throttled_seconds": 1.5}
    assert entry["cpu_pressure"]["some"]["avg60"] == 30.1


def test_a_domain_not_running_or_without_cgroup_is_reported_alone(tmp_path):
    host_tree(tmp_path, 1)
    missing, no_cgroup = domain_signals(ProcFS(str(tmp_path)), {"web-2": 8}, ["web-9", "web-2"])
    assert missing["failed"] and "no running domain" in missing["msg"]
    assert not no_cgroup.get("failed") and no_cgroup["throttling"] is None and "no cgroup" in no_cgroup["msg"]


def test_a_host_without_psi_fails_saying_so(tmp_path):
    host_tree(tmp_path, 1, psi=False)
    with pytest.raises(pressure.NoPressureInfo) as error:
        host_signals(ProcFS(str(tmp_path)))
    assert "PSI" in str(error.value) and "psi=1" in str(error.value)
