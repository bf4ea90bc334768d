"""The lab's real node leaves nothing behind: `lab down node`, with a pod of
the node running, stops every process of the node (kubelet, kube-scheduler,
containerd and its shims), unmounts what the kubelet mounted, removes the
pods' cgroups and what the kubelet and containerd write outside the lab's
folder; `lab up node` brings it back, registered, with its images, running
pods again."""

import glob
import os

import pytest
from kubernetes import client

from lab_logs import LAB_HOME, lab_command, lab_processes
from standin import NodeFleet

pytestmark = [pytest.mark.e2e, pytest.mark.serial]

NODE_BINARIES = ("kubelet", "kube-scheduler", "containerd", "containerd-shim-runc-v2", "runc")
# What the kubelet and containerd write outside the folders the lab gives them.
OUTSIDE = ("/var/lib/kubelet", "/run/containerd/s")


def node_processes():
    """(pid, binary) of every running process of the node's binaries."""
    return lab_processes(NODE_BINARIES)


def node_mounts(node_dir):
    with open("/proc/self/mountinfo") as handle:
        points = [line.split()[4] for line in handle]
    return [point for point in points if point == node_dir or point.startswith(node_dir + "/")]


def pod_cgroups():
    return glob.glob("/sys/fs/cgroup/*/kubepods") + glob.glob("/sys/fs/cgroup/kubepods")


def container_log_links(node_dir):
    return [path for path in glob.glob("/var/log/containers/*")
            if os.path.islink(path) and os.readlink(path).startswith(node_dir + "/")]


def test_down_leaves_nothing_of_the_node_behind_and_up_brings_it_back(lab, kube_admin):
    node_dir = os.path.join(LAB_HOME, "state", "node")
    fleet = NodeFleet(kube_admin, lab)
    try:
        name = fleet.vmi(cores=1)
        # A running pod: processes, mounts and cgroups of the node's own.
        assert {binary for _pid, binary in node_processes()} >= {"kubelet", "kube-scheduler", "containerd",
                                                                 "containerd-shim-runc-v2"}
        assert node_mounts(node_dir) and pod_cgroups() and fleet.cpu_rate(name, seconds=1) > 0
    finally:
        fleet.cleanup()

    lab_down = lab_command("down", "node")
    assert node_processes() == [], lab_down
    assert node_mounts(node_dir) == []
    assert pod_cgroups() == [], pod_cgroups()
    assert [path for path in OUTSIDE if os.path.exists(path)] == []
    assert container_log_links(node_dir) == []
    core = client.CoreV1Api(kube_admin)
    assert lab["OVERCOMMIT_LAB_NODE"] not in [node.metadata.name for node in core.list_node().items]

    lab_command("up", "node")
    assert lab["OVERCOMMIT_LAB_NODE"] in [node.metadata.name for node in core.list_node().items]
    fleet = NodeFleet(kube_admin, lab)
    try:
        name = fleet.vmi(cores=1)
        # Its kubelet runs the stand-in again: its cgroup accrues CPU time.
        assert fleet.cpu_rate(name, seconds=1) > 0
    finally:
        fleet.cleanup()
