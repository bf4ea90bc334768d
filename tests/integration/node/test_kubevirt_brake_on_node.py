"""The KubeVirt runtime brake when the node defers the resize, on the lab's
real node (kubelet, containerd, runc), with a virt-launcher stand-in that
burns one thread per vCPU in its `compute` container: a pod shaped as
KubeVirt makes it, whose VMI the test marks Running as virt-handler would.
The brake on a real virt-launcher, its restore and the reconcile after a
restart are tested on the lab's real KubeVirt
(tests/integration/kubevirt/test_brake.py); this one needs a pod whose
nodeSelector the test can take away from the node, and stays here. Every
rate is judged against the same VM's own rates in the same test."""

import uuid

import pytest
from kubernetes import client

from kubevirt_fleet import NAMESPACE
from measure import TOLERANCE_CPUS
from standin import NodeFleet, lab_node

pytestmark = [pytest.mark.e2e, pytest.mark.serial]

# A two-vCPU VM braked to a fifth of a CPU, under its floor (a quarter of its
# vCPUs), so forced: the node's pods share the 2-core machine with whatever
# else runs there, and the cap must stay well under what the VM gets.
VCPUS, CAP, CAP_TEXT = 2, 0.2, "200m"


def brake(run_as, names, **args):
    return run_as("admin", "kubevirt_vm_cpu_limit", dict(args, namespace=NAMESPACE, names=names))


def test_a_resize_the_node_defers_is_reported_pending_not_applied_and_the_vm_stays_unbraked(lab, kube_admin, run_as):
    """The kubelet admits a resize as it admits a pod; when the pod no longer
    fits the node (here: its nodeSelector no longer matches the node's
    labels), the node defers it (PodResizePending, Deferred). A node that
    refuses one for good (Infeasible) is not reachable with a limit-only
    change on this node: the unit tests give that answer."""
    core = client.CoreV1Api(kube_admin)
    node, label = lab_node(lab), "overcommit.test/standin-" + uuid.uuid4().hex[:8]
    core.patch_node(node, {"metadata": {"labels": {label: "yes"}}})
    fleet = NodeFleet(kube_admin, lab, node_selector={label: "yes"})
    try:
        name = fleet.vmi(cores=VCPUS)
        unthrottled = fleet.cpu_rate(name)
        core.patch_node(node, {"metadata": {"labels": {label: None}}})

        result = brake(run_as, [name], cpus=CAP_TEXT, force=True, reason="INC-11", wait=True, wait_timeout=5)
        assert result.get("failed"), result
        vm = result["vms"][0]
        assert vm["failed"] and vm["node"]["status"] == "pending" and vm["node"]["reason"] == "Deferred", vm
        assert "NodeAffinity" in vm["node"]["message"], vm
        assert vm["msg"].startswith("the node of pod %s has not applied the compute CPU resources after 5s (pending: "
                                    "Deferred: " % vm["pod"]), vm
        assert vm["resize_pending"]["reason"] == "Deferred"
        assert fleet.events(name)[-1][:2] == ("Warning", "CPULimitFailed")
        # The API server took the resize; the node runs the container as before.
        assert fleet.compute_limits(name) == {"cpu": CAP_TEXT}
        assert fleet.node_limit(name) is None and fleet.cfs_quota(name) is None
        deferred = fleet.cpu_rate(name)
        assert deferred > CAP + TOLERANCE_CPUS, (
            "%.2f CPU while the node deferred a cap of %g (%.2f unthrottled)" % (deferred, CAP, unthrottled))

        # Without wait the task reports what the node says and does not fail.
        again = brake(run_as, [name], cpus=CAP_TEXT, force=True, reason="INC-11")
        assert not again.get("failed") and again["vms"][0]["node"]["reason"] == "Deferred", again
        assert again["summary"]["report"][0].endswith("(node: pending: Deferred: %s)" % vm["node"]["message"])
    finally:
        core.patch_node(node, {"metadata": {"labels": {label: None}}})
        fleet.cleanup()
