"""Where the lab node's kubelet (cgroupfs driver) puts a container's cgroup,
and the CPU time the kernel accounts there: cpuacct.usage on cgroup v1,
cpu.stat's usage_usec on v2; and the time its threads waited for a CPU. Shared by the node tests and the lab demo."""

import glob
import os
import time

CGROUP = "/sys/fs/cgroup"


def container_cgroup(pod_uid, container_id, controller):
    """The container's cgroup folder in `controller` (cgroup v1), or in the
    unified hierarchy (v2); None when there is none. `container_id` as the
    pod's status gives it (runtime://id) or bare."""
    container_id = container_id.split("://", 1)[-1]
    for base in (os.path.join(CGROUP, controller), CGROUP):
        found = glob.glob(os.path.join(base, "kubepods*", "**", "pod%s" % pod_uid, container_id), recursive=True)
        if found:
            return found[0]
    return None


def cpu_seconds(folder):
    """CPU time the cgroup has used, in seconds."""
    usage = os.path.join(folder, "cpuacct.usage")
    if os.path.exists(usage):
        with open(usage) as handle:
            return int(handle.read()) / 1e9
    with open(os.path.join(folder, "cpu.stat")) as handle:
        fields = dict(line.split() for line in handle if line.strip())
    return int(fields["usage_usec"]) / 1e6


def wait_seconds(folder):
    """Seconds the cgroup's threads have waited on a run queue for a CPU
    (the second field of each thread's /proc schedstat: the vCPU delay
    libvirt and virt-handler report, for every thread of the container).
    A thread that ended meanwhile takes its count with it."""
    listed = "tasks" if os.path.exists(os.path.join(folder, "tasks")) else "cgroup.threads"
    with open(os.path.join(folder, listed)) as handle:
        threads = handle.read().split()
    total = 0
    for tid in threads:
        try:
            with open("/proc/%s/schedstat" % tid) as handle:
                total += int(handle.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


def cpu_rate(folder, seconds):
    """CPUs the cgroup used over `seconds`: the rate of its CPU time."""
    used, at = cpu_seconds(folder), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(folder) - used) / (time.monotonic() - at)


def cpu_rates(folders, seconds):
    """{key: CPUs its cgroup used} over the same `seconds`, for a dict of cgroup folders."""
    return dict((key, used) for key, (used, _wait) in use_and_wait(folders, seconds).items())


def use_and_wait(folders, seconds):
    """{key: (CPUs its cgroup used, CPUs' worth of time its threads waited
    for one)} over the same `seconds`, for a dict of cgroup folders."""
    def read():
        return dict((key, (cpu_seconds(folder), wait_seconds(folder))) for key, folder in folders.items())
    first, at = read(), time.monotonic()
    time.sleep(seconds)
    second, elapsed = read(), time.monotonic() - at
    return dict((key, ((second[key][0] - first[key][0]) / elapsed, (second[key][1] - first[key][1]) / elapsed))
                for key in folders)


def compute_cgroup(pod, status, controller):
    """The cgroup folder of a pod's container (its status as the pod gives
    it) in `controller`; fails the test naming both when there is none."""
    folder = container_cgroup(pod.metadata.uid, status.container_id, controller)
    assert folder, "no cgroup of container %s of pod %s" % (status.container_id, pod.metadata.name)
    return folder


def cfs_quota(folder):
    """The cgroup's CFS quota in CPUs (None: none), as the kernel enforces
    it: cpu.cfs_quota_us over cpu.cfs_period_us on v1, cpu.max on v2."""
    quota = os.path.join(folder, "cpu.cfs_quota_us")
    if os.path.exists(quota):
        with open(quota) as handle:
            value = int(handle.read())
        with open(os.path.join(folder, "cpu.cfs_period_us")) as handle:
            period = int(handle.read())
    else:
        with open(os.path.join(folder, "cpu.max")) as handle:
            text, period_text = handle.read().split()
        value, period = (-1 if text == "max" else int(text)), int(period_text)
    return None if value < 0 else value / float(period)
