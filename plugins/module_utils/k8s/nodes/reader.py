# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read nodes and the pods on them over one connection, and sum them with
the pure functions of `usage.py`. Read only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import K8sClientError
from ansible_collections.overcommit.control.plugins.module_utils.k8s.nodes import usage as node_usage

NODES = "/api/v1/nodes"
PODS = "/api/v1/pods"
# Up to this many nodes are read one by one and their pods with one list per
# node (a field selector on spec.nodeName, as kubectl describe node does);
# more nodes are read in one list, and the pods in one cluster-wide list.
FEW_NODES = 20


def read_nodes(client, names, label_selector):
    """(nodes in order: those named, then those the selector matches, or
    every node when neither is given; names not found)."""
    names = list(dict.fromkeys(names or []))
    found = {}
    order = []
    if label_selector or not names:
        for node in client.list(NODES, label_selector):
            found[node["metadata"]["name"]] = node
            order.append(node["metadata"]["name"])
    missing = [name for name in names if name not in found]
    if len(missing) > FEW_NODES:
        by_name = dict((node["metadata"]["name"], node) for node in client.list(NODES))
        found.update((name, by_name[name]) for name in missing if name in by_name)
    else:
        for name in missing:
            try:
                found[name] = client.get("%s/%s" % (NODES, name))
            except K8sClientError as exc:
                if exc.status != 404:
                    raise
    ordered = [name for name in names if name in found] + [name for name in order if name not in names]
    return [found[name] for name in ordered], [name for name in names if name not in found]


def pods_by_node(client, node_names):
    """Non-terminated pods per node name."""
    pods = dict((name, []) for name in node_names)
    if len(node_names) <= FEW_NODES:
        for name in node_names:
            pods[name] = client.list(PODS, field_selector="spec.nodeName=%s,%s" % (name, node_usage.NON_TERMINATED))
        return pods
    for pod in client.list(PODS, field_selector=node_usage.NON_TERMINATED):
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name in pods:
            pods[node_name].append(pod)
    return pods


def gather(client, names, label_selector, prefix):
    """{nodes: [node_usage.node_row...], nodes_not_found: [...]}. Raises
    K8sClientError when the API cannot be read, ValueRangeError for a
    quantity Kubernetes would not have stored."""
    nodes, not_found = read_nodes(client, names, label_selector)
    pods = pods_by_node(client, [node["metadata"]["name"] for node in nodes])
    return {"nodes": [node_usage.node_row(node, pods[node["metadata"]["name"]], prefix) for node in nodes],
            "nodes_not_found": not_found}
