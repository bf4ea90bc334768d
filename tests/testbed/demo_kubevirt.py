"""A running KubeVirt VM for the lab demo, shaped as KubeVirt creates it: a
VirtualMachine, the VirtualMachineInstance it owns and its virt-launcher pod
(labels, owners, node), on the lab's real node, whose kubelet runs the pod:
its `compute` container burns one thread per vCPU, as a busy guest does. The
lab has no KubeVirt controllers, so this script stands in for them (it marks
the VMI Running with its pod); `restart` does what a VM restart does: a new
VMI (new uid, no annotations) and a new launcher pod. `measure` prints the
CPU the compute container used over a few seconds, from its cgroup, once the
node runs it with the limit of the pod's spec.

usage: demo_kubevirt.py up|restart|measure|down KUBECONFIG [NAME]
"""

import os
import sys
import time

from kubernetes import client, config
from kubernetes.client.rest import ApiException

import pod_cgroup

NAMESPACE = "lab"
NODE = os.environ.get("OVERCOMMIT_LAB_NODE", "oc-lab-node")
IMAGE = os.environ.get("OVERCOMMIT_LAB_NODE_IMAGE", "overcommit.test/spinner:lab")
TAINT = os.environ.get("OVERCOMMIT_LAB_NODE_TAINT", "overcommit.test/lab-node")
VCPUS = 2
DOMAIN = {"cpu": {"cores": VCPUS}, "memory": {"guest": "2Gi"}, "devices": {}}
SECONDS = 3.0


def up(api_client, name):
    custom = client.CustomObjectsApi(api_client)
    vm = custom.create_namespaced_custom_object("kubevirt.io", "v1", NAMESPACE, "virtualmachines", {
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
        "metadata": {"name": name, "labels": {"app": "demo"}},
        "spec": {"runStrategy": "Always", "template": {"metadata": {"labels": {"app": "demo"}},
                                                       "spec": {"domain": DOMAIN}}},
    })
    start(api_client, name, vm["metadata"]["uid"])


def start(api_client, name, vm_uid):
    custom = client.CustomObjectsApi(api_client)
    core = client.CoreV1Api(api_client)
    vmi = custom.create_namespaced_custom_object("kubevirt.io", "v1", NAMESPACE, "virtualmachineinstances", {
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "labels": {"app": "demo"},
                     "ownerReferences": [{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": name,
                                          "uid": vm_uid, "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"domain": DOMAIN},
    })
    uid = vmi["metadata"]["uid"]
    pod = core.create_namespaced_pod(NAMESPACE, {
        "metadata": {
            "generateName": "virt-launcher-%s-" % name,
            "labels": {"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": uid, "vm.kubevirt.io/name": name},
            "ownerReferences": [{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance", "name": name,
                                 "uid": uid, "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {"nodeName": NODE, "hostNetwork": True, "automountServiceAccountToken": False,
                 "terminationGracePeriodSeconds": 1,
                 "tolerations": [{"key": TAINT, "operator": "Exists", "effect": "NoSchedule"}],
                 "containers": [{
                     "name": "compute", "image": IMAGE, "imagePullPolicy": "Never",
                     "command": ["/spinner", "spin", str(VCPUS)],
                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
    })
    deadline = time.monotonic() + 60
    while core.read_namespaced_pod(pod.metadata.name, NAMESPACE).status.phase != "Running":
        if time.monotonic() > deadline:
            sys.exit("pod %s is not running on %s after 60 s" % (pod.metadata.name, NODE))
        time.sleep(0.5)
    custom.patch_namespaced_custom_object_status(
        "kubevirt.io", "v1", NAMESPACE, "virtualmachineinstances", name,
        {"status": {"phase": "Running", "nodeName": NODE, "activePods": {pod.metadata.uid: NODE}}})
    print("VM %s/%s runs as VMI uid %s in pod %s on %s" % (NAMESPACE, name, uid, pod.metadata.name, NODE))


def launcher(core, name):
    pods = [p for p in core.list_namespaced_pod(NAMESPACE, label_selector="vm.kubevirt.io/name=%s" % name).items
            if not p.metadata.deletion_timestamp]
    if not pods:
        sys.exit("VM %s/%s has no launcher pod" % (NAMESPACE, name))
    return pods[0]


def cpu_seconds(pod, status):
    """CPU time of the compute container's cgroup."""
    folder = pod_cgroup.container_cgroup(pod.metadata.uid, status.container_id, "cpuacct")
    if folder is None:
        sys.exit("no cgroup of container %s of pod %s" % (status.container_id, pod.metadata.name))
    return pod_cgroup.cpu_seconds(folder)


def measure(api_client, name):
    """Prints the CPU the VM's compute container uses, once its node runs it
    with the limit of the pod's spec (a resize is applied on the kubelet's
    next sync of the pod)."""
    core = client.CoreV1Api(api_client)
    deadline = time.monotonic() + 60
    while True:
        pod = launcher(core, name)
        wanted = ((pod.spec.containers[0].resources.limits or {}).get("cpu"))
        status = next(s for s in pod.status.container_statuses or [] if s.name == "compute")
        running = ((status.resources and status.resources.limits) or {}).get("cpu")
        if running == wanted:
            break
        if time.monotonic() > deadline:
            sys.exit("the node runs %s with a CPU limit of %s, not %s, after 60 s"
                     % (pod.metadata.name, running, wanted))
        time.sleep(0.5)
    used, at = cpu_seconds(pod, status), time.monotonic()
    time.sleep(SECONDS)
    rate = (cpu_seconds(pod, status) - used) / (time.monotonic() - at)
    print("VM %s/%s (%d vCPUs) used %.2f CPU over %g s, measured in its compute container's cgroup on %s; "
          "the node runs it with a CPU limit of %s" % (NAMESPACE, name, VCPUS, rate, SECONDS, NODE, running or "none"))


def stop(api_client, name):
    custom = client.CustomObjectsApi(api_client)
    core = client.CoreV1Api(api_client)
    # No garbage collector runs in the lab: delete the launcher pods too.
    for pod in core.list_namespaced_pod(NAMESPACE, label_selector="vm.kubevirt.io/name=%s" % name).items:
        core.delete_namespaced_pod(pod.metadata.name, NAMESPACE, grace_period_seconds=0)
    try:
        custom.delete_namespaced_custom_object("kubevirt.io", "v1", NAMESPACE, "virtualmachineinstances", name)
    except ApiException as exc:
        if exc.status != 404:
            raise


def restart(api_client, name):
    vm = client.CustomObjectsApi(api_client).get_namespaced_custom_object(
        "kubevirt.io", "v1", NAMESPACE, "virtualmachines", name)
    stop(api_client, name)
    start(api_client, name, vm["metadata"]["uid"])


def down(api_client, name):
    stop(api_client, name)
    try:
        client.CustomObjectsApi(api_client).delete_namespaced_custom_object(
            "kubevirt.io", "v1", NAMESPACE, "virtualmachines", name)
    except ApiException as exc:
        if exc.status != 404:
            raise


def main():
    action, kubeconfig = sys.argv[1], sys.argv[2]
    name = sys.argv[3] if len(sys.argv) > 3 else "demo-vm"
    api_client = config.new_client_from_config(config_file=kubeconfig)
    if action == "restart":
        restart(api_client, name)
        return
    if action == "measure":
        measure(api_client, name)
        return
    down(api_client, name)
    if action == "up":
        up(api_client, name)


if __name__ == "__main__":
    main()
