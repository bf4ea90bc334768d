# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the pods on a node ask for (requests) and may burn (limits) against
what the node offers (allocatable): the Kubernetes half of the two-layer
overcommit. Pure: plain API JSON in, plain data out.

A pod's requests and limits are summed as the scheduler sums them
(Kubernetes' resource helper PodRequests/PodLimits): its app containers and
sidecars (init containers with restartPolicy Always) together, at least the
largest plain init container (plus the sidecars started before it), plus the
pod overhead; pod-level resources, when set, replace the containers' sum."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.domain import overcommit
from ansible_collections.overcommit.control.plugins.module_utils.k8s import quantity
from ansible_collections.overcommit.control.plugins.module_utils.k8s.kubevirt_api import dedicated_cpus_offered
from ansible_collections.overcommit.control.plugins.module_utils.k8s.metadata import node_view

RESOURCES = ("cpu", "memory")
# Pods in these phases hold no resources any more (as kubectl describe node).
TERMINATED_PHASES = ("Succeeded", "Failed")
NON_TERMINATED = ",".join("status.phase!=%s" % phase for phase in TERMINATED_PHASES)


def _amount(resource, value, field):
    if resource == "cpu":
        return quantity.cpu(field, value)
    return quantity.memory(field, value)


def _container_amounts(container, kind, field):
    """{resource: amount} a container sets for requests or limits (only those set)."""
    given = ((container.get("resources") or {}).get(kind)) or {}
    return dict((resource, _amount(resource, given[resource], "%s.%s.%s" % (field, kind, resource)))
                for resource in RESOURCES if resource in given)


def _add(total, amounts):
    for resource, value in amounts.items():
        total[resource] = total.get(resource, 0) + value


def pod_amounts(pod, kind):
    """({resource: amount}, resources some container leaves unset) of one
    pod, kind being "requests" or "limits". CPU in CPUs, memory in bytes.
    For limits, a resource some app container leaves unset is unbounded: the
    sum then covers only the containers that set it."""
    spec = pod.get("spec") or {}
    name = (pod.get("metadata") or {}).get("name")
    pod_level = ((spec.get("resources") or {}).get(kind)) or {}
    total, unset = {}, set()
    for index, container in enumerate(spec.get("containers") or []):
        amounts = _container_amounts(container, kind, "pod %s containers[%d]" % (name, index))
        _add(total, amounts)
        unset.update(resource for resource in RESOURCES if resource not in amounts)
    sidecars, init_peak = {}, {}
    for index, container in enumerate(spec.get("initContainers") or []):
        amounts = _container_amounts(container, kind, "pod %s initContainers[%d]" % (name, index))
        if container.get("restartPolicy") == "Always":
            # Sidecars keep running beside the app containers.
            _add(total, amounts)
            _add(sidecars, amounts)
            running = dict(sidecars)
        else:
            running = dict(sidecars)
            _add(running, amounts)
        for resource, value in running.items():
            init_peak[resource] = max(init_peak.get(resource, 0), value)
    for resource, value in init_peak.items():
        total[resource] = max(total.get(resource, 0), value)
    for resource in RESOURCES:
        if resource in pod_level:
            total[resource] = _amount(resource, pod_level[resource], "pod %s resources.%s.%s" % (name, kind, resource))
            unset.discard(resource)
    overhead = spec.get("overhead") or {}
    _add(total, dict((resource, _amount(resource, overhead[resource], "pod %s overhead.%s" % (name, resource)))
                     for resource in RESOURCES if resource in overhead))
    return total, sorted(unset)


def is_terminated(pod):
    return ((pod.get("status") or {}).get("phase")) in TERMINATED_PHASES


def _rounded(resource, value):
    return round(value, 3) if resource == "cpu" else int(value)


def node_row(node, pods, prefix):
    """The overcommit row of one node: identity (system UUID, provider ID),
    labels, taints, and under `prefix` the gate record, the policy state and
    the kill switch; allocatable, and the sum of requests and limits of its
    non-terminated pods with their ratios to allocatable."""
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    view = node_view(node, prefix)
    allocatable_given = status.get("allocatable") or {}
    allocatable = dict((resource, _rounded(resource, _amount(resource, allocatable_given[resource],
                                                             "node %s allocatable.%s" % (view["name"], resource))))
                       for resource in RESOURCES if resource in allocatable_given)
    requests, limits = dict.fromkeys(RESOURCES, 0), dict.fromkeys(RESOURCES, 0)
    without_limit = dict.fromkeys(RESOURCES, 0)
    counted = [pod for pod in pods if not is_terminated(pod)]
    for pod in counted:
        _add(requests, pod_amounts(pod, "requests")[0])
        pod_limits, unset = pod_amounts(pod, "limits")
        _add(limits, pod_limits)
        for resource in unset:
            without_limit[resource] += 1
    figures = {}
    for resource in RESOURCES:
        figures[resource] = {
            "allocatable": allocatable.get(resource),
            "requests": _rounded(resource, requests[resource]),
            "limits": _rounded(resource, limits[resource]),
            "requests_ratio": overcommit.ratio(requests[resource], allocatable.get(resource)),
            "limits_ratio": overcommit.ratio(limits[resource], allocatable.get(resource)),
            "pods_without_limit": without_limit[resource],
        }
    row = {
        "name": view["name"],
        "system_uuid": (status.get("nodeInfo") or {}).get("systemUUID") or None,
        "provider_id": spec.get("providerID") or None,
        "labels": dict(meta.get("labels") or {}),
        "dedicated_cpus": dedicated_cpus_offered(meta.get("labels") or {}),
        "taints": view["taints"],
        "unschedulable": view["unschedulable"],
        "gate": view["gate"],
        "policy": view["policy"],
        "paused": view["paused"],
        "pods": len(counted),
        "cpu": figures["cpu"],
        "memory": figures["memory"],
    }
    if view["policy_error"]:
        row["policy_error"] = view["policy_error"]
    return row
