"""KubeVirt's resources in the lab's kube-apiserver, for the KubeVirt
components `tests/testbed/lab up kubevirt` runs on the lab node.

  seed_kubevirt.py up ADMIN_KUBECONFIG INSTALL_JSON STATE_DIR NODE DOMAIN_TYPE
      What virt-operator would install for virt-controller and virt-handler
      (the List tests/testbed/servers/kubevirt's `kubevirt-install` prints):
      KubeVirt's CRDs, replacing the schema-only ones the kube group seeds,
      and the components' service accounts, roles and bindings. Then the
      KubeVirt CR, with software emulation unless DOMAIN_TYPE is kvm, marked
      Deployed as virt-operator marks it once it has installed everything,
      and a kubeconfig per component holding a token of its own service
      account, so each runs with the permissions KubeVirt gives it.
  seed_kubevirt.py vm ADMIN_KUBECONFIG NAME DISK_PATH NODE_TAINT
      The lab's VirtualMachine (runStrategy Always) booting DISK_PATH.
  seed_kubevirt.py down ADMIN_KUBECONFIG
      Deletes the lab's VirtualMachines, every VMI and launcher pod (the
      node's kubelet stops QEMU) and KubeVirt's records of VM starts, and
      puts back the kube group's CRDs.
Idempotent."""

import glob
import json
import os
import sys
import time
import uuid

import yaml

from kubernetes import client, config
from kubernetes.dynamic import DynamicClient
from kubernetes.client.rest import ApiException

HERE = os.path.dirname(os.path.abspath(__file__))
NAMESPACE = "kubevirt"
# The lab's own VMs live apart from the namespaces tests create and delete.
VM_NAMESPACE = "kubevirt-lab"
COMPONENTS = {"virt-controller": "kubevirt-controller", "virt-handler": "kubevirt-handler"}
TOKEN_SECONDS = 30 * 24 * 3600
GROUP, VERSION = "kubevirt.io", "v1"
KUBEVIRT_CR = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "KubeVirt",
    "metadata": {"name": "kubevirt", "namespace": NAMESPACE},
    "spec": {
        "imagePullPolicy": "IfNotPresent",
        "configuration": {
            # useEmulation is set by up(): QEMU's TCG where the lab's guests run without KVM.
            "developerConfiguration": {"featureGates": ["HostDisk"]},
            # No virt-api serves consoles here: no console log sidecar in every launcher pod.
            "virtualMachineOptions": {"disableSerialConsoleLog": {}},
        },
    },
}


def create_or_replace(dynamic, obj):
    """Creates obj, or replaces what exists under its name (CRDs the kube
    group seeded from another KubeVirt release among them)."""
    resource = dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    namespace = obj["metadata"].get("namespace")
    try:
        resource.create(body=obj, namespace=namespace)
    except ApiException as exc:
        if exc.status != 409:
            raise
        current = resource.get(name=obj["metadata"]["name"], namespace=namespace)
        obj = dict(obj, metadata=dict(obj["metadata"], resourceVersion=current.metadata.resourceVersion))
        resource.replace(body=obj, namespace=namespace)


def wait_established(api_client, names, seconds=60):
    ext = client.ApiextensionsV1Api(api_client)
    deadline = time.monotonic() + seconds
    for name in names:
        while not any(c.type == "Established" and c.status == "True"
                      for c in ext.read_custom_resource_definition(name).status.conditions or []):
            if time.monotonic() > deadline:
                sys.exit("CRD %s not Established after %d s" % (name, seconds))
            time.sleep(0.2)


def ensure_namespace(core, name):
    try:
        core.create_namespace({"metadata": {"name": name}})
    except ApiException as exc:
        if exc.status != 409:
            raise


def write_kubeconfig(path, server, ca_file, user, token):
    kubeconfig = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "lab", "cluster": {"server": server, "certificate-authority": ca_file}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "lab", "user": user}}],
        "current-context": user,
    }
    with open(path + ".tmp", "w") as handle:
        json.dump(kubeconfig, handle, indent=1)
    os.chmod(path + ".tmp", 0o600)
    os.replace(path + ".tmp", path)


def kubevirt_cr(domain_type):
    """The KubeVirt CR; without KVM, the launchers run QEMU's TCG, as
    KubeVirt's own CI runs without nested virtualisation."""
    cr = json.loads(json.dumps(KUBEVIRT_CR))
    cr["spec"]["configuration"]["developerConfiguration"]["useEmulation"] = domain_type != "kvm"
    return cr


def up(api_client, install_json, state_dir, node, domain_type):
    cr = kubevirt_cr(domain_type)
    core = client.CoreV1Api(api_client)
    ensure_namespace(core, NAMESPACE)
    ensure_namespace(core, VM_NAMESPACE)
    with open(install_json) as handle:
        items = json.load(handle)["items"]
    dynamic = DynamicClient(api_client)
    crds = [item for item in items if item["kind"] == "CustomResourceDefinition"]
    for item in crds + [item for item in items if item["kind"] != "CustomResourceDefinition"]:
        create_or_replace(dynamic, item)
    wait_established(api_client, [crd["metadata"]["name"] for crd in crds])
    custom = client.CustomObjectsApi(api_client)
    try:
        custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "kubevirts", cr)
    except ApiException as exc:
        if exc.status != 409:
            raise
        custom.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "kubevirts", "kubevirt",
                                              {"spec": cr["spec"]})
    # KubeVirt's components read the CR's configuration only once a phase is set.
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, NAMESPACE, "kubevirts", "kubevirt",
        {"status": {"phase": "Deployed", "defaultArchitecture": "amd64"}})
    # virt-handler's node labeller (off in the lab) would label the CPU models the node's QEMU offers; KubeVirt
    # counts qemu64, the one model TCG runs everywhere, as obsolete and would not, so the lab labels it.
    core.patch_node(node, {"metadata": {"labels": {"cpu-model.node.kubevirt.io/qemu64": "true"}}})
    configuration = api_client.configuration
    for component, account in COMPONENTS.items():
        token = core.create_namespaced_service_account_token(
            account, NAMESPACE, {"spec": {"expirationSeconds": TOKEN_SECONDS}}).status.token
        write_kubeconfig(os.path.join(state_dir, component + ".kubeconfig"), configuration.host,
                         configuration.ssl_ca_cert, "system:serviceaccount:%s:%s" % (NAMESPACE, account), token)


def vm_manifest(name, disk_path, node_taint, namespace=VM_NAMESPACE, labels=None, run_strategy="Always",
                cores=1, cpu_request=None):
    """A VirtualMachine of `cores` vCPUs booting the raw disk at disk_path,
    shared by the lab's VM and the tests' (labels go on the VM and its
    VMIs); with `cpu_request`, the CPU it was sold (else virt-controller
    derives the launcher's request from cpuAllocationRatio)."""
    labels = dict(labels or {})
    requests = {"memory": "32Mi"}
    if cpu_request is not None:
        requests["cpu"] = cpu_request
    return {
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "runStrategy": run_strategy,
            "template": {
                "metadata": {"labels": dict(labels, **{"kubevirt.io/vm": name})},
                "spec": {
                    # Everything virt-api's defaulting webhook would fill in: it does not run in the lab.
                    "domain": {
                        # qemu64 offers AMD's svm, which KVM on this nested host does not: off, under TCG too.
                        "cpu": {"sockets": 1, "cores": cores, "threads": 1, "model": "qemu64",
                                "features": [{"name": "svm", "policy": "disable"}]},
                        # Set by virt-api on a new VM; else KubeVirt sets it after the first start and
                        # reports the VM RestartRequired.
                        "firmware": {"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, "%s/%s" % (namespace, name)))},
                        "memory": {"guest": "32Mi"},
                        "resources": {"requests": requests},
                        "devices": {"autoattachPodInterface": False, "autoattachSerialConsole": False,
                                    "disks": [{"name": "boot", "disk": {"bus": "virtio"}}]},
                    },
                    "volumes": [{"name": "boot", "hostDisk": {"path": disk_path, "type": "Disk"}}],
                    "tolerations": [{"key": node_taint, "operator": "Exists", "effect": "NoSchedule"}],
                    "terminationGracePeriodSeconds": 0,
                },
            },
        },
    }


def vm(api_client, name, disk_path, node_taint):
    custom = client.CustomObjectsApi(api_client)
    try:
        custom.create_namespaced_custom_object(GROUP, VERSION, VM_NAMESPACE, "virtualmachines",
                                               vm_manifest(name, disk_path, node_taint,
                                                           labels={"overcommit.test/lab-vm": "true"}))
    except ApiException as exc:
        if exc.status != 409:
            raise


def down(api_client):
    """Deletes the VMs, their VMIs and launcher pods (waiting until the
    kubelet has stopped every launcher), then puts back the schema-only
    CRDs the kube group seeds, which the tests without KubeVirt's
    components use."""
    custom = client.CustomObjectsApi(api_client)
    core = client.CoreV1Api(api_client)
    try:
        namespaces = [item.metadata.name for item in core.list_namespace().items]
        for plural in ("virtualmachines", "virtualmachineinstances"):
            for item in custom.list_cluster_custom_object(GROUP, VERSION, plural)["items"]:
                if item["metadata"]["namespace"] == VM_NAMESPACE or plural == "virtualmachineinstances":
                    ignore_missing(custom.delete_namespaced_custom_object, GROUP, VERSION,
                                   item["metadata"]["namespace"], plural, item["metadata"]["name"])
    except ApiException as exc:
        if exc.status != 404:  # 404: KubeVirt's CRDs were never installed
            raise
        namespaces = []
    deadline = time.monotonic() + 90
    for namespace in namespaces:
        for pod in core.list_namespaced_pod(namespace, label_selector="kubevirt.io=virt-launcher").items:
            # Not 0, which removes the pod at once: the kubelet removes it once its containers are stopped.
            ignore_missing(core.delete_namespaced_pod, pod.metadata.name, namespace, grace_period_seconds=1)
    while core.list_pod_for_all_namespaces(label_selector="kubevirt.io=virt-launcher").items:
        if time.monotonic() > deadline:
            sys.exit("virt-launcher pods still there after 90 s")
        time.sleep(1)
    # A VMI whose virt-handler is gone keeps its finalizers: nothing else would remove them.
    try:
        for item in custom.list_cluster_custom_object(GROUP, VERSION, "virtualmachineinstances")["items"]:
            ignore_missing(custom.patch_namespaced_custom_object, GROUP, VERSION, item["metadata"]["namespace"],
                           "virtualmachineinstances", item["metadata"]["name"], {"metadata": {"finalizers": None}})
    except ApiException as exc:
        if exc.status != 404:
            raise
    # KubeVirt keeps a ControllerRevision of each VM start; no garbage collector follows their owners here.
    apps = client.AppsV1Api(api_client)
    for namespace in namespaces:
        for revision in apps.list_namespaced_controller_revision(namespace).items:
            if revision.metadata.name.startswith("revision-start-vm-"):
                ignore_missing(apps.delete_namespaced_controller_revision, revision.metadata.name, namespace)
    dynamic = DynamicClient(api_client)
    for path in sorted(glob.glob(os.path.join(HERE, "k8s", "crds", "*.yaml"))):
        with open(path) as handle:
            for doc in yaml.safe_load_all(handle):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    create_or_replace(dynamic, doc)


def ignore_missing(delete, *args, **kwargs):
    try:
        delete(*args, **kwargs)
    except ApiException as exc:
        if exc.status != 404:
            raise


def main():
    command, kubeconfig = sys.argv[1:3]
    api_client = config.new_client_from_config(config_file=kubeconfig)
    if command == "up":
        up(api_client, *sys.argv[3:7])
    elif command == "vm":
        vm(api_client, *sys.argv[3:6])
    elif command == "down":
        down(api_client)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
