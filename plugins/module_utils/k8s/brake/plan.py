# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning a change of the KubeVirt CPU brake: the compute CPU limit and
request a VMI's launcher should get (or the refusal, with the reason), and
the patches that make the VMI's annotations, its VirtualMachine's copy and
the pod's resize say so. Pure: views (state.py) in, patches out; the runner
(runner.py) writes them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal, ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans
from ansible_collections.overcommit.control.plugins.module_utils.domain import vm_class
from ansible_collections.overcommit.control.plugins.module_utils.domain.cpu import check_cap_brakes
from ansible_collections.overcommit.control.plugins.module_utils.k8s import quantity
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.records import (
    AppliedRecord, ThrottleRecord, same_record_text)
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.request import (
    LEAST_CPUS, RECONCILED, RESTORED, THROTTLED)
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.state import (
    COMPUTE, LimitRefusal, earlier_record, has_record, pod_view, qos_class, seen, stale_vm_copy, wanted_desired)


class ChangedSinceRead(ObjectRefusal):
    """The VMI is no longer as the caller read it (option `expected`): it is
    left alone. seen: what it looks like now."""

    def __init__(self, message, seen):
        super(ChangedSinceRead, self).__init__(message)
        self.seen = seen

    def outcome(self):
        """Not a failure: another runner acted on it first."""
        return {"conflict": True, "msg": str(self), "seen": self.seen}


def with_compute_resources(pod, cpus, request=None):
    """The pod's spec with the compute container's CPU limit set to `cpus`
    and its CPU request to `request` (None: as it is)."""
    spec = copy.deepcopy(pod.get("spec") or {})
    for container in spec.get("containers") or []:
        if container.get("name") == COMPUTE:
            resources = container.setdefault("resources", {})
            for kind, value in (("limits", cpus), ("requests", request)):
                if value is not None:
                    resources.setdefault(kind, {})["cpu"] = quantity.format_cpu(value)
    return spec


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


def _change_text(cpus, request):
    return " and ".join(text for text in (
        "a compute CPU limit of %s" % quantity.format_cpu(cpus) if cpus is not None else None,
        "a compute CPU request of %s" % quantity.format_cpu(request) if request is not None else None) if text)


def check_resize(pod, cpus, request=None):
    """Refuses a compute CPU limit (and request; None: unchanged) the API
    server would reject: one that changes the pod's QoS class (any change of
    a Guaranteed pod's), or a limit under the container's CPU request."""
    current = pod_view(pod)
    after = qos_class(with_compute_resources(pod, cpus, request))
    if after != current["qos"]:
        raise LimitRefusal("%s would change pod %s's QoS class from %s to %s, which an in-place resize may not do"
                           % (_change_text(cpus, request), current["name"], current["qos"], after))
    limit = cpus if cpus is not None else current["cpu_limit"]
    floor = request if request is not None else current["cpu_request"]
    if limit is not None and floor is not None and limit + 1e-9 < floor:
        raise LimitRefusal("a limit of %s CPU is under the compute container's CPU request of %s: Kubernetes "
                           "requires limit >= request" % (quantity.format_cpu(limit), quantity.format_cpu(floor)))


def resize_patch(pod, cpus, request=None):
    """The strategic merge patch for the pod's resize subresource, or None
    when the compute limit already is `cpus` and the request `request`
    (None: not changed)."""
    current = pod_view(pod)
    resources = {}
    if cpus is not None and not (current["cpu_limit"] is not None and abs(current["cpu_limit"] - cpus) < 1e-9):
        resources["limits"] = {"cpu": quantity.format_cpu(cpus)}
    if request is not None and not (current["cpu_request"] is not None
                                    and abs(current["cpu_request"] - request) < 1e-9):
        resources["requests"] = {"cpu": quantity.format_cpu(request)}
    if not resources:
        return None
    check_resize(pod, cpus, request)
    return {"spec": {"containers": [{"name": COMPUTE, "resources": resources}]}}


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


def _shown_text(text, most=40):
    return repr(text) if len(text) <= most else "%r... (%d characters)" % (text[:most], len(text))


def desired_cpus(view, key="the annotation", field="desired"):
    """The desired cap (field desired_request: the desired CPU request) from
    the annotation `key`, in CPUs (None when absent)."""
    desired = wanted_desired(view, field)
    if desired is None:
        return None
    try:
        cpus = quantity.cpu("annotation", desired)
    except ValueRangeError:
        cpus = 0
    if cpus < LEAST_CPUS - 1e-12:
        raise LimitRefusal("the desired %s in annotation %s is %s, not a CPU quantity of at least 1m"
                           % ("cap" if field == "desired" else "CPU request", key, _shown_text(desired)))
    return cpus


def check_records(view, request):
    """Refuses a VMI whose throttle record (or its VirtualMachine's copy) is
    there but cannot be read (edited by hand): a throttle would overwrite
    the limit to restore, a restore would not know it. Nothing is changed."""
    key = request["keys"]["record"]
    for holder, state in (("VMI", view), ("VirtualMachine", view["vm"])):
        why = ThrottleRecord.unreadable(state["record_text"]) if state is not None else None
        if why:
            # A newer record is kept for the collection that wrote it; a broken one is the editor's to fix.
            advice = "" if "newer overcommit.control" in why else "; correct or remove the annotation"
            raise LimitRefusal("the throttle record in the %s's annotation %s cannot be used (%s): nothing was "
                               "changed%s" % (holder, key, why, advice))


def restore_cpus(view, request):
    """What restore sets the limit to: the limit recorded before the first
    throttle; else (there was none, and a limit cannot be removed) the VM's
    vCPUs plus headroom."""
    earlier = earlier_record(view)[1]
    previous = earlier.previous if earlier else None
    if previous is not None:
        return quantity.cpu("previous", previous)
    return view["vcpus"] + request["headroom"]


def restore_target(view, pod, request):
    """(the limit, the request restore sets, or None for each: nothing to
    set; the action)."""
    if wanted_desired(view) is None and wanted_desired(view, "desired_request") is None \
            and not earlier_record(view)[0] and not stale_vm_copy(view):
        return None, None, None
    if pod is None:
        return None, None, "restore"
    current = pod_view(pod)
    earlier = earlier_record(view)[1]
    cpus = None
    # No limit on the pod (a new pod without one): nothing of the cap is left to lift.
    if current["cpu_limit"] is not None:
        cpus = restore_cpus(view, request)
        if (earlier.previous if earlier else None) is None and current["cpu_limit"] + 1e-9 >= cpus:
            # Without a recorded limit restore only ever raises one.
            cpus = None
    previous_request = earlier.previous_request if earlier else None
    cpu_request = None
    if previous_request is not None and not quantity.same_cpu(previous_request, current["request_text"]):
        cpu_request = quantity.cpu("previous_request", previous_request)
    if cpus is not None or cpu_request is not None:
        check_resize(pod, cpus, cpu_request)
    return cpus, cpu_request, "restore"


def check_weight(pod):
    """Refuses a demoted CPU request on a pod without one (dedicated CPU
    placement is check_class's to refuse)."""
    if pod is not None and pod_view(pod)["cpu_request"] is None:
        raise LimitRefusal("the compute container has no CPU request: its CPU weight already is the least, and a "
                           "request added in place would change the pod's QoS class")


def check_against_desired(view, request, cpus, cpu_request):
    """Refuses a throttle of one lever that the brake's other desired lever
    (a cap or request a new pod has not got yet) would contradict: every
    later reconcile would be refused with limit under request."""
    if request["state"] != THROTTLED:
        return
    limit = cpus if cpus is not None else desired_cpus(view, request["keys"]["desired"])
    floor = cpu_request if cpu_request is not None else \
        desired_cpus(view, request["keys"]["desired_request"], "desired_request")
    if limit is not None and floor is not None and limit + 1e-9 < floor:
        raise LimitRefusal("a cap of %s would be under the CPU request of %s the brake keeps: Kubernetes requires "
                           "limit >= request" % (quantity.format_cpu(limit), quantity.format_cpu(floor)))


def target(view, pod, request):
    """(CPUs the compute limit should have, CPUs its request should have -
    None for each: nothing to set; the action). Raises LimitRefusal."""
    check_records(view, request)
    if request["state"] == RESTORED:
        return restore_target(view, pod, request)
    if request["state"] == THROTTLED:
        cpus, cpu_request = request["cpus"], request["cpu_request"]
    else:
        keys = request["keys"]
        cpus = desired_cpus(view, keys["desired"])
        cpu_request = desired_cpus(view, keys["desired_request"], "desired_request")
    if cpus is None and cpu_request is None:
        return None, None, None
    earlier = earlier_record(view)[1]
    # The class's guard holds for a demoted weight as for a cap (check_class with no cap checks the class only).
    check_class(view, cpus, request, forced=bool(earlier and earlier.forced))
    if cpus is not None and request["state"] == THROTTLED:
        # A limit at or above the vCPU count is no brake: refused before anything is written.
        check_cap_brakes("cpus", request.get("cpus_text", cpus), cpus, view["vcpus"])
    if cpu_request is not None:
        check_weight(pod)
    check_against_desired(view, request, cpus, cpu_request)
    if pod is None:
        raise LimitRefusal("no running virt-launcher pod")
    check_resize(pod, cpus, cpu_request)
    return cpus, cpu_request, "throttle" if request["state"] == THROTTLED else "reconcile"


def desire_patch(view, pod, cpus, request, fields, cpu_request=None):
    """The VMI annotations of a throttle, or of a reconcile of a cap without
    a record yet or that a restart left on the VirtualMachine only: the
    desired cap and CPU request and the record of the limit and request
    before the first throttle. None when they are already there."""
    keys = request["keys"]
    annotations = {}
    for value, field in ((cpus, "desired"), (cpu_request, "desired_request")):
        if value is None:
            if view[field] is None and wanted_desired(view, field) is not None:
                # A VMI a restart made takes the lever this task leaves alone from its VM's copy,
                # which the VM keeps only as long as the VMI says it too.
                annotations[keys[field]] = wanted_desired(view, field)
            continue
        desired = quantity.format_cpu(value)
        # A reconcile takes a cap onto the VMI only from the VM (the VMI's own is there already).
        if (request["state"] == THROTTLED or view[field] is None) and \
                (view[field] is None or not quantity.same_cpu(view[field], desired)):
            annotations[keys[field]] = desired
    if not has_record(view) or (annotations and request["state"] == THROTTLED):
        recorded, earlier = earlier_record(view)
        if request["state"] == RECONCILED and recorded and not has_record(view):
            annotations[keys["record"]] = view["vm"]["record_text"]
        else:
            record = ThrottleRecord(**dict((k, v) for k, v in fields.items() if v is not None))
            # The limit and request before the first throttle survive later throttles and restarts.
            record.previous = (earlier.previous if earlier else None) if recorded else pod_view(pod)["limit_text"]
            # The request before the first demotion (a record of caps only keeps none: the pod's request
            # is still its own then); a record that keeps one is schema 2 (records.ThrottleRecord).
            record.previous_request = earlier.previous_request if recorded and earlier and \
                earlier.previous_request is not None else \
                pod_view(pod)["request_text"] if cpu_request is not None or wanted_desired(view, "desired_request") \
                else None
            record.forced = bool(request["force"] or (earlier and earlier.forced)) or None
            annotations[keys["record"]] = record.text()
    return {"metadata": {"annotations": annotations}} if annotations else None


def vm_patch(vm, request, desired, record_text, desired_request=None):
    """The VirtualMachine annotations that make its copy say `desired`,
    `desired_request` and `record_text` (None: no cap, no request, no
    record), or None when it already does. vm: vm_view of the
    VirtualMachine."""
    keys = request["keys"]
    annotations = {}
    for value, field in ((desired, "desired"), (desired_request, "desired_request")):
        if not (value == vm[field] or (value is not None and vm[field] is not None
                                       and quantity.same_cpu(vm[field], value))):
            annotations[keys[field]] = value
    if not same_record_text(record_text, vm["record_text"]):
        annotations[keys["record"]] = record_text
    return {"metadata": {"annotations": annotations}} if annotations else None


def _same_applied(applied, pod, cpus, cpu_request):
    def same(recorded, value):
        return value is None and recorded is None or value is not None and recorded is not None and \
            quantity.same_cpu(recorded, quantity.format_cpu(value))
    return applied is not None and applied.pod_uid == pod["metadata"].get("uid") and \
        same(applied.cpus, cpus) and same(applied.request, cpu_request)


def applied_patch(view, pod, cpus, request, time, restore=False, cpu_request=None):
    """The VMI annotations after the pod got the limit `cpus` and the
    request `cpu_request` (restore also drops the desired cap and request
    and the record). None when they already say so."""
    keys = request["keys"]
    annotations = {}
    applied = view["applied"]
    if pod is not None and applied is not None and applied.pod_uid == pod["metadata"].get("uid") and not restore:
        # What this task left alone on the same pod is still in force there.
        cpus = cpus if cpus is not None or applied.cpus is None else quantity.cpu("applied", applied.cpus)
        cpu_request = cpu_request if cpu_request is not None or applied.request is None else \
            quantity.cpu("applied", applied.request)
    if pod is not None and (cpus is not None or cpu_request is not None) and \
            not _same_applied(applied, pod, cpus, cpu_request):
        meta = pod.get("metadata") or {}
        annotations[keys["applied"]] = AppliedRecord(
            cpus=quantity.format_cpu(cpus) if cpus is not None else None,
            request=quantity.format_cpu(cpu_request) if cpu_request is not None else None,
            pod=meta.get("name"), pod_uid=meta.get("uid"), time=time).text()
    if restore:
        for key, present in ((keys["desired"], view["desired"] is not None),
                             (keys["desired_request"], view["desired_request"] is not None),
                             (keys["record"], has_record(view))):
            if present:
                annotations[key] = None
    return {"metadata": {"annotations": annotations}} if annotations else None
