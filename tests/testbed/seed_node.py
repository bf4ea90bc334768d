"""Identities of the lab node's kubelet and kube-scheduler: a ServiceAccount
each in kube-system, bound to Kubernetes' own ClusterRoles for a node
(system:node) and for the scheduler, and a kubeconfig with a token requested
for it. ServiceAccount tokens need no change of the running API server's
flags (its token file is read only when it starts). Idempotent: a new token
each run, valid for a week.

`down` deletes the pods bound to the node (its kubelet stops their
containers) and the Node, so that nothing in the API speaks of a node that
is gone.

usage: seed_node.py up ADMIN_KUBECONFIG NODE_KUBECONFIG SCHEDULER_KUBECONFIG
       seed_node.py down ADMIN_KUBECONFIG NODE_NAME
"""

import sys

import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from seed_k8s import create_or_keep

NAMESPACE = "kube-system"
TOKEN_SECONDS = 7 * 24 * 3600
IDENTITIES = {
    # service account: cluster roles
    "overcommit-lab-node": ["system:node"],
    "overcommit-lab-scheduler": ["system:kube-scheduler", "system:volume-scheduler"],
}


def subject(name):
    return {"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}


def bind(rbac, name, roles):
    for role in roles:
        create_or_keep(rbac.create_cluster_role_binding, {
            "metadata": {"name": "%s:%s" % (name, role.split(":", 1)[1])},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [subject(name)]})


def kubeconfig(api_client, token, path):
    """A kubeconfig that reads its token from a file beside it: clients
    re-read the file, so a later run's token reaches a running kubelet."""
    with open(path + ".token", "w") as handle:
        handle.write(token)
    configuration = api_client.configuration
    document = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "lab", "cluster": {"server": configuration.host,
                                                 "certificate-authority": configuration.ssl_ca_cert}}],
        "users": [{"name": "lab", "user": {"tokenFile": path + ".token"}}],
        "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "lab"}}],
        "current-context": "lab"}
    with open(path, "w") as handle:
        yaml.safe_dump(document, handle)


def down(api_client, node):
    core = client.CoreV1Api(api_client)
    selector = "spec.nodeName=" + node
    for pod in core.list_pod_for_all_namespaces(field_selector=selector).items:
        try:
            core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)
        except ApiException as exc:
            if exc.status != 404:
                raise
    try:
        core.delete_node(node)
    except ApiException as exc:
        if exc.status != 404:
            raise


def up(api_client, node_path, scheduler_path):
    core, rbac = client.CoreV1Api(api_client), client.RbacAuthorizationV1Api(api_client)
    for name, roles in IDENTITIES.items():
        create_or_keep(core.create_namespaced_service_account, NAMESPACE, {"metadata": {"name": name}})
        bind(rbac, name, roles)
    for name, path in (("overcommit-lab-node", node_path), ("overcommit-lab-scheduler", scheduler_path)):
        token = core.create_namespaced_service_account_token(name, NAMESPACE, {
            "spec": {"audiences": [], "expirationSeconds": TOKEN_SECONDS}}).status.token
        kubeconfig(api_client, token, path)


def main():
    action, admin = sys.argv[1:3]
    api_client = config.new_client_from_config(config_file=admin)
    if action == "down":
        down(api_client, sys.argv[3])
    else:
        up(api_client, *sys.argv[3:5])


if __name__ == "__main__":
    main()
