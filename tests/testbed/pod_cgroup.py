"""Where the lab node's kubelet (cgroupfs driver) puts a container's cgroup,
and the CPU time the kernel accounts there: cpuacct.usage on cgroup v1,
cpu.stat's usage_usec on v2. Shared by the node tests and the lab demo."""

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


def cpu_rate(folder, seconds):
    """CPUs the cgroup used over `seconds`: the rate of its CPU time."""
    used, at = cpu_seconds(folder), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(folder) - used) / (time.monotonic() - at)


def cpu_rates(folders, seconds):
    """{key: CPUs its cgroup used} over the same `seconds`, for a dict of cgroup folders."""
    used, at = dict((key, cpu_seconds(folder)) for key, folder in folders.items()), time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - at
    return dict((key, (cpu_seconds(folder) - used[key]) / elapsed) for key, folder in folders.items())


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
