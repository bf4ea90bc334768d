"""Reading Node objects and writing them as another, well-behaved owner
would (read-modify-write with a resourceVersion, retried on 409)."""

from kubernetes import client
from kubernetes.client.rest import ApiException


def node_state(api_client, name):
    node = client.CoreV1Api(api_client).read_node(name)
    return {
        "taints": sorted((t.key, t.value, t.effect) for t in node.spec.taints or []),
        "unschedulable": bool(node.spec.unschedulable),
        "labels": dict(node.metadata.labels or {}),
        "annotations": dict(node.metadata.annotations or {}),
        "resource_version": node.metadata.resource_version,
    }


def add_foreign_taint(api_client, name, key, value="x"):
    """Adds a taint of another owner, keeping every taint already there."""
    core = client.CoreV1Api(api_client)
    while True:
        node = core.read_node(name)
        taints = [dict((k, v) for k, v in (("key", t.key), ("value", t.value), ("effect", t.effect)) if v)
                  for t in node.spec.taints or []]
        taints.append({"key": key, "value": value, "effect": "NoSchedule"})
        body = {"metadata": {"resourceVersion": node.metadata.resource_version}, "spec": {"taints": taints}}
        try:
            core.patch_node(name, body, _content_type="application/merge-patch+json")
            return
        except ApiException as exc:
            if exc.status != 409:
                raise
