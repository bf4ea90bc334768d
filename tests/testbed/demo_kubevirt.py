"""A running KubeVirt VM for the lab demo, shaped as KubeVirt creates it: a
VirtualMachine, the VirtualMachineInstance it owns and its virt-launcher pod
(labels, owners, node), marked Running. The lab has no KubeVirt controllers or
kubelet, so this script stands in for them; `restart` does what a VM restart
does: a new VMI (new uid, no annotations) and a new launcher pod.

usage: demo_kubevirt.py up|restart|down KUBECONFIG [NAME]
"""

import sys

from kubernetes import client, config
from kubernetes.client.rest import ApiException

NAMESPACE = "lab"
NODE = "lab-node-c"
DOMAIN = {"cpu": {"cores": 4}, "memory": {"guest": "2Gi"}, "devices": {}}


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
        "spec": {"nodeName": NODE, "containers": [{
            "name": "compute", "image": "quay.io/kubevirt/virt-launcher:v1.6.0",
            "resources": {"requests": {"cpu": "400m", "memory": "2300Mi"}}}]},
    })
    core.patch_namespaced_pod_status(pod.metadata.name, NAMESPACE, {"status": {"phase": "Running"}})
    custom.patch_namespaced_custom_object_status(
        "kubevirt.io", "v1", NAMESPACE, "virtualmachineinstances", name,
        {"status": {"phase": "Running", "nodeName": NODE, "activePods": {pod.metadata.uid: NODE}}})
    print("VM %s/%s runs as VMI uid %s in pod %s on %s" % (NAMESPACE, name, uid, pod.metadata.name, NODE))


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
    down(api_client, name)
    if action == "up":
        up(api_client, name)


if __name__ == "__main__":
    main()
