"""Seeds the lab's kube-apiserver: KubeVirt CRDs, RBAC for the least-privilege
identity, a namespace and a few Node objects. Idempotent."""

import glob
import os
import sys
import time

import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LIMITED_USER = "overcommit-operator"
LAB_NAMESPACE = "lab"
NODES = {
    # name: (cpu, memory, labels)
    "lab-node-a": ("16", "64Gi", {"topology.kubernetes.io/zone": "zone-a"}),
    "lab-node-b": ("16", "64Gi", {"topology.kubernetes.io/zone": "zone-a"}),
    "lab-node-c": ("32", "128Gi", {"topology.kubernetes.io/zone": "zone-b"}),
    "lab-node-d": ("32", "128Gi", {"topology.kubernetes.io/zone": "zone-b"}),
}


def create_or_keep(create, *args):
    try:
        create(*args)
    except ApiException as exc:
        if exc.status != 409:
            raise


def install_crds(api_client):
    ext = client.ApiextensionsV1Api(api_client)
    names = []
    for path in sorted(glob.glob(os.path.join(HERE, "k8s", "crds", "*.yaml"))):
        with open(path) as handle:
            for doc in yaml.safe_load_all(handle):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    create_or_keep(ext.create_custom_resource_definition, doc)
                    names.append(doc["metadata"]["name"])
    deadline = time.monotonic() + 60
    for name in names:
        while True:
            crd = ext.read_custom_resource_definition(name)
            conditions = crd.status.conditions or []
            if any(c.type == "Established" and c.status == "True" for c in conditions):
                break
            if time.monotonic() > deadline:
                sys.exit("CRD %s not Established after 60 s" % name)
            time.sleep(0.2)


def install_rbac(api_client):
    rbac = client.RbacAuthorizationV1Api(api_client)
    with open(os.path.join(ROOT, "docs", "rbac", "overcommit-control-clusterrole.yaml")) as handle:
        role = yaml.safe_load(handle)
    try:
        rbac.replace_cluster_role(role["metadata"]["name"], role)
    except ApiException as exc:
        if exc.status != 404:
            raise
        rbac.create_cluster_role(role)
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "overcommit-control-lab"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "overcommit-control"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": LIMITED_USER}],
    }
    create_or_keep(rbac.create_cluster_role_binding, binding)


def install_nodes(api_client):
    core = client.CoreV1Api(api_client)
    create_or_keep(core.create_namespace, {"metadata": {"name": LAB_NAMESPACE}})
    for name, (cpu, memory, labels) in NODES.items():
        node = {
            "metadata": {"name": name, "labels": dict(labels, **{"kubernetes.io/hostname": name})},
            "spec": {},
        }
        create_or_keep(core.create_node, node)
        status = {"status": {"capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                             "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                             "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                             "message": "lab node"}]}}
        core.patch_node_status(name, status)


def main():
    api_client = config.new_client_from_config(config_file=sys.argv[1])
    install_crds(api_client)
    install_rbac(api_client)
    install_nodes(api_client)


if __name__ == "__main__":
    main()
