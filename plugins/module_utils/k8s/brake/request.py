# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runtime CPU brake of a running KubeVirt VM: the CPU limit of its
virt-launcher pod's `compute` container, changed in place through the pod's
`resize` subresource. This module is the task's request (its options,
checked) and its report (before/after, Events, one line per VMI); reading
the state is state.py, planning the change plan.py, writing it runner.py
(with reader.py), the records' types records.py. Pure.

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
DESIRED, APPLIED, RECORD, CLASS_LABEL = "cpu-limit", "cpu-limit-applied", "cpu-limit-throttle", "class"
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
    wait_timeout = params.get("wait_timeout", DEFAULT_WAIT_TIMEOUT)
    if wait_timeout is None or not 0 < wait_timeout <= LONGEST_WAIT:
        raise ValueRangeError("wait_timeout", wait_timeout, "1..%d seconds" % LONGEST_WAIT)
    prefix = metadata.check_prefix(params["prefix"])
    return {"namespace": params.get("namespace"), "names": params.get("names") or [],
            "label_selector": params.get("label_selector"),
            "expected": plans.check_expected("expected", params.get("expected"), "kubevirt_vm_cpu_info"),
            "state": state, "cpus": cpus, "cpus_text": params.get("cpus"), "headroom": float(params["headroom"]), "floor": float(params["floor"]),
            "force": bool(params.get("force")), "prefix": prefix,
            "wait": bool(params.get("wait")), "wait_timeout": wait_timeout,
            "keys": {"desired": prefix + DESIRED, "applied": prefix + APPLIED, "record": prefix + RECORD,
                     "class": prefix + CLASS_LABEL}}


def state_view(view, pod):
    """Before/after as people read them in results and --diff."""
    current = pod_view(pod) if pod is not None else None
    return {"desired": view["desired"], "applied": shown(view["applied"]), "throttle": shown(view["record"]),
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
            record_type = {"applied": AppliedRecord, "throttle": ThrottleRecord}.get(field)
            after[field] = value if record_type is None or value is None else shown(record_type.parse(value))
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
        return cpu.cpus_text(None)
    cpus = quantity.cpu("compute_cpu_limit", limit)
    if vcpus and cpus + 1e-9 >= vcpus:
        return "unlimited: limit %s on %d vCPU%s" % (cpu.cpus_text(cpus), vcpus, "" if vcpus == 1 else "s")
    return cpu.cpus_text(cpus)


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
    node = result.get("node") or {}
    if node.get("status") in (NODE_APPLIED, NODE_PENDING):
        # What the node runs with: a resize is applied by the kubelet, later.
        line += " (node: %s)" % node_text(node)
    return line
