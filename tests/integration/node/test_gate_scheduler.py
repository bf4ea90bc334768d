"""The admission gate measured by its effect: the lab's kube-scheduler places
no new pod on a node node_admission gated, places them on an open one, and
places a pending pod on the gated node once it is opened - where the lab
node's kubelet then runs it. The open alternative is a Node object of the
test's own (no kubelet runs it: a pod the scheduler binds there is what is
looked at). Pods and that node carry the lab node's taint, and the pods
may only go to these two nodes, so that the rest of the lab is untouched."""

import uuid

import pytest
from kubernetes import client

from kubevirt_fleet import NAMESPACE, RUN_LABEL
from standin import lab_node, tolerate_lab_node, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.serial]

GATE_TAINT = "overcommit.control/gated"


def make_node(core, lab, run):
    """An open Node object with room for the test's pods."""
    name = "oc-it-gate-%s" % run
    core.create_node({"metadata": {"name": name, "labels": {RUN_LABEL: run, "kubernetes.io/hostname": name}},
                      "spec": {"taints": [{"key": lab["OVERCOMMIT_LAB_NODE_TAINT"], "value": "real",
                                           "effect": "NoSchedule"}]}})
    core.patch_node_status(name, {"status": {
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test node"}]}})
    return name


def sleeper(core, lab, run, nodes, index):
    """A pod for kube-scheduler (no nodeName) that may go to `nodes` only."""
    pod = core.create_namespaced_pod(NAMESPACE, {
        "metadata": {"name": "oc-it-gate-%s-%d" % (run, index), "labels": {RUN_LABEL: run}},
        "spec": {
            "hostNetwork": True, "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
            "tolerations": [tolerate_lab_node(lab)],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": nodes}]}]}}},
            "containers": [{"name": "sleep", "image": lab["OVERCOMMIT_LAB_NODE_IMAGE"], "imagePullPolicy": "Never",
                            "command": ["/spinner", "pause"], "resources": {"requests": {"cpu": "10m", "memory": "8Mi"}}}]}})
    return pod.metadata.name


def bound_node(core, name):
    return core.read_namespaced_pod(name, NAMESPACE).spec.node_name


def unschedulable(core, name):
    """The scheduler's PodScheduled=False condition of a pod it could not place."""
    for condition in core.read_namespaced_pod(name, NAMESPACE).status.conditions or []:
        if condition.type == "PodScheduled" and condition.status == "False" and condition.reason == "Unschedulable":
            return condition
    return None


def gate(run_as, names, state="gated"):
    result = run_as("admin", "node_admission", {"names": names, "state": state, "reason": "test: scheduler",
                                                "max_gated_share": 1.0})
    assert not result.get("failed"), result
    return result


def test_a_gated_node_gets_no_new_pod_an_open_one_does_and_opening_it_lets_a_pending_pod_land(lab, kube_admin,
                                                                                              run_as):
    core = client.CoreV1Api(kube_admin)
    run = uuid.uuid4().hex[:8]
    real = lab_node(lab)
    other = make_node(core, lab, run)
    pods = []
    try:
        gate(run_as, [real])
        for index in range(3):
            pods.append(sleeper(core, lab, run, [real, other], index))
        placed = [wait_for("pod %s placed" % name, lambda name=name: bound_node(core, name)) for name in pods]
        assert placed == [other] * 3

        gate(run_as, [other])
        pending = sleeper(core, lab, run, [real, other], 3)
        pods.append(pending)
        refused = wait_for("the scheduler finding no node for %s" % pending, lambda: unschedulable(core, pending))
        # Both nodes are refused for the gate's taint (the pod tolerates the lab node's), the rest for the affinity.
        assert "2 node(s) had untolerated taint(s)" in refused.message, refused.message
        assert [t.key for t in core.read_node(real).spec.taints if t.key == GATE_TAINT] == [GATE_TAINT]
        assert bound_node(core, pending) is None

        gate(run_as, [real], state="open")
        assert wait_for("pod %s placed" % pending, lambda: bound_node(core, pending)) == real
        # The node's kubelet runs it.
        wait_for("pod %s running on %s" % (pending, real),
                 lambda: core.read_namespaced_pod(pending, NAMESPACE).status.phase == "Running")
    finally:
        gate(run_as, [real, other], state="open")
        for name in pods:
            core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)
        core.delete_node(other)
