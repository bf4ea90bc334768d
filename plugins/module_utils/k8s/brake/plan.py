# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning a change of the KubeVirt CPU brake: the compute CPU limit a VMI's
launcher should get (or the refusal, with the reason), and the patches that
make the VMI's annotations, its VirtualMachine's copy and the pod's resize
say so. Pure: views (state.py) in, patches out; the runner
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


def with_compute_limit(pod, cpus):
    """The pod's spec with the compute container's CPU limit set to `cpus`."""
    spec = copy.deepcopy(pod.get("spec") or {})
    for container in spec.get("containers") or []:
        if container.get("name") == COMPUTE:
            resources = container.setdefault("resources", {})
            resources.setdefault("limits", {})["cpu"] = quantity.format_cpu(cpus)
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


def desired_cpus(view, key="the annotation"):
    """The desired cap from the annotation `key`, in CPUs (None when absent)."""
    desired = wanted_desired(view)
    if desired is None:
        return None
    try:
        cpus = quantity.cpu("annotation", desired)
    except ValueRangeError:
        cpus = 0
    if cpus < LEAST_CPUS - 1e-12:
        raise LimitRefusal("the desired cap in annotation %s is %s, not a CPU quantity of at least 1m"
                           % (key, _shown_text(desired)))
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


def target(view, pod, request):
    """(CPUs the compute limit should have, or None: nothing to set; the
    action). Raises LimitRefusal."""
    check_records(view, request)
    if request["state"] == RESTORED:
        if wanted_desired(view) is None and not earlier_record(view)[0] and not stale_vm_copy(view):
            return None, None
        limit = pod_view(pod)["cpu_limit"] if pod is not None else None
        if limit is None:
            # No pod, or a new pod without a limit: nothing of the cap is left to lift.
            return None, "restore"
        cpus = restore_cpus(view, request)
        earlier = earlier_record(view)[1]
        if (earlier.previous if earlier else None) is None and limit + 1e-9 >= cpus:
            # Without a recorded limit restore only ever raises one.
            return None, "restore"
        check_resize(pod, cpus)
        return cpus, "restore"
    cpus = request["cpus"] if request["state"] == THROTTLED else desired_cpus(view, request["keys"]["desired"])
    if cpus is None:
        return None, None
    earlier = earlier_record(view)[1]
    check_class(view, cpus, request, forced=bool(earlier and earlier.forced))
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
            record = ThrottleRecord(**dict((k, v) for k, v in fields.items() if v is not None))
            # The limit before the first throttle survives later throttles and restarts.
            record.previous = (earlier.previous if earlier else None) if recorded else pod_view(pod)["limit_text"]
            record.forced = bool(request["force"] or (earlier and earlier.forced)) or None
            annotations[keys["record"]] = record.text()
    return {"metadata": {"annotations": annotations}} if annotations else None


def vm_patch(vm, request, desired, record_text):
    """The VirtualMachine annotations that make its copy say `desired` and
    `record_text` (None: no cap, no record), or None when it already does.
    vm: vm_view of the VirtualMachine."""
    keys = request["keys"]
    annotations = {}
    if not (desired == vm["desired"] or (desired is not None and vm["desired"] is not None
                                         and quantity.same_cpu(vm["desired"], desired))):
        annotations[keys["desired"]] = desired
    if not same_record_text(record_text, vm["record_text"]):
        annotations[keys["record"]] = record_text
    return {"metadata": {"annotations": annotations}} if annotations else None


def applied_patch(view, pod, cpus, request, time, restore=False):
    """The VMI annotations after the pod got `cpus` (restore also drops the
    desired cap and the record). None when they already say so."""
    keys = request["keys"]
    annotations = {}
    if pod is not None and cpus is not None:
        applied = view["applied"]
        if not (applied is not None and applied.pod_uid == pod["metadata"].get("uid") and applied.cpus is not None
                and quantity.same_cpu(applied.cpus, quantity.format_cpu(cpus))):
            meta = pod.get("metadata") or {}
            annotations[keys["applied"]] = AppliedRecord(cpus=quantity.format_cpu(cpus), pod=meta.get("name"),
                                                         pod_uid=meta.get("uid"), time=time).text()
    if restore:
        for key, present in ((keys["desired"], view["desired"] is not None), (keys["record"], has_record(view))):
            if present:
                annotations[key] = None
    return {"metadata": {"annotations": annotations}} if annotations else None
