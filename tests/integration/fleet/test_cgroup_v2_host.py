"""The libvirt brake, host_pressure_info and the victim's wait on a cgroup v2
hypervisor: the lab's Debian 12 VM oc-lab-hv-1, reached over SSH by
ansible-playbook with the fleet's inventory. Everything is judged on the
host's own state, read over SSH: libvirtd's live schedinfo, the guests'
cpu.max, cpu.stat and cpu.pressure in their cgroup v2 folders, and their vCPU
threads' run-queue delay (/proc/TID/schedstat, libvirt's vcpu.N.delay).

Two busy guests share the VM's two vCPUs: oc-hv1-busy-2 spins both its vCPUs
(until_stopped), oc-hv1-busy-1 one, three threads for two CPUs. libvirt gives
every machine scope the same cpu.weight (100) whatever its vCPUs, which alone
keeps the one-vCPU guest whole; the test weighs the noisy guest twice as much
(cpu_shares 200, as a provider that weighs VMs by their vCPUs does), so that
the kernel gives it two thirds of the CPUs and the other guest waits. The VM runs under QEMU's TCG
on this machine and its guests under TCG inside it (a Linux kernel does not
boot under this machine's nested KVM): how the CPU is shared is the VM
kernel's doing, with the VM's own vCPUs as fast as the machine leaves them."""

import time

from fleet_hosts import rates
from run_module import run_module

HOST = "oc-lab-hv-1"
NOISY, VICTIM = "oc-hv1-busy-2", "oc-hv1-busy-1"
# Each measurement's length: under TCG inside TCG, what the guest capped
# leaves its neighbour varies from one stretch of seconds to the next.
WINDOW_SECONDS = 8


def run(lab, module, args):
    return run_module(module, args, host=HOST, inventory=lab["OVERCOMMIT_FLEET_INVENTORY"])


def cpu_max(host, cgroup, vcpus):
    """cpu.max of the domain's cgroup and of each vCPU's, as the kernel has them."""
    return [host.read(cgroup + "/cpu.max")] + [host.read("%s/vcpu%d/cpu.max" % (cgroup, vcpu)) for vcpu in range(vcpus)]


def throttled_periods(domain):
    """Periods in which the kernel throttled the domain, where its quota is:
    the domain's cgroup (a whole-domain quota) or its vCPUs' (per vCPU)."""
    return domain["throttling"]["throttled_periods"] + (domain["vcpu_throttling"] or {}).get("throttled_periods", 0)


def test_on_a_cgroup_v2_host_capping_the_noisy_guest_cuts_its_neighbours_wait_and_restore_is_exact(lab, v2_host):
    v2_host.start(NOISY)
    v2_host.start(VICTIM)
    cgroups = dict((guest, v2_host.cgroup(guest)) for guest in (NOISY, VICTIM))
    v2_host.virsh("schedinfo", NOISY, "--live", "cpu_shares=200")
    schedinfo_before = v2_host.virsh("schedinfo", NOISY)
    cpu_max_before = cpu_max(v2_host, cgroups[NOISY], 2)
    time.sleep(3)

    info = run(lab, "host_pressure_info", {"domains": [NOISY, VICTIM]})
    assert not info.get("failed"), info.get("msg")
    contended = rates(v2_host, cgroups, WINDOW_SECONDS)

    throttle = run(lab, "libvirt_cputune", {"domains": [NOISY], "cpus": 0.5, "apply": "live",
                                            "reason": "cgroup v2 host test"})
    try:
        assert throttle.get("changed") and not throttle.get("failed"), throttle.get("msg")
        cpu_max_capped = cpu_max(v2_host, cgroups[NOISY], 2)
        time.sleep(2)
        capped_info = run(lab, "host_pressure_info", {"domains": [NOISY]})
        capped = rates(v2_host, cgroups, WINDOW_SECONDS)
        later_info = run(lab, "host_pressure_info", {"domains": [NOISY]})
    finally:
        restore = run(lab, "libvirt_cputune", {"domains": [NOISY], "state": "restored"})
    assert restore.get("changed") and not restore.get("failed"), restore.get("msg")

    # host_pressure_info on cgroup v2: the VMs' parent cgroup and each guest's own, with their own PSI.
    assert info["cgroup_version"] == 2
    assert info["vm_cgroup"]["path"] == "/sys/fs/cgroup/machine.slice" and info["vm_cgroup"]["cpu_pressure"]["some"]
    reported = dict((domain["name"], domain) for domain in info["domains"])
    for guest in (NOISY, VICTIM):
        assert cgroups[guest].startswith(reported[guest]["cgroup"]), (reported[guest]["cgroup"], cgroups[guest])
        assert reported[guest]["cpu_pressure"]["some"]["total_seconds"] > 0
    # The cap is the kernel's: cpu.max of the noisy guest's cgroups changed, and it is throttled in more periods.
    assert cpu_max_capped != cpu_max_before
    assert throttled_periods(later_info["domains"][0]) > throttled_periods(capped_info["domains"][0])

    # The noisy guest is held, against what it took before in the same run; its neighbour's wait, read by
    # libvirt (vCPU delay) and by the kernel (its cgroup's PSI), falls with it.
    assert capped[NOISY]["cpu"] < 0.75 * contended[NOISY]["cpu"], (contended, capped)
    assert contended[VICTIM]["wait"] > 0 and contended[VICTIM]["psi_some"] > 0, contended
    assert capped[VICTIM]["wait"] < 0.75 * contended[VICTIM]["wait"], (contended, capped)
    assert capped[VICTIM]["psi_some"] < 0.85 * contended[VICTIM]["psi_some"], (contended, capped)
    assert capped[VICTIM]["cpu"] > contended[VICTIM]["cpu"], (contended, capped)

    # Restore is exact: libvirt's live values and the kernel's cpu.max as they were.
    assert v2_host.virsh("schedinfo", NOISY) == schedinfo_before
    assert cpu_max(v2_host, cgroups[NOISY], 2) == cpu_max_before
