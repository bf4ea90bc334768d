"""kubevirt_vm_cpu_info reads KubeVirt's own VMI metrics: the lab's
Prometheus scrapes the real virt-handler, which exports each domain's
libvirt stats as kubevirt_vmi_cpu_usage_seconds_total and
kubevirt_vmi_vcpu_delay_seconds_total. Judged against the same VM measured
another way over the same seconds: the CPU its compute container's cgroup
accounted (QEMU, and KubeVirt's launcher beside it), unbraked and braked."""

import time

from measure import TOLERANCE_CPUS
from polling import wait_for

# Prometheus scrapes every 2 s, and a sample's time is when its scrape began, not
# when virt-handler read the counter: over 6 s (3 samples) the two measures
# were once 0.13 CPU apart in CI; 10 s holds 5 samples, so a skew counts half.
WINDOW = 10
CAP_TEXT, CAP = "200m", 0.2


def usage(run_as, kubevirt, lab, name, at):
    info = run_as("admin", "kubevirt_vm_cpu_info", {
        "namespace": kubevirt.namespace, "names": [name], "usage_times": [at], "usage_window": WINDOW,
        "prometheus_url": lab["OVERCOMMIT_PROMETHEUS_URL"]})
    assert not info.get("failed"), info
    return info["vms"][0]["usage"]


def measured_with_usage(run_as, kubevirt, lab, name):
    """The VM's CPUs over the last WINDOW seconds, from its cgroup and from virt-handler's metrics."""
    from_cgroup = kubevirt.cpu_rate(name, seconds=WINDOW)
    at = time.time()
    # Prometheus scrapes every 2 s: the window's last sample is in a scrape later.
    time.sleep(3)
    return from_cgroup, usage(run_as, kubevirt, lab, name, at)


def test_cpu_info_reads_the_vms_cpu_from_virt_handlers_metrics_unbraked_and_braked(run_as, kubevirt, lab):
    name = kubevirt.vm("busy")
    wait_for("virt-handler's metrics of %s in Prometheus" % name,
             lambda: usage(run_as, kubevirt, lab, name, time.time()).get("cpus_used") is not None, 60, interval=2)

    from_cgroup, read = measured_with_usage(run_as, kubevirt, lab, name)
    assert abs(read["cpus_used"] - from_cgroup) <= TOLERANCE_CPUS, (read, from_cgroup)
    assert read["steal_cpus"] is not None and read["steal_cpus"] >= 0, read

    braked = run_as("admin", "kubevirt_vm_cpu_limit", {"namespace": kubevirt.namespace, "names": [name],
                                                       "cpus": CAP_TEXT, "force": True, "reason": "INC-23",
                                                       "wait": True, "wait_timeout": 60})
    assert not braked.get("failed"), braked
    # The brake is in force (wait): both measures' windows start now, under the cap.
    from_cgroup_braked, read_braked = measured_with_usage(run_as, kubevirt, lab, name)
    assert read_braked["cpus_used"] <= CAP + TOLERANCE_CPUS, read_braked
    assert abs(read_braked["cpus_used"] - from_cgroup_braked) <= TOLERANCE_CPUS, (read_braked, from_cgroup_braked)
    assert read["cpus_used"] - read_braked["cpus_used"] >= (read["cpus_used"] - CAP) / 2, (read, read_braked)
