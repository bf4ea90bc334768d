"""The KubeVirt runtime brake measured by its effect, on the lab's real node
(kubelet, containerd, runc): a VM's virt-launcher stand-in burns one thread
per vCPU in its `compute` container, and what kubevirt_vm_cpu_limit, the
incident playbooks and the reconcile role do to it is measured where the
kernel accounts it - the container's cgroup. Every rate is judged against
the same VM's own rates in the same test, never a fixed figure. The
virt-launcher image and KubeVirt's controllers are not in the lab: the
stand-in is a pod shaped as KubeVirt makes it, and the tests mark its VMI
Running as virt-handler would."""

import json
import os
import tempfile
import uuid

import yaml
import pytest
from kubernetes import client

from kubevirt_fleet import NAMESPACE, PREFIX
from measure import TOLERANCE_CPUS, check_braked, check_recovered
from run_module import run_playbook
from standin import NodeFleet, lab_node

pytestmark = [pytest.mark.e2e, pytest.mark.serial]

APPLIED = PREFIX + "cpu-limit-applied"
# A two-vCPU VM braked to a fifth of a CPU, under its floor (a quarter of its
# vCPUs), so forced: the node's pods share the 2-core machine with whatever
# else runs there, and the cap must stay well under what the VM gets.
VCPUS, CAP, CAP_TEXT = 2, 0.2, "200m"


def brake(run_as, names, **args):
    return run_as("admin", "kubevirt_vm_cpu_limit", dict(args, namespace=NAMESPACE, names=names))


def compute_container_id(fleet, name):
    return fleet.compute_status(name)[1].container_id


def test_a_throttle_brings_the_vm_to_its_cap_in_place_and_restore_gives_its_cpu_back(run_as, fleet):
    name = fleet.vmi(cores=VCPUS)
    container = compute_container_id(fleet, name)
    assert fleet.cfs_quota(name) is None
    unthrottled = fleet.cpu_rate(name)

    result = brake(run_as, [name], cpus=CAP_TEXT, force=True, reason="INC-9 noisy neighbour", wait=True,
                   wait_timeout=30)
    assert not result.get("failed"), result
    vm = result["vms"][0]
    assert vm["node"] == {"status": "applied", "cpu_limit": CAP_TEXT, "reason": None, "message": None}, vm
    assert result["summary"]["report"] == ["%s/%s: 0.2 CPU, was unlimited (node: applied)" % (NAMESPACE, name)]
    # The kernel enforces it: the container's CFS quota is the cap.
    assert fleet.cfs_quota(name) == CAP
    throttled = fleet.cpu_rate(name)
    check_braked(unthrottled, throttled, CAP)

    restored_result = brake(run_as, [name], state="restored", wait=True, wait_timeout=30)
    assert not restored_result.get("failed"), restored_result
    # The pod had no limit, and none can be removed: restore raises it to the vCPUs plus headroom.
    assert restored_result["vms"][0]["node"]["status"] == "applied" and fleet.cfs_quota(name) == VCPUS + 1.0
    restored = fleet.cpu_rate(name)
    check_recovered(unthrottled, throttled, restored)
    # In place: the same container ran all along.
    assert compute_container_id(fleet, name) == container
    assert fleet.compute_status(name)[1].restart_count == 0


def reconcile_playbook(selector):
    """A playbook that runs the reconcile role on the lab namespace's VMs of `selector`."""
    play = [{"name": "Reconcile", "hosts": "controllers", "gather_facts": False, "tasks": [
        {"name": "The reconcile role", "ansible.builtin.include_role": {"name": "overcommit.control.kubevirt_cpu_reconcile"},
         "vars": {"kubevirt_cpu_reconcile_namespace": NAMESPACE, "kubevirt_cpu_reconcile_label_selector": selector}}]}]
    handle = tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False)
    with handle:
        yaml.safe_dump(play, handle)
    return handle.name


def test_a_restarted_vm_runs_unbraked_until_the_reconcile_role_applies_its_cap_again(lab, fleet):
    name = fleet.vmi(cores=VCPUS, vm=True)
    throttled = run_playbook("throttle.yml", {"kubevirt_vms": [name], "kubevirt_namespace": NAMESPACE,
                                              "cpus": CAP, "force": True, "reason": "INC-10 noisy neighbour",
                                              "kubevirt_wait": 30},
                             env={"K8S_AUTH_KUBECONFIG": lab["OVERCOMMIT_KUBECONFIG_ADMIN"]})
    assert throttled.returncode == 0, throttled.stdout[-3000:]
    # The playbook waited for the node: its summary says the node applied the cap, and it has.
    assert "%s/%s: 0.2 CPU, was unlimited (node: applied)" % (NAMESPACE, name) in throttled.stdout, \
        throttled.stdout[-3000:]
    assert fleet.node_limit(name) == CAP_TEXT
    braked = fleet.cpu_rate(name)

    # A restart, as KubeVirt does it: a new VMI and a new launcher pod, without the cap.
    first_pod = fleet.pod_of(name).metadata.name
    fleet.restart(name)
    new_pod = fleet.pod_of(name).metadata.name
    assert new_pod != first_pod and fleet.node_limit(name) is None and fleet.cfs_quota(name) is None
    unthrottled = fleet.cpu_rate(name)
    assert unthrottled > braked + TOLERANCE_CPUS, (
        "the new pod got %.2f CPU, the braked one %.2f: the restart did not lose the cap" % (unthrottled, braked))

    playbook = reconcile_playbook(fleet.selector)
    try:
        reconciled = run_playbook(playbook, {}, env={"K8S_AUTH_KUBECONFIG": lab["OVERCOMMIT_KUBECONFIG_ADMIN"]})
    finally:
        os.unlink(playbook)
    assert reconciled.returncode == 0, reconciled.stdout[-3000:]
    assert "%s/%s: 0.2 CPU, was unlimited" % (NAMESPACE, name) in reconciled.stdout, reconciled.stdout[-3000:]
    assert json.loads(fleet.annotations(name)[APPLIED])["pod"] == new_pod
    fleet.wait_node_limit(name, CAP_TEXT)
    assert fleet.cfs_quota(name) == CAP
    check_braked(unthrottled, fleet.cpu_rate(name), CAP)


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
        assert vm["msg"].startswith("the node of pod %s has not applied the compute CPU limit after 5s (pending: "
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
