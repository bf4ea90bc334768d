# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing the KubeVirt CPU brake: throttle, restore and reconcile the CPU
limit of many running VMs over one connection. One list of the launcher pods
and one of the VirtualMachines' metadata for the whole task; then per VMI
its state is read (state.py), the change planned (plan.py) and
written here - the desired cap on the VMI and its VM, the resize of its
launcher pod, the applied record - and announced by an Event. One VMI
failing is reported (and announced by a Warning Event) and the others go on.
Last, each launcher pod's node is asked whether it applied the limit
(state.node_answer), and with `wait` asked again until it has, it
refused, or the time is up; a refusal or a wait that ran out fails that VMI."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import PER_OBJECT, ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.k8s import events
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import request as brake
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import state as limit_state
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import plan as limit_plan
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.reader import KubevirtReader, pods_path
from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import (
    STRATEGIC_MERGE_PATCH, K8sClientError)
from ansible_collections.overcommit.control.plugins.module_utils.k8s.kubevirt_api import namespaced_path

ACTIONS = {"throttle": ("Throttle", "CPULimitApplied"), "reconcile": ("Reconcile", "CPULimitApplied"),
           "restore": ("Restore", "CPULimitRestored")}
STATE_ACTIONS = {brake.THROTTLED: "Throttle", brake.RESTORED: "Restore", brake.RECONCILED: "Reconcile"}
# How often a wait asks the nodes again; the kubelet applies a resize on its
# next sync of the pod, within seconds.
WAIT_INTERVAL = 1.0


class CpuLimitRunner(object):
    """One task. clock() -> (RFC 3339 seconds, RFC 3339 microseconds) of now;
    sleep and monotonic time the wait for the nodes."""

    def __init__(self, client, request, record_fields, clock, instance, sleep=time.sleep, monotonic=time.monotonic):
        self.client = client
        self.reader = KubevirtReader(client)
        self.request = request
        self.record_fields = record_fields
        self.clock = clock
        self.instance = instance
        self.sleep = sleep
        self.monotonic = monotonic
        # (result, view, launcher pod as last read) of each VMI whose node is asked.
        self.asked = []

    def run(self):
        namespace, label_selector = self.request["namespace"], self.request["label_selector"]
        targets, vmis = self.reader.select(namespace, self.request["names"], label_selector)
        if label_selector and not targets:
            # A selector that matches nothing is a mistake, not a brake applied to no VM.
            raise ValueRangeError("label_selector", label_selector, "a label selector matching at least one VMI%s"
                                  % (" in namespace %s" % namespace if namespace else ""))
        if not targets:
            return []
        vms = self.reader.virtual_machines(namespace)
        pods = self.reader.launcher_pods(namespace) if vmis else {}
        results = []
        for key in targets:
            if key not in vmis:
                results.append(self.not_running(key, vms.get(key)))
                continue
            vm = self.reader.owning_vm(key, vmis[key], vms)
            view = limit_state.vmi_view(vmis[key], self.request["keys"], vm)
            results.append(self.one(view, vmis[key], vm, pods.get(view["uid"]) or []))
        self.ask_nodes(namespace)
        return results

    def ask_nodes(self, namespace):
        """Each asked VMI's node answer (result `node`); with `wait`, asked
        again - one list of the launcher pods per round, whatever the number
        of VMIs - until every node applied or refused, or wait_timeout is up."""
        if self.client.dry_run:
            return
        waiting = []
        for result, view, pod in self.asked:
            if self.answer(result, view, pod) and self.request.get("wait"):
                waiting.append((result, view, pod))
        deadline = self.monotonic() + (self.request.get("wait_timeout") or 0)
        while waiting and self.monotonic() < deadline:
            self.sleep(min(WAIT_INTERVAL, max(0.0, deadline - self.monotonic())))
            try:
                fresh = dict(((pod["metadata"].get("namespace"), pod["metadata"]["name"]), pod)
                             for pod in self.reader.launcher_pod_list(namespace))
            except K8sClientError as exc:
                for result, view, pod in waiting:
                    self.fail(result, view, pod, "cannot read launcher pod %s while waiting for its node: %s"
                              % (pod["metadata"]["name"], exc))
                return
            still = []
            for result, view, pod in waiting:
                now = fresh.get((view["namespace"], pod["metadata"]["name"]))
                if now is None:
                    self.fail(result, view, pod, "launcher pod %s is gone while waiting for its node"
                              % pod["metadata"]["name"])
                elif self.answer(result, view, now):
                    still.append((result, view, now))
            waiting = still
        for result, view, pod in waiting:
            node = result["node"]
            self.fail(result, view, pod, "the node of pod %s has not applied the compute CPU resources after %gs (%s)" % (
                pod["metadata"]["name"], self.request["wait_timeout"], limit_state.node_text(node)))

    def answer(self, result, view, pod):
        """Records the node's answer on the result; True while it may still
        come (pending, not reported). A refusal fails the VMI."""
        node = limit_state.node_answer(pod)
        result["node"] = node
        pending = limit_state.pod_view(pod)["resize_pending"]
        if pending:
            result["resize_pending"] = pending
        else:
            result.pop("resize_pending", None)
        if node["status"] == limit_state.NODE_REFUSED:
            self.fail(result, view, pod, "the node of pod %s refused the compute CPU resources: %s" % (
                pod["metadata"]["name"], limit_state.node_said(node) or "no reason given"))
            return False
        return node["status"] in (limit_state.NODE_PENDING, limit_state.NODE_UNREPORTED)

    def fail(self, result, view, pod, msg):
        """A VMI whose cap the node did not apply: failed, with a Warning Event."""
        action = STATE_ACTIONS[self.request["state"]]
        result.update(failed=True, msg=msg)
        result["event"] = self.emit(view, pod, "Warning", "CPULimitFailed", action, msg)

    def not_running(self, key, vm):
        """A name without a VMI. Restore still lifts the cap its VirtualMachine
        keeps, so that the VM does not start braked."""
        if vm is None:
            return self.missing(key)
        state = self.request["state"]
        if state == brake.THROTTLED:
            return {"name": key, "changed": False, "failed": True,
                    "msg": "VMI %s not found: VirtualMachine %s is not running, and only a running VM can be "
                           "braked" % (key, key)}
        view = limit_state.stopped_vm_view(vm, self.request["keys"])
        before = {"vm_desired": view["desired"]}
        if state == brake.RECONCILED:
            return {"name": key, "changed": False, "before": before, "after": before,
                    "msg": "the VirtualMachine is not running"}
        try:
            kept = self.keep_on_vm(view, vm, None, None)
        except K8sClientError as exc:
            return {"name": key, "changed": False, "failed": True, "before": before, "msg": str(exc),
                    "event": self.emit(view, None, "Warning", "CPULimitFailed", "Restore",
                                       "cannot restore the CPU limit: %s" % exc)}
        if kept is None:
            return {"name": key, "changed": False, "before": before, "after": before, "msg": "never throttled"}
        return {"name": key, "changed": True, "before": before, "after": {"vm_desired": None},
                "event": self.emit(view, None, "Normal", "CPULimitRestored", "Restore",
                                   "cap lifted from VirtualMachine %s, which is not running" % view["vmi"])}

    @staticmethod
    def missing(key):
        return {"name": key, "changed": False, "failed": True, "msg": "VMI %s not found" % key}

    def one(self, view, vmi, vm, pods):
        """One VMI's result: its launcher pod resized to the cap (or the cap
        lifted), its records written; a refusal or failure is its own."""
        result = {"name": view["name"], "changed": False, "vcpus": view["vcpus"]}
        pod = None
        try:
            try:
                pod = limit_state.launcher_pod(view, pods)
            except limit_state.LimitRefusal:
                # Restore clears the desired cap also when no pod runs; the others need one.
                if self.request["state"] != brake.RESTORED:
                    raise
            before = brake.state_view(view, pod)
            result["before"] = before
            limit_plan.check_unchanged(view, self.request)
            cpus, cpu_request, action = limit_plan.target(view, pod, self.request)
            if action is None:
                kept = None
                if self.request["state"] == brake.RECONCILED and limit_state.stale_vm_copy(view):
                    # Lifted on the VMI by hand: the VM's copy must not bring the brake back after a restart.
                    kept = self.keep_on_vm(view, vm, None, view["vm"]["record_text"])
                result.update(changed=kept is not None,
                              after=brake.after_view(before, view, pod, None, self.request, None, None, kept),
                              msg="no cap desired" if self.request["state"] == brake.RECONCILED
                              else "never throttled")
                return result
            changes = self.write(view, vmi, vm, pod, cpus, cpu_request, action)
        except PER_OBJECT as exc:
            result.update(fleet.outcome(exc))
            if result.get("conflict"):
                # Another runner acted on it first (limit_plan.ChangedSinceRead): nothing of it is written.
                return result
            result["event"] = self.emit(view, pod, "Warning", "CPULimitFailed", STATE_ACTIONS[self.request["state"]],
                                        "cannot %s the CPU limit: %s" % (STATE_ACTIONS[self.request["state"]].lower(),
                                                                         exc))
            return result
        after = brake.after_view(before, view, pod, cpus, self.request, changes["desire"], changes["applied"],
                                 changes["kept"], cpu_request)
        written_pod = changes.pop("pod")
        result.update(changed=any(changes.values()),
                      before=before, after=after, pod=before["pod"])
        if written_pod is not None:
            self.asked.append((result, view, written_pod))
        if changes["resized"] or (action == "restore" and result["changed"]):
            action_name, reason = ACTIONS[action]
            note = self._note(view, before, after, action)
            result["event"] = self.emit(view, pod, "Normal", reason, action_name, note)
        return result

    @staticmethod
    def _note(view, before, after, action):
        request = ""
        if after.get("compute_cpu_request") != before.get("compute_cpu_request"):
            request = "compute CPU request (its CPU weight) %s from %s to %s" % (
                "given back" if action == "restore" else "set", before["compute_cpu_request"],
                after["compute_cpu_request"])
        if action == "restore":
            if after["compute_cpu_limit"] != before["compute_cpu_limit"]:
                return "compute CPU limit of pod %s raised from %s to %s%s; cap lifted" % (
                    before["pod"], before["compute_cpu_limit"], after["compute_cpu_limit"],
                    "; " + request if request else "")
            if request:
                return "pod %s: %s; brake lifted" % (before["pod"], request)
            return "cap lifted (%s)" % ("no running launcher pod" if before["pod"] is None
                                        else "pod %s has no cap to raise" % before["pod"])
        again = "; re-applied the desired %s" % ("brake" if request else "cap") if action == "reconcile" else ""
        if after["compute_cpu_limit"] == before["compute_cpu_limit"] and request:
            return "pod %s: %s%s" % (before["pod"], request, again)
        return "compute CPU limit of pod %s set to %s (was %s)%s%s" % (
            before["pod"], after["compute_cpu_limit"], before["compute_cpu_limit"] or "no limit",
            "; " + request if request else "", again)

    def write(self, view, vmi, vm, pod, cpus, cpu_request, action):
        """The writes, in an order that a failure half-way leaves repairable:
        a throttle records the desired cap (on the VMI, then on its VM) before
        the resize, so a reconcile finishes it; a restore raises the limit
        before the desire goes (from the VM, then the VMI)."""
        namespace, name, keys = view["namespace"], view["vmi"], self.request["keys"]
        vmi_path = namespaced_path(namespace, "virtualmachineinstances", name)
        changes = {"desire": None, "kept": None, "resized": None, "applied": None, "pod": None}
        current_vmi = vmi
        if action != "restore":
            def plan_desire(obj):
                fresh = limit_state.vmi_view(obj, keys, vm)
                # Compare-and-swap: a write that raced another runner's is
                # read again (409), and must still find the VMI as expected.
                limit_plan.check_unchanged(fresh, self.request)
                return limit_plan.desire_patch(fresh, pod, cpus, self.request, self.record_fields, cpu_request)
            current_vmi, changes["desire"], _conflicts = self.client.read_modify_write(
                vmi_path, plan_desire, current=vmi, written=True)
            if view["vm"] is not None:
                # The VM keeps what the VMI now says.
                written = limit_state.vmi_view(current_vmi, keys, vm)
                changes["kept"] = self.keep_on_vm(view, vm, written["desired"], written["record_text"],
                                                  written["desired_request"])
        if pod is not None and (cpus is not None or cpu_request is not None):
            pod_path = "%s/%s" % (pods_path(namespace), pod["metadata"]["name"])

            def plan_resize(obj):
                return limit_plan.resize_patch(obj, cpus, cpu_request)
            changes["pod"], changes["resized"], _conflicts = self.client.read_modify_write(
                pod_path, plan_resize, current=pod, write_path=pod_path + "/resize", content_type=STRATEGIC_MERGE_PATCH,
                written=True)
        if action == "restore" and view["vm"] is not None:
            changes["kept"] = self.keep_on_vm(view, vm, None, None)

        def plan_applied(obj):
            return limit_plan.applied_patch(limit_state.vmi_view(obj, keys, vm), pod, cpus, self.request,
                                            self.clock()[0], restore=action == "restore", cpu_request=cpu_request)
        _vmi, changes["applied"], _conflicts = self.client.read_modify_write(vmi_path, plan_applied,
                                                                             current=current_vmi)
        return changes

    def keep_on_vm(self, view, vm, desired, record_text, desired_request=None):
        """Makes the VirtualMachine's copy of the brake say `desired`,
        `desired_request` and `record_text` (None: none); returns the patch
        written, or None."""
        keys = self.request["keys"]
        path = namespaced_path(view["namespace"], "virtualmachines", view["vm"]["name"])

        def plan_kept(obj):
            return limit_plan.vm_patch(limit_state.vm_view(obj, keys), self.request, desired, record_text,
                                       desired_request)
        _vm, patch, _conflicts = self.client.read_modify_write(path, plan_kept, current=vm)
        return patch

    def emit(self, view, pod, event_type, reason, action, note):
        """Creates the Event; returns its type, reason and note, with what
        kept it from being created (events.emit)."""
        body = brake.event(view, pod, event_type, reason, action, note, self.clock()[1], self.instance,
                           events.unique_suffix())
        return events.emit(self.client, body)
