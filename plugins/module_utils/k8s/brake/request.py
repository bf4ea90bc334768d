# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runtime CPU brake of a running KubeVirt VM: the CPU limit of its
virt-launcher pod's `compute` container, changed in place through the pod's
`resize` subresource. This module is the task's request (its options,
checked) and its report (before/after, Events, one line per VMI); reading
the state is state.py, planning the change plan.py, writing it runner.py
(with reader.py), the records' types records.py. Pure.

The brake's second lever is the compute container's CPU request, which the
kubelet turns into the container's cgroup CPU weight: a demoted request
(the closed loop's weight rung) makes the VM yield to the others when the
node is full and wastes no idle CPU.

Four annotations on the VirtualMachineInstance carry the state, so that a
new launcher pod (live migration), which starts with the template's
resources, gets the brake again from a reconcile:
  <prefix>cpu-limit           the desired cap (a CPU quantity); desired state only
  <prefix>cpu-request         the desired (demoted) CPU request; desired state only
  <prefix>cpu-limit-applied   what was last written to which pod, and when
  <prefix>cpu-limit-throttle  the pod's limit and request before the first throttle, why, who, when
A restart replaces the VMI itself, so the owning VirtualMachine keeps a copy
of the desired cap and the throttle record; a reconcile brings them onto the
new VMI and applies the cap there.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import cpu
from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans
from ansible_collections.overcommit.control.plugins.module_utils.k8s import events, metadata, quantity
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.records import (
    AppliedRecord, ThrottleRecord, shown)
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.state import (
    NODE_APPLIED, NODE_PENDING, node_text, pod_view)

THROTTLED, RESTORED, RECONCILED = "throttled", "restored", "reconciled"
STATES = (THROTTLED, RESTORED, RECONCILED)
DESIRED, DESIRED_REQUEST, APPLIED, RECORD, CLASS_LABEL = (
    "cpu-limit", "cpu-request", "cpu-limit-applied", "cpu-limit-throttle", "class")
# The API stores CPU in millicores: a finer cap would be rounded.
LEAST_CPUS = 0.001
REPORTING_CONTROLLER = "overcommit.control/kubevirt_vm_cpu_limit"
NOTE_LIMIT = events.NOTE_LIMIT
# How long option `wait` waits by default, and at most, for the nodes.
DEFAULT_WAIT_TIMEOUT, LONGEST_WAIT = 60, 3600


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
    cpus = cpu_request = None
    if state == THROTTLED:
        if params.get("cpus") is None and params.get("cpu_request") is None:
            raise ValueRangeError("cpus", None, "a CPU quantity such as 2 or 1500m, required with state=throttled "
                                                "unless cpu_request is given")
        if params.get("cpus") is not None:
            cpus = _least_cpu("cpus", params["cpus"])
        if params.get("cpu_request") is not None:
            cpu_request = _least_cpu("cpu_request", params["cpu_request"])
        if cpus is not None and cpu_request is not None and cpu_request > cpus + 1e-9:
            raise ValueRangeError("cpu_request", params["cpu_request"], "at most the cap cpus=%s (Kubernetes "
                                                                        "requires limit >= request)" % params["cpus"])
    else:
        for field, what in (("cpus", "a cap"), ("cpu_request", "a CPU request")):
            if params.get(field) is not None:
                raise ValueRangeError(field, params[field], "nothing with state=%s (only state=throttled takes %s)"
                                      % (state, what))
    if params["headroom"] < 0:
        raise ValueRangeError("headroom", params["headroom"], "0 or more CPUs above the vCPU count")
    if not 0 <= params["floor"] <= 1:
        raise ValueRangeError("floor", params["floor"], "0..1 (a fraction of the vCPUs)")
    wait_timeout = params.get("wait_timeout", DEFAULT_WAIT_TIMEOUT)
    if wait_timeout is None or not 0 < wait_timeout <= LONGEST_WAIT:
        raise ValueRangeError("wait_timeout", wait_timeout, "1..%d seconds" % LONGEST_WAIT)
    prefix = metadata.check_prefix(params["prefix"])
    return {"namespace": params.get("namespace"), "names": params.get("names") or [],
            "label_selector": params.get("label_selector"),
            "expected": plans.check_expected("expected", params.get("expected"), "kubevirt_vm_cpu_info"),
            "state": state, "cpus": cpus, "cpus_text": params.get("cpus"), "cpu_request": cpu_request,
            "headroom": float(params["headroom"]), "floor": float(params["floor"]),
            "force": bool(params.get("force")), "prefix": prefix,
            "wait": bool(params.get("wait")), "wait_timeout": wait_timeout,
            "keys": {"desired": prefix + DESIRED, "desired_request": prefix + DESIRED_REQUEST,
                     "applied": prefix + APPLIED, "record": prefix + RECORD, "class": prefix + CLASS_LABEL}}


def _least_cpu(field, text):
    """A CPU quantity of at least 1m, in CPUs."""
    cpus = quantity.cpu(field, text)
    if cpus < LEAST_CPUS - 1e-12:
        raise ValueRangeError(field, text, "at least 1m (0.001 CPU)")
    return cpus


def state_view(view, pod):
    """Before/after as people read them in results and --diff."""
    current = pod_view(pod) if pod is not None else None
    return {"desired": view["desired"], "desired_request": view["desired_request"],
            "applied": shown(view["applied"]), "throttle": shown(view["record"]),
            "pod": current["name"] if current else None,
            "compute_cpu_limit": current["limit_text"] if current else None,
            "compute_cpu_request": current["request_text"] if current else None,
            "vm_desired": (view["vm"] or {}).get("desired"),
            "vm_desired_request": (view["vm"] or {}).get("desired_request")}


def after_view(before, view, pod, cpus, request, desire, applied, kept=None, cpu_request=None):
    """`before` with what the patches wrote (kept: the VirtualMachine's)."""
    after = copy.deepcopy(before)
    keys = request["keys"]
    for patch in (desire, applied):
        for key, value in ((patch or {}).get("metadata", {}).get("annotations") or {}).items():
            field = {keys["desired"]: "desired", keys["desired_request"]: "desired_request",
                     keys["applied"]: "applied", keys["record"]: "throttle"}[key]
            record_type = {"applied": AppliedRecord, "throttle": ThrottleRecord}.get(field)
            after[field] = value if record_type is None or value is None else shown(record_type.parse(value))
    kept_annotations = (kept or {}).get("metadata", {}).get("annotations") or {}
    for key, field in ((keys["desired"], "vm_desired"), (keys["desired_request"], "vm_desired_request")):
        if key in kept_annotations:
            after[field] = kept_annotations[key]
    for value, field in ((cpus, "compute_cpu_limit"), (cpu_request, "compute_cpu_request")):
        if pod is not None and value is not None:
            after[field] = before[field] if (
                before[field] is not None and quantity.same_cpu(before[field], value)) else quantity.format_cpu(value)
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
        return cpu.cpus_text(None)
    cpus = quantity.cpu("compute_cpu_limit", limit)
    if vcpus and cpus + 1e-9 >= vcpus:
        return "unlimited: limit %s on %d vCPU%s" % (cpu.cpus_text(cpus), vcpus, "" if vcpus == 1 else "s")
    return cpu.cpus_text(cpus)


def report_line(result, state, check_mode=False):
    """One VMI's line of the task's report (fleet.cap_line): the compute CPU
    limit now in force and what it replaced, and a CPU request it changed. A VirtualMachine that is not
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
    now, was = limit_text(after.get("compute_cpu_limit"), vcpus), limit_text(before.get("compute_cpu_limit"), vcpus)
    was_request, request_now = before.get("compute_cpu_request"), after.get("compute_cpu_request")
    request_changed = not result.get("failed") and not quantity.same_cpu(was_request, request_now)
    if request_changed and now == was:
        # The weight alone changed: the cap is as it was.
        line = "%s: %s, unchanged" % (result["name"], now)
    else:
        line = fleet.cap_line(result, restore, now, was, check_mode)
    if request_changed:
        # The weight: what the kubelet gives the container's cgroup, from its request.
        line += "; CPU request %s%s, was %s (its CPU weight)" % ("would be " if check_mode else "", request_now,
                                                                 was_request)
    node = result.get("node") or {}
    if node.get("status") in (NODE_APPLIED, NODE_PENDING):
        # What the node runs with: a resize is applied by the kubelet, later.
        line += " (node: %s)" % node_text(node)
    return line
