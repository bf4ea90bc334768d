"""A running KubeVirt VM for the lab demo, shaped as KubeVirt creates it: a
VirtualMachineInstance and its virt-launcher pod (labels, owner, node), both
marked Running. The lab has no KubeVirt controllers or kubelet, so this
script stands in for them.

usage: demo_kubevirt.py up|down KUBECONFIG [NAME]
"""

import sys

from kubernetes import client, config
from kubernetes.client.rest import ApiException

NAMESPACE = "lab"
NODE = "lab-node-c"


def up(api_client, name):
    custom = client.CustomObjectsApi(api_client)
    core = client.CoreV1Api(api_client)
    vmi = custom.create_namespaced_custom_object("kubevirt.io", "v1", NAMESPACE, "virtualmachineinstances", {
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "labels": {"app": "demo"}},
        "spec": {"domain": {"cpu": {"cores": 4}, "memory": {"guest": "2Gi"}, "devices": {}}},
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
    print("VMI %s/%s runs in pod %s on %s" % (NAMESPACE, name, pod.metadata.name, NODE))


def down(api_client, name):
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


def main():
    action, kubeconfig = sys.argv[1], sys.argv[2]
    name = sys.argv[3] if len(sys.argv) > 3 else "demo-vm"
    api_client = config.new_client_from_config(config_file=kubeconfig)
    down(api_client, name)
    if action == "up":
        up(api_client, name)


if __name__ == "__main__":
    main()
