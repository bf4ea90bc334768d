# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading the KubeVirt CPU brake's state: what a VirtualMachineInstance,
its VirtualMachine and its virt-launcher pod say (the desired cap and CPU
request, the typed throttle and applied records, the vCPUs, the class, the
running launcher pod and its compute CPU limit, request and QoS class), and the node's answer
to a resize (node_answer). Pure: the API's JSON in, views out; LimitRefusal
when there is no pod to act on."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal, ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.k8s import quantity
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.records import AppliedRecord, ThrottleRecord

COMPUTE = "compute"
LAUNCHER_SELECTOR = "kubevirt.io=virt-launcher"
CREATED_BY = "kubevirt.io/created-by"
# Resources that decide a pod's QoS class (Kubernetes' GetPodQOS).
QOS_RESOURCES = ("cpu", "memory")
GUARANTEED, BURSTABLE, BEST_EFFORT = "Guaranteed", "Burstable", "BestEffort"
# The node's answer to a resize: the kubelet reports the resources a container
# runs with in its status, and a resize it has not applied in two conditions.
NODE_APPLIED, NODE_PENDING, NODE_REFUSED, NODE_UNREPORTED = "applied", "pending", "refused", "not reported"
RESIZE_PENDING, RESIZE_IN_PROGRESS, INFEASIBLE = "PodResizePending", "PodResizeInProgress", "Infeasible"


class LimitRefusal(ObjectRefusal):
    """A cap this VMI cannot take now; says why."""


def _int(value):
    return int(value) if value else 1


def owning_vm(vmi):
    """The name of the VirtualMachine that controls a VMI (None for a VMI
    created on its own)."""
    for owner in (vmi.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("kind") == "VirtualMachine" and owner.get("controller"):
            return owner.get("name")
    return None


def _cap(annotations, keys):
    """The desired cap and CPU request and the throttle record (as written,
    and read) that a VMI or VirtualMachine carries."""
    return {"desired": annotations.get(keys["desired"]), "desired_request": annotations.get(keys["desired_request"]),
            "record_text": annotations.get(keys["record"]),
            "record": ThrottleRecord.parse(annotations.get(keys["record"]))}


def has_record(state):
    """Whether a VMI's or VM's view carries a throttle record (even one that cannot be read)."""
    return state["record_text"] is not None


def vm_view(vm, keys):
    """The copy of the desired cap and throttle record on a VirtualMachine
    (metadata is enough); None for no VM."""
    if vm is None:
        return None
    meta = vm.get("metadata") or {}
    return dict(_cap(meta.get("annotations") or {}, keys), name=meta.get("name"), namespace=meta.get("namespace"),
                uid=meta.get("uid"), labels=meta.get("labels") or {})


def stopped_vm_view(vm, keys):
    """A VirtualMachine without a VMI, as results and Events name it."""
    kept = vm_view(vm, keys)
    return dict(kept, kind="VirtualMachine", vmi=kept["name"], name="%s/%s" % (kept["namespace"], kept["name"]),
                vm=kept)


def vmi_view(vmi, keys, vm=None):
    """What the brake looks at on one VirtualMachineInstance. vm: its owning
    VirtualMachine (metadata is enough): the class label is usually set there,
    and it keeps the cap across restarts."""
    meta, spec, status = vmi.get("metadata") or {}, vmi.get("spec") or {}, vmi.get("status") or {}
    cpu = (spec.get("domain") or {}).get("cpu") or {}
    # Hot-plugged sockets show in the current topology, not in the spec.
    topology = status.get("currentCPUTopology") or cpu
    annotations = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    owner = vm_view(vm, keys)
    return dict(_cap(annotations, keys), **{
        "kind": "VirtualMachineInstance",
        "name": "%s/%s" % (meta.get("namespace"), meta.get("name")),
        "namespace": meta.get("namespace"),
        "vmi": meta.get("name"),
        "uid": meta.get("uid"),
        "vcpus": _int(topology.get("sockets")) * _int(topology.get("cores")) * _int(topology.get("threads")),
        "dedicated_placement": bool(cpu.get("dedicatedCpuPlacement")),
        "realtime": cpu.get("realtime") is not None,
        "declared_class": labels.get(keys["class"]) or (owner or {}).get("labels", {}).get(keys["class"]),
        "phase": status.get("phase"),
        "node": status.get("nodeName"),
        "active_pods": dict(status.get("activePods") or {}),
        "applied": AppliedRecord.parse(annotations.get(keys["applied"])),
        # None of the brake's annotations: a VMI made since the cap was set (a restart).
        "fresh": not any(keys[key] in annotations for key in ("desired", "desired_request", "applied", "record")),
        "vm": owner,
    })


def wanted_desired(view, field="desired"):
    """The desired cap text (field desired_request: the desired CPU
    request's): the VMI's own, else, for a VMI a restart made, the copy its
    VirtualMachine kept. A VMI whose cap was lifted by hand does not take it
    back from the VM."""
    if view[field] is not None or not view["fresh"]:
        return view[field]
    return (view["vm"] or {}).get(field)


def stale_vm_copy(view):
    """Whether the VirtualMachine still keeps a cap or CPU request the VMI no
    longer has (lifted by hand): it would come back after a restart."""
    return view["vm"] is not None and any(
        view["vm"].get(field) is not None and wanted_desired(view, field) is None
        for field in ("desired", "desired_request"))


def earlier_record(view):
    """(whether a throttle record exists, the record) from the VMI, else from
    its VirtualMachine."""
    if has_record(view):
        return True, view["record"]
    if view["vm"] and has_record(view["vm"]):
        return True, view["vm"]["record"]
    return False, None


def _cpu_or_none(field, value):
    return None if value is None else quantity.cpu(field, value)


def compute_container(pod):
    for container in (pod.get("spec") or {}).get("containers") or []:
        if container.get("name") == COMPUTE:
            return container
    return None


def compute_status(pod):
    """The compute container's status, as the node reports it (None: none)."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == COMPUTE:
            return status
    return None


def _condition(pod, kind):
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status", "True") == "True":
            return condition
    return None


def _cpu_limit(resources):
    return ((resources or {}).get("limits") or {}).get("cpu")


def _cpu_request(resources):
    return ((resources or {}).get("requests") or {}).get("cpu")


def node_answer(pod):
    """What the launcher pod's node says of its compute container's CPU
    limit and request: `applied` when the container runs with those of the
    pod's spec; `pending` while the kubelet defers the resize, applies it, or has
    not seen it yet; `refused` when it finds it infeasible; `not reported`
    when no node reports the container's resources (a kubelet without
    in-place resize, or none). With the limit it runs with (`cpu_limit`) and
    the node's reason and message."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    spec_resources = (compute_container(pod) or {}).get("resources")
    wanted, wanted_request = _cpu_limit(spec_resources), _cpu_request(spec_resources)
    container = compute_status(pod)
    resources = (container or {}).get("resources")
    answer = {"status": NODE_APPLIED, "cpu_limit": _cpu_limit(resources), "reason": None, "message": None}
    pending, progress = _condition(pod, RESIZE_PENDING), _condition(pod, RESIZE_IN_PROGRESS)
    for condition in (progress, pending):
        if condition is not None:
            answer.update(reason=condition.get("reason") or condition["type"], message=condition.get("message"))
    generation, observed = meta.get("generation"), status.get("observedGeneration")
    if pending is not None and pending.get("reason") == INFEASIBLE:
        answer["status"] = NODE_REFUSED
    elif pending is not None or progress is not None:
        answer["status"] = NODE_PENDING
    elif resources is None:
        answer.update(status=NODE_UNREPORTED, message="no node reports the resources of the %s container" % COMPUTE)
    elif generation is not None and observed is not None and observed < generation:
        answer.update(status=NODE_PENDING, message="the node has not seen the pod's generation %s yet" % generation)
    elif not quantity.same_cpu(wanted, answer["cpu_limit"]):
        answer.update(status=NODE_PENDING, message="the container runs with a CPU limit of %s, not %s" % (
            answer["cpu_limit"] or "none", wanted or "none"))
    elif wanted_request is not None and not quantity.same_cpu(wanted_request, _cpu_request(resources)):
        answer.update(status=NODE_PENDING, message="the container runs with a CPU request of %s, not %s" % (
            _cpu_request(resources) or "none", wanted_request))
    return answer


def node_said(node):
    """The node's reason and message ("" when it gave none)."""
    return ": ".join(part for part in (node.get("reason"), node.get("message")) if part)


def node_text(node):
    """A node answer as people read it: its status, then what the node said."""
    said = node_said(node)
    return "%s: %s" % (node["status"], said) if said else node["status"]


def pod_view(pod):
    """The launcher pod's compute CPU, QoS class and any pending resize."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    resources = (compute_container(pod) or {}).get("resources") or {}
    pending = [c for c in status.get("conditions") or [] if c.get("type") == RESIZE_PENDING]
    return {
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "node": (pod.get("spec") or {}).get("nodeName"),
        "cpu_request": _cpu_or_none("requests.cpu", (resources.get("requests") or {}).get("cpu")),
        "request_text": (resources.get("requests") or {}).get("cpu"),
        "cpu_limit": _cpu_or_none("limits.cpu", (resources.get("limits") or {}).get("cpu")),
        "limit_text": (resources.get("limits") or {}).get("cpu"),
        "qos": status.get("qosClass") or qos_class(pod.get("spec") or {}),
        "resize_pending": dict((k, pending[0].get(k)) for k in ("reason", "message") if pending[0].get(k))
        if pending else None,
    }


def qos_class(pod_spec):
    """A pod's QoS class as Kubernetes computes it (GetPodQOS): from
    pod-level resources when set, else summed over app and init
    containers."""
    if (pod_spec.get("resources") or {}).get("requests") or (pod_spec.get("resources") or {}).get("limits"):
        groups = [pod_spec["resources"]]
    else:
        groups = [c.get("resources") or {} for c in (pod_spec.get("containers") or []) +
                  (pod_spec.get("initContainers") or [])]
    requests, limits, guaranteed = {}, {}, True
    for resources in groups:
        for name, value in (resources.get("requests") or {}).items():
            amount = quantity.parse("requests." + name, value)
            if name in QOS_RESOURCES and amount > 0:
                requests[name] = requests.get(name, 0) + amount
        found = set()
        for name, value in (resources.get("limits") or {}).items():
            amount = quantity.parse("limits." + name, value)
            if name in QOS_RESOURCES and amount > 0:
                found.add(name)
                limits[name] = limits.get(name, 0) + amount
        if not found.issuperset(QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed and all(limits.get(name) == amount for name, amount in requests.items()) \
            and len(requests) == len(limits):
        return GUARANTEED
    return BURSTABLE


def launcher_pod(view, pods):
    """The running virt-launcher pod of a VMI among the pods KubeVirt
    created for it; LimitRefusal when there is none. While a migration runs
    both pods are active: the one on the VMI's node serves the VM (the target
    gets the cap from a reconcile once it takes over)."""
    if view["phase"] != "Running":
        raise LimitRefusal("the VMI is %s, not Running: there is no virt-launcher pod to resize"
                           % (view["phase"] or "without a phase"))
    candidates = [pod for pod in pods
                  if (pod.get("metadata") or {}).get("uid") in view["active_pods"]
                  and not (pod.get("metadata") or {}).get("deletionTimestamp")
                  and (pod.get("status") or {}).get("phase") == "Running"]
    candidates.sort(key=lambda pod: (pod.get("spec") or {}).get("nodeName") != view["node"])
    if not candidates:
        raise LimitRefusal("no running virt-launcher pod of the VMI (active pods: %s; launcher pods found: %s)" % (
            ", ".join(sorted(view["active_pods"])) or "none",
            ", ".join("%s (%s)" % (p["metadata"].get("name"), (p.get("status") or {}).get("phase")) for p in pods)
            or "none"))
    if compute_container(candidates[0]) is None:
        raise LimitRefusal("virt-launcher pod %s has no %s container" % (candidates[0]["metadata"]["name"], COMPUTE))
    return candidates[0]


def cap_cpus(view):
    """The cap the brake keeps on the VM, in CPUs (its desired cap), or None:
    what kubevirt_vm_cpu_info reports and option `expected` is compared with."""
    if view["desired"] is None:
        return None
    try:
        return quantity.cpu("desired", view["desired"])
    except ValueRangeError:
        return None


def seen(view):
    """A VMI as a plan sees it: the cap and the time of its throttle record."""
    return {"cap_cpus": cap_cpus(view), "throttle_time": view["record"].time if view["record"] else None}
