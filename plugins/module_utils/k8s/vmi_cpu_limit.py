# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runtime CPU brake of a running KubeVirt VM: the CPU limit of its
virt-launcher pod's `compute` container, changed in place through the pod's
`resize` subresource. Pure: the API's JSON in, plans, refusals and Event
bodies out.

Three annotations on the VirtualMachineInstance carry the state, so that a
new launcher pod (live migration), which starts with the template's limit,
gets the cap again from a reconcile:
  <prefix>cpu-limit           the desired cap (a CPU quantity); desired state only
  <prefix>cpu-limit-applied   what was last written to which pod, and when
  <prefix>cpu-limit-throttle  the pod's limit before the first throttle, why, who, when
A restart replaces the VMI itself, so the owning VirtualMachine keeps a copy
of the desired cap and the throttle record; a reconcile brings them onto the
new VMI and applies the cap there.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans
from ansible_collections.overcommit.control.plugins.module_utils.domain import vm_class
from ansible_collections.overcommit.control.plugins.module_utils.domain.cpu import ValueRangeError, check_cap_brakes
from ansible_collections.overcommit.control.plugins.module_utils.k8s import events, metadata, quantity

THROTTLED, RESTORED, RECONCILED = "throttled", "restored", "reconciled"
STATES = (THROTTLED, RESTORED, RECONCILED)
DESIRED, APPLIED, RECORD, CLASS_LABEL = "cpu-limit", "cpu-limit-applied", "cpu-limit-throttle", "class"
COMPUTE = "compute"
LAUNCHER_SELECTOR = "kubevirt.io=virt-launcher"
CREATED_BY = "kubevirt.io/created-by"
# The API stores CPU in millicores: a finer cap would be rounded.
LEAST_CPUS = 0.001
# Resources that decide a pod's QoS class (Kubernetes' GetPodQOS).
QOS_RESOURCES = ("cpu", "memory")
GUARANTEED, BURSTABLE, BEST_EFFORT = "Guaranteed", "Burstable", "BestEffort"
REPORTING_CONTROLLER = "overcommit.control/kubevirt_vm_cpu_limit"
NOTE_LIMIT = events.NOTE_LIMIT


class LimitRefusal(Exception):
    """A cap this VMI cannot take now; says why."""


class ChangedSinceRead(Exception):
    """The VMI is no longer as the caller read it (option `expected`): it is
    left alone. seen: what it looks like now."""

    def __init__(self, message, seen):
        super(ChangedSinceRead, self).__init__(message)
        self.seen = seen


def check_request(params):
    """The task's options, validated before any API call; raises
    ValueRangeError naming the field."""
    state = params["state"]
    if state not in STATES:
        raise ValueRangeError("state", state, "one of %s" % ", ".join(STATES))
    if params.get("names") and not params.get("namespace"):
        raise ValueRangeError("namespace", None, "the namespace of the VMIs named in names")
    if state in (THROTTLED, RESTORED) and not (params.get("names") or params.get("label_selector")):
        raise ValueRangeError("names", params.get("names"), "at least one VMI name, or a label_selector, with "
                                                            "state=%s" % state)
    cpus = None
    if state == THROTTLED:
        if params.get("cpus") is None:
            raise ValueRangeError("cpus", None, "a CPU quantity such as 2 or 1500m, required with state=throttled")
        cpus = quantity.cpu("cpus", params["cpus"])
        if cpus < LEAST_CPUS - 1e-12:
            raise ValueRangeError("cpus", params["cpus"], "at least 1m (0.001 CPU)")
    elif params.get("cpus") is not None:
        raise ValueRangeError("cpus", params["cpus"], "nothing with state=%s (only state=throttled takes a cap)"
                              % state)
    if params["headroom"] < 0:
        raise ValueRangeError("headroom", params["headroom"], "0 or more CPUs above the vCPU count")
    if not 0 <= params["floor"] <= 1:
        raise ValueRangeError("floor", params["floor"], "0..1 (a fraction of the vCPUs)")
    prefix = metadata.check_prefix(params["prefix"])
    return {"expected": plans.check_expected("expected", params.get("expected"), "kubevirt_vm_cpu_info"),
            "state": state, "cpus": cpus, "cpus_text": params.get("cpus"), "headroom": float(params["headroom"]), "floor": float(params["floor"]),
            "force": bool(params.get("force")), "prefix": prefix,
            "keys": {"desired": prefix + DESIRED, "applied": prefix + APPLIED, "record": prefix + RECORD,
                     "class": prefix + CLASS_LABEL}}


def _json(text):
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


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
    """The desired cap and the throttle record (as written, and read) that
    a VMI or VirtualMachine carries."""
    return {"desired": annotations.get(keys["desired"]), "record_text": annotations.get(keys["record"]),
            "record": _json(annotations.get(keys["record"]))}


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
        "applied": _json(annotations.get(keys["applied"])),
        # None of the brake's annotations: a VMI made since the cap was set (a restart).
        "fresh": not any(keys[key] in annotations for key in ("desired", "applied", "record")),
        "vm": owner,
    })


def wanted_desired(view):
    """The desired cap text: the VMI's own, else, for a VMI a restart made,
    the copy its VirtualMachine kept. A VMI whose cap was lifted by hand
    does not take it back from the VM."""
    if view["desired"] is not None or not view["fresh"]:
        return view["desired"]
    return (view["vm"] or {}).get("desired")


def stale_vm_copy(view):
    """Whether the VirtualMachine still keeps a cap the VMI no longer has
    (lifted by hand): it would come back after a restart."""
    return view["vm"] is not None and view["vm"]["desired"] is not None and wanted_desired(view) is None


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


def pod_view(pod):
    """The launcher pod's compute CPU, QoS class and any pending resize."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    resources = (compute_container(pod) or {}).get("resources") or {}
    pending = [c for c in status.get("conditions") or [] if c.get("type") == "PodResizePending"]
    return {
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "node": (pod.get("spec") or {}).get("nodeName"),
        "cpu_request": _cpu_or_none("requests.cpu", (resources.get("requests") or {}).get("cpu")),
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


def with_compute_limit(pod, cpus):
    """The pod's spec with the compute container's CPU limit set to `cpus`."""
    spec = copy.deepcopy(pod.get("spec") or {})
    for container in spec.get("containers") or []:
        if container.get("name") == COMPUTE:
            resources = container.setdefault("resources", {})
            resources.setdefault("limits", {})["cpu"] = quantity.format_cpu(cpus)
    return spec


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


def check_class(view, cpus, request, forced=False):
    """Refuses caps the VM's class forbids. Dedicated CPU placement cannot be
    resized even when forced: its pod is Guaranteed with exclusive CPUs."""
    if view["dedicated_placement"]:
        raise LimitRefusal("the VM has dedicated CPUs (dedicatedCpuPlacement): its launcher pod is Guaranteed with "
                           "exclusive CPUs and cannot be resized")
    declared, why = vm_class.resolve_class(view["declared_class"], realtime=view["realtime"])
    try:
        vm_class.check_throttle(declared, why, view["vcpus"], cpus, request["floor"], request["force"] or forced)
    except vm_class.Refusal as exc:
        raise LimitRefusal(str(exc))


def check_resize(pod, cpus):
    """Refuses a compute CPU limit the API server would reject: one that
    changes the pod's QoS class (any change of a Guaranteed pod's limit), or
    one under the container's CPU request."""
    current = pod_view(pod)
    after = qos_class(with_compute_limit(pod, cpus))
    if after != current["qos"]:
        raise LimitRefusal("a compute CPU limit of %s would change pod %s's QoS class from %s to %s, which an "
                           "in-place resize may not do" % (quantity.format_cpu(cpus), current["name"],
                                                           current["qos"], after))
    if current["cpu_request"] is not None and cpus + 1e-9 < current["cpu_request"]:
        raise LimitRefusal("a limit of %s CPU is under the compute container's CPU request of %s: Kubernetes "
                           "requires limit >= request" % (quantity.format_cpu(cpus),
                                                          quantity.format_cpu(current["cpu_request"])))


def resize_patch(pod, cpus):
    """The strategic merge patch for the pod's resize subresource, or None
    when the compute limit already is `cpus`."""
    current = pod_view(pod)
    if current["cpu_limit"] is not None and abs(current["cpu_limit"] - cpus) < 1e-9:
        return None
    check_resize(pod, cpus)
    return {"spec": {"containers": [{"name": COMPUTE, "resources": {"limits": {"cpu": quantity.format_cpu(cpus)}}}]}}


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
    return {"cap_cpus": cap_cpus(view), "throttle_time": (view["record"] or {}).get("time")}


def check_unchanged(view, request):
    """Raises ChangedSinceRead when the caller gave what it read of this VMI
    (option `expected`) and the VMI no longer is so."""
    expected = request.get("expected") or {}
    if view["name"] not in expected:
        return
    now = seen(view)
    why = plans.changed_since_read(view["name"], expected[view["name"]], now)
    if why:
        raise ChangedSinceRead(why, now)


def desired_cpus(view):
    """The desired cap from the annotation, in CPUs (None when absent)."""
    desired = wanted_desired(view)
    if desired is None:
        return None
    try:
        cpus = quantity.cpu("annotation", desired)
    except ValueRangeError:
        cpus = 0
    if cpus < LEAST_CPUS - 1e-12:
        raise LimitRefusal("the desired cap in the annotation is %r, not a CPU quantity of at least 1m" % desired)
    return cpus


def restore_cpus(view, request):
    """What restore sets the limit to: the limit recorded before the first
    throttle; else (there was none, and a limit cannot be removed) the VM's
    vCPUs plus headroom."""
    previous = (earlier_record(view)[1] or {}).get("previous")
    if previous is not None:
        return quantity.cpu("previous", previous)
    return view["vcpus"] + request["headroom"]


def target(view, pod, request):
    """(CPUs the compute limit should have, or None: nothing to set; the
    action). Raises LimitRefusal."""
    if request["state"] == RESTORED:
        if wanted_desired(view) is None and not earlier_record(view)[0] and not stale_vm_copy(view):
            return None, None
        limit = pod_view(pod)["cpu_limit"] if pod is not None else None
        if limit is None:
            # No pod, or a new pod without a limit: nothing of the cap is left to lift.
            return None, "restore"
        cpus = restore_cpus(view, request)
        if (earlier_record(view)[1] or {}).get("previous") is None and limit + 1e-9 >= cpus:
            # Without a recorded limit restore only ever raises one.
            return None, "restore"
        check_resize(pod, cpus)
        return cpus, "restore"
    cpus = request["cpus"] if request["state"] == THROTTLED else desired_cpus(view)
    if cpus is None:
        return None, None
    check_class(view, cpus, request, forced=bool((earlier_record(view)[1] or {}).get("forced")))
    if request["state"] == THROTTLED:
        # A limit at or above the vCPU count is no brake: refused before anything is written.
        check_cap_brakes("cpus", request.get("cpus_text", cpus), cpus, view["vcpus"])
    if pod is None:
        raise LimitRefusal("no running virt-launcher pod")
    check_resize(pod, cpus)
    return cpus, "throttle" if request["state"] == THROTTLED else "reconcile"


def desire_patch(view, pod, cpus, request, fields):
    """The VMI annotations of a throttle, or of a reconcile of a cap without
    a record yet or that a restart left on the VirtualMachine only: the
    desired cap and the record of the limit before the first throttle. None
    when both are already there."""
    keys, desired = request["keys"], quantity.format_cpu(cpus)
    annotations = {}
    # A reconcile takes a cap onto the VMI only from the VM (the VMI's own is there already).
    if (request["state"] == THROTTLED or view["desired"] is None) and \
            (view["desired"] is None or not quantity.same_cpu(view["desired"], desired)):
        annotations[keys["desired"]] = desired
    if not has_record(view) or (annotations and request["state"] == THROTTLED):
        recorded, earlier = earlier_record(view)
        if request["state"] == RECONCILED and recorded and not has_record(view):
            annotations[keys["record"]] = view["vm"]["record_text"]
        else:
            record = dict((k, v) for k, v in fields.items() if v is not None)
            # The limit before the first throttle survives later throttles and restarts.
            record["previous"] = (earlier or {}).get("previous") if recorded else pod_view(pod)["limit_text"]
            if request["force"] or (earlier or {}).get("forced"):
                record["forced"] = True
            annotations[keys["record"]] = json.dumps(record, sort_keys=True)
    return {"metadata": {"annotations": annotations}} if annotations else None


def _same_record(left, right):
    if left is None or right is None:
        return left is right
    return left == right or (_json(left) is not None and _json(left) == _json(right))


def vm_patch(vm, request, desired, record_text):
    """The VirtualMachine annotations that make its copy say `desired` and
    `record_text` (None: no cap, no record), or None when it already does.
    vm: vm_view of the VirtualMachine."""
    keys = request["keys"]
    annotations = {}
    if not (desired == vm["desired"] or (desired is not None and vm["desired"] is not None
                                         and quantity.same_cpu(vm["desired"], desired))):
        annotations[keys["desired"]] = desired
    if not _same_record(record_text, vm["record_text"]):
        annotations[keys["record"]] = record_text
    return {"metadata": {"annotations": annotations}} if annotations else None


def applied_record(pod, cpus, time):
    meta = pod.get("metadata") or {}
    return {"cpus": quantity.format_cpu(cpus), "pod": meta.get("name"), "podUID": meta.get("uid"), "time": time}


def applied_patch(view, pod, cpus, request, time, restore=False):
    """The VMI annotations after the pod got `cpus` (restore also drops the
    desired cap and the record). None when they already say so."""
    keys = request["keys"]
    annotations = {}
    if pod is not None and cpus is not None:
        applied = view["applied"] or {}
        if not (applied.get("podUID") == pod["metadata"].get("uid") and applied.get("cpus") is not None
                and quantity.same_cpu(applied["cpus"], quantity.format_cpu(cpus))):
            annotations[keys["applied"]] = json.dumps(applied_record(pod, cpus, time), sort_keys=True)
    if restore:
        for key, present in ((keys["desired"], view["desired"] is not None), (keys["record"], has_record(view))):
            if present:
                annotations[key] = None
    return {"metadata": {"annotations": annotations}} if annotations else None


def state_view(view, pod):
    """Before/after as people read them in results and --diff."""
    current = pod_view(pod) if pod is not None else None
    return {"desired": view["desired"], "applied": view["applied"], "throttle": view["record"],
            "pod": current["name"] if current else None,
            "compute_cpu_limit": current["limit_text"] if current else None,
            "vm_desired": (view["vm"] or {}).get("desired")}


def after_view(before, view, pod, cpus, request, desire, applied, kept=None):
    """`before` with what the patches wrote (kept: the VirtualMachine's)."""
    after = copy.deepcopy(before)
    keys = request["keys"]
    for patch in (desire, applied):
        for key, value in ((patch or {}).get("metadata", {}).get("annotations") or {}).items():
            field = {keys["desired"]: "desired", keys["applied"]: "applied", keys["record"]: "throttle"}[key]
            after[field] = value if field == "desired" or value is None else json.loads(value)
    kept_annotations = (kept or {}).get("metadata", {}).get("annotations") or {}
    if keys["desired"] in kept_annotations:
        after["vm_desired"] = kept_annotations[keys["desired"]]
    if pod is not None and cpus is not None:
        after["compute_cpu_limit"] = before["compute_cpu_limit"] if (
            before["compute_cpu_limit"] is not None and quantity.same_cpu(before["compute_cpu_limit"], cpus)) \
            else quantity.format_cpu(cpus)
    return after


def event(view, pod, event_type, reason, action, note, time, instance, suffix):
    """An events.k8s.io/v1 Event about the VMI (or, when none runs, the
    VirtualMachine) and its launcher pod (events.event)."""
    regarding = {"apiVersion": "kubevirt.io/v1", "kind": view["kind"], "namespace": view["namespace"],
                 "name": view["vmi"], "uid": view["uid"]}
    related = None
    if pod is not None:
        related = {"apiVersion": "v1", "kind": "Pod", "namespace": view["namespace"],
                   "name": pod["metadata"].get("name"), "uid": pod["metadata"].get("uid")}
    return events.event(regarding, event_type, reason, action, note, time, REPORTING_CONTROLLER, instance, suffix,
                        related=related)


def limit_text(limit, vcpus=None):
    """A compute CPU limit (quantity text, None for none) as people read it;
    a limit at or above the vCPU count brakes nothing: unlimited, with the
    limit (restore raises to one, as a limit cannot be removed)."""
    if limit is None:
        return fleet.cpus_text(None)
    cpus = quantity.cpu("compute_cpu_limit", limit)
    if vcpus and cpus + 1e-9 >= vcpus:
        return "unlimited: limit %s on %d vCPU%s" % (fleet.cpus_text(cpus), vcpus, "" if vcpus == 1 else "s")
    return fleet.cpus_text(cpus)


def report_line(result, state, check_mode=False):
    """One VMI's line of the task's report (fleet.cap_line): the compute CPU
    limit now in force and what it replaced. A VirtualMachine that is not
    running, or a VMI without a launcher pod, says what happened to its cap."""
    before, after = result.get("before") or {}, result.get("after") or {}
    restore = state == RESTORED
    if result.get("failed") or result.get("skipped") or not after:
        return fleet.cap_line(result, restore, None, None, check_mode)
    if "compute_cpu_limit" not in before or before.get("pod") is None:
        where = "the VirtualMachine is not running" if "compute_cpu_limit" not in before else "no running launcher pod"
        if result.get("changed"):
            return "%s: %scap lifted (%s; was %s)" % (result["name"], "would be " if check_mode else "", where,
                                                      limit_text(before.get("desired") or before.get("vm_desired")))
        msg = result.get("msg") or "unchanged"
        return "%s: %s" % (result["name"], msg if msg == where else "%s (%s)" % (msg, where))
    vcpus = result.get("vcpus")
    line = fleet.cap_line(result, restore, limit_text(after.get("compute_cpu_limit"), vcpus),
                          limit_text(before.get("compute_cpu_limit"), vcpus), check_mode)
    if result.get("resize_pending"):
        line += " (resize pending: %s)" % (result["resize_pending"].get("reason") or "no reason given")
    return line
