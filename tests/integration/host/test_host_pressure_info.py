"""host_pressure_info on this machine, the lab's hypervisor, run by
ansible-playbook: the host's own PSI and the CFS throttling counters of a
real guest's cgroup while libvirt_cputune caps it."""

import time

import pytest

from run_module import run_module

pytestmark = pytest.mark.xdist_group("libvirt")


def kernel_cpu_some_total():
    """The kernel's own total of time some task waited for a CPU, in seconds,
    read straight from /proc/pressure/cpu."""
    with open("/proc/pressure/cpu") as handle:
        some = handle.readline().split()
    return int(dict(field.split("=") for field in some[1:])["total"]) / 1e6


def test_a_throttled_busy_guest_shows_pressure_and_rising_throttle_counters(busy_guest):
    # Let the guest's vCPU spin for a while, so there is load to measure.
    time.sleep(3)
    throttle = run_module("libvirt_cputune", {"domains": ["oc-lab-busy-1"], "cpus": 0.3, "apply": "live",
                                              "reason": "host_pressure_info test"})
    assert not throttle.get("failed"), throttle.get("msg")
    try:
        kernel_before = kernel_cpu_some_total()
        first = run_module("host_pressure_info", {"domains": ["oc-lab-busy-1"]})
        kernel_after = kernel_cpu_some_total()
        time.sleep(3)
        second = run_module("host_pressure_info", {"domains": ["oc-lab-busy-1"]})
    finally:
        run_module("libvirt_cputune", {"domains": ["oc-lab-busy-1"], "state": "restored"})
    assert not first.get("failed"), first.get("msg")
    assert first["cpus"] >= 1 and first["procs_running"] >= 1 and first["cgroup_version"] in (1, 2)
    assert "avg10" in first["pressure"]["cpu"]["some"] and first["pressure"]["cpu"]["some"]["total_seconds"] > 0
    # The module reports the kernel's total as the kernel had it while the module ran.
    assert kernel_before <= first["pressure"]["cpu"]["some"]["total_seconds"] <= kernel_after
    before, after = first["domains"][0], second["domains"][0]
    assert before["name"] == "oc-lab-busy-1" and before["cgroup"]
    # Capped at 0.3 of the CPU it wants whole, the guest is throttled in most periods.
    assert after["throttling"]["throttled_periods"] > before["throttling"]["throttled_periods"]
    assert after["throttling"]["throttled_seconds"] > before["throttling"]["throttled_seconds"]


def test_an_unknown_domain_fails_alone_and_the_host_is_still_reported(busy_guest):
    result = run_module("host_pressure_info", {"domains": ["oc-lab-busy-1", "no-such-domain"]})
    assert result["failed"] and "no-such-domain" in result["msg"]
    assert result["pressure"]["cpu"]["some"]
    assert [d["name"] for d in result["domains"]] == ["oc-lab-busy-1", "no-such-domain"]


def test_a_name_with_spaces_is_refused_naming_the_field():
    result = run_module("host_pressure_info", {"domains": ["oc-lab-busy-1", " oc-lab-idle-1"]})
    assert result["failed"] and "domains[1]" in result["msg"]
