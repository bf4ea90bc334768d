#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kubevirt_vm_cpu_limit
short_description: Runtime CPU brake for many running KubeVirt VMs, by in-place resize of the launcher pod
version_added: 0.1.0
description:
  - Caps the CPU a I(running) KubeVirt VM may use, without a restart, for many VirtualMachineInstances per task.
    KubeVirt has no per-VM CPU quota and libvirt inside virt-launcher manages no cgroups, so the brake is the CPU
    limit of the virt-launcher pod's C(compute) container, changed in place through the pod's C(resize)
    subresource (Kubernetes In-Place Pod Resize, beta in 1.33, GA in 1.35). It caps the whole VM, like libvirt's
    C(global_quota) in M(overcommit.control.libvirt_cputune).
  - The brake's second lever is the C(compute) container's CPU request (O(cpu_request)), which the kubelet turns into
    the container's cgroup CPU weight (C(cpu.shares) 1024 per CPU, or C(cpu.weight) on cgroup v2). A demoted request
    makes the VM yield to the others while the node is full and wastes no idle CPU; it is the first rung of the
    closed loop's ladder (weight, then quota), like C(shares) in M(overcommit.control.libvirt_cputune).
  - "The state lives on the VMI, in four annotations under O(prefix): C(cpu-limit) is the desired cap and
    C(cpu-request) the desired CPU request (desired state only); C(cpu-limit-applied) is what was last written to
    which launcher pod, and when; C(cpu-limit-throttle) is the pod's limit and request before the first throttle,
    with why, who and when."
  - A restart replaces the VMI, so the VirtualMachine that owns it keeps a copy of the desired cap, the desired
    request and the throttle record in the same annotations. A VMI created on its own (no VirtualMachine) has only the VMI's.
  - O(state=throttled) writes the desired cap, resizes the launcher pod, and records what it applied.
  - A new launcher pod (live migration, or a restart, which also makes a new VMI) starts with the limit of the VM's
    template, losing the cap. O(state=reconciled) finds the VMIs whose desired cap (their own, or after a restart
    their VirtualMachine's) and launcher pod differ, writes the cap onto a new VMI and applies it again; run it on a
    schedule or from an event (role C(overcommit.control.kubevirt_cpu_reconcile)). A cap annotated on a VMI by hand
    is applied the same way; when it is removed from the VMI by hand, the reconcile removes the VirtualMachine's
    copy too.
  - A limit can never be removed from a pod. O(state=restored) sets the limit back to what it was before the first
    throttle; when the pod had none, it raises the limit to the VM's vCPU count plus O(headroom). It gives the CPU
    request back exactly as recorded. Then it removes the desired cap and request and the record, from the
    VirtualMachine too. A VMI without a running launcher pod only loses the
    desired cap; so does a stopped VirtualMachine named in O(names), so that it does not start braked.
  - "Refused with the reason, VMI by VMI: VMs with dedicated CPUs (C(dedicatedCpuPlacement), which cannot be resized
    even with O(force)); VMs of class V(dedicated) (the C(<prefix>class) label on the VMI or its VM) or with realtime
    vCPUs, and caps under O(floor) of the vCPUs, unless O(force=true); a cap at or above the VM's vCPU count, which
    caps nothing (even with O(force)); a limit or request that would change the pod's QoS class (a Guaranteed pod's),
    a limit under the container's CPU request; a demoted request on a container that has none; a VMI with no
    running launcher pod."
  - Every resize and every failure on a VMI emits a Kubernetes Event on it (C(CPULimitApplied), C(CPULimitRestored),
    C(CPULimitFailed)), so no failure is silent, also when nobody reads the task's output.
author:
  - overcommit.control maintainers (@overcommit)
extends_documentation_fragment:
  - overcommit.control.k8s
  - overcommit.control.attributes
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.actiongroups
attributes:
  check_mode:
    support: full
    details: Every write, the resize and the Event included, is sent to the API server as a dry run (C(dryRun=All)).
options:
  namespace:
    description:
      - Namespace of the VMIs. Required with O(names); without it O(label_selector) (or O(state=reconciled) alone)
        selects in every namespace.
    type: str
  names:
    description:
      - Names of the VirtualMachineInstances to act on, in O(namespace) (a VMI has its VM's name). With
        O(state=throttled) a name without a VMI fails (only a running VM can be braked).
      - Names are matched exactly; a name that is empty or has surrounding spaces (a list written as one string,
        C("web-1, web-2")) fails the task, naming the option and the element, before anything is read or changed.
    type: list
    elements: str
    default: []
  label_selector:
    description:
      - Also act on every VMI this label selector matches.
      - With O(state=reconciled) and neither O(names) nor O(label_selector), every VMI of O(namespace) (or of the
        cluster) is reconciled.
    type: str
  state:
    description:
      - V(throttled) caps the VMs to O(cpus); V(restored) lifts the cap; V(reconciled) applies each VMI's desired
        cap again where its launcher pod does not have it.
    type: str
    choices: [throttled, restored, reconciled]
    default: throttled
  cpus:
    description:
      - The cap for the whole VM, as a CPU quantity (V(2), V(1.5), V(1500m)). Required with O(state=throttled)
        unless O(cpu_request) is given (the weight alone).
      - It must be under the VM's vCPU count. A larger cap caps nothing (V(500) is 500 CPUs, not 500m), so that VMI
        fails, naming O(cpus) and its vCPUs, before anything is written.
    type: str
  cpu_request:
    description:
      - With O(state=throttled), the C(compute) container's CPU request while braked, as a CPU quantity of at least
        V(1m) and at most O(cpus) - its CPU weight, demoted in place (V(100m) is a weight of 102 shares against the
        1024 of a container that requested a CPU). With O(cpus) left out, the cap is left as it is.
      - The request before the first throttle is recorded and given back by O(state=restored).
    type: str
    version_added: 0.1.1
  reason:
    description:
      - Why; kept in the record on every throttled VMI and in the Events.
    type: str
  requested_by:
    description:
      - Who asked for the throttle; kept in the record. Defaults to the user running the module.
    type: str
  plan_id:
    description:
      - The id of the approved plan this change carries out (role C(overcommit.control.apply_plan) passes it);
        kept in the record as C(plan), so the object itself says which plan changed it.
    type: str
    version_added: 0.1.0
  expected:
    description:
      - "What the caller read of each VMI, C(namespace/name) to C({cap_cpus, throttle_time}) as
        M(overcommit.control.kubevirt_vm_cpu_info) reports them (the desired cap, and the time of the throttle
        record). A VMI that is no longer so is left alone and reported with C(conflict=true) and what changed, not as
        failed: another runner acted on it first."
      - The comparison is made again on the VMI as read for the write, and the write carries that read's
        C(resourceVersion), so of two runs that read the same VMI at the same time only one changes it. Roles
        C(overcommit.control.apply_plan) and C(overcommit.control.closed_loop) pass what the plan saw.
    type: dict
    version_added: 0.1.0
  headroom:
    description:
      - CPUs above the VM's vCPU count that O(state=restored) sets as the limit of a pod that had no limit before the
        first throttle, for the emulator and I/O threads that share the C(compute) container.
    type: float
    default: 1.0
  floor:
    description:
      - The least cap a non-dedicated VM may get, as a fraction of its vCPUs (a 4 vCPU VM is not capped under
        1 CPU with V(0.25)).
    type: float
    default: 0.25
  force:
    description:
      - Cap VMs of class V(dedicated) (without dedicated CPU placement) and go under O(floor). Kept in the record,
        so a reconcile applies a forced cap again.
    type: bool
    default: false
  prefix:
    description:
      - The key prefix of the annotations and of the class label.
    type: str
    default: overcommit.control/
  wait:
    description:
      - Wait until the node of each launcher pod the task resized (or found at the cap) runs its compute container
        with the new limit, at most O(wait_timeout) seconds. A VMI whose node has not applied it by then fails,
        saying what the node reported; the others are still reported as applied.
      - Without it the task ends after the writes and reports the node's answer as it was then (C(node)), usually
        V(pending) for a resize just written.
      - Not in check mode, where nothing is resized.
    type: bool
    default: false
    version_added: 0.1.0
  wait_timeout:
    description:
      - How long O(wait) waits for the nodes, in seconds (1 to 3600).
    type: int
    default: 60
    version_added: 0.1.0
notes:
  - The kubelet applies a resize asynchronously, on its next sync of the pod. Each VMI's result says what the node
    answered (C(node)) - the limit its compute container runs with, as the pod's status reports it, and the
    C(PodResizePending) (C(Deferred), C(Infeasible)) or C(PodResizeInProgress) condition - as V(applied),
    V(pending) or V(refused). A node that refuses a resize (C(Infeasible)) fails that VMI; the desired cap stays, so
    a reconcile applies it when the node can.
"""

EXAMPLES = r"""
- name: Brake two noisy VMs to one CPU each
  overcommit.control.kubevirt_vm_cpu_limit:
    namespace: tenant-a
    names: [web-17, web-18]
    cpus: 1
    reason: INC-4211 noisy neighbours

- name: Brake every burstable VM of a namespace to half a CPU, under the floor
  overcommit.control.kubevirt_vm_cpu_limit:
    namespace: tenant-a
    label_selector: overcommit.control/class=burstable
    cpus: 500m
    force: true
    reason: node pressure

- name: Keep the brake on after migrations and restarts - apply every desired cap again where it got lost
  overcommit.control.kubevirt_vm_cpu_limit:
    state: reconciled

- name: Brake a VM and wait until its node runs it with the cap
  overcommit.control.kubevirt_vm_cpu_limit:
    namespace: tenant-a
    names: [web-17]
    cpus: 1
    reason: INC-4211 noisy neighbour
    wait: true
    wait_timeout: 30

- name: Demote a noisy VM's CPU weight only - it keeps every CPU no one else wants
  overcommit.control.kubevirt_vm_cpu_limit:
    namespace: tenant-a
    names: [web-20]
    cpu_request: 100m
    reason: INC-4212 victims wait behind web-20

- name: The incident is over
  overcommit.control.kubevirt_vm_cpu_limit:
    namespace: tenant-a
    names: [web-17, web-18]
    state: restored
"""

RETURN = r"""
vms:
  description: One result per VMI (C(namespace/name)), in the order they were selected.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: C(namespace/name) of the VMI.
      type: str
    changed:
      description: Whether the VMI or its launcher pod was (or in check mode would be) changed.
      type: bool
    failed:
      description: Present and true when this VMI failed or was refused; the others were still handled.
      type: bool
    conflict:
      description: Present and true when the VMI was not as O(expected) says, and was left alone.
      type: bool
    seen:
      description: With C(conflict), what the VMI looks like now (C(cap_cpus), C(throttle_time)).
      type: dict
    msg:
      description: Why this VMI failed, or why nothing was to be done.
      type: str
    pod:
      description: The launcher pod that was looked at.
      type: str
    vcpus:
      description: The VM's vCPUs (sockets x cores x threads of its current topology).
      type: int
    before:
      description: Desired cap (C(desired)) and CPU request (C(desired_request)), applied record, throttle record,
        launcher pod and its compute CPU limit and request (C(compute_cpu_limit), C(compute_cpu_request)) before, and
        the desired cap and request the VirtualMachine keeps (C(vm_desired), C(vm_desired_request)).
      type: dict
    after:
      description: The same after the task.
      type: dict
    event:
      description: The Event emitted on the VMI (type, reason, note), with C(error) when it could not be created.
      type: dict
    resize_pending:
      description: The pod's C(PodResizePending) condition (reason, message), when the kubelet reports one.
      type: dict
    node:
      description:
        - What the launcher pod's node answered, last time it was asked (after the writes; with O(wait), until it
          applied, refused or the wait ran out). Absent in check mode and for VMIs without a cap to apply.
      type: dict
      version_added: 0.1.0
      contains:
        status:
          description:
            - V(applied) - the compute container runs with the CPU limit and request of the pod's spec.
            - V(pending) - the node defers the resize (C(Deferred)), is applying it (C(PodResizeInProgress)), or has
              not seen it yet.
            - V(refused) - the node cannot apply it (C(Infeasible)); the VMI fails.
            - V(not reported) - no node reports the container's resources (a kubelet older than in-place resize).
          type: str
          choices: [applied, pending, refused, not reported]
        cpu_limit:
          description: The compute CPU limit the container runs with, as the node reports it (null for none).
          type: str
        reason:
          description: The reason of the node's C(PodResizePending) or C(PodResizeInProgress) condition.
          type: str
        message:
          description: What the node said, or why the answer is pending.
          type: str
  sample:
    - name: tenant-a/web-17
      changed: true
      pod: virt-launcher-web-17-x7k2p
      before: {desired: null, desired_request: null, applied: null, throttle: null, pod: virt-launcher-web-17-x7k2p,
               compute_cpu_limit: null, compute_cpu_request: 400m, vm_desired: null, vm_desired_request: null}
      after:
        desired: "1"
        desired_request: null
        applied: {cpus: "1", pod: virt-launcher-web-17-x7k2p, podUID: 6f1c..., time: "2026-01-05T10:00:00Z"}
        throttle: {previous: null, previous_request: 400m, reason: INC-4211, by: ops, time: "2026-01-05T10:00:00Z"}
        pod: virt-launcher-web-17-x7k2p
        compute_cpu_limit: "1"
        compute_cpu_request: 400m
        vm_desired: "1"
        vm_desired_request: null
      event: {type: Normal, reason: CPULimitApplied,
              note: "compute CPU limit of pod virt-launcher-web-17-x7k2p set to 1 (was no limit)"}
      node: {status: applied, cpu_limit: "1", reason: null, message: null}
summary:
  description: Names per outcome (changed, unchanged, skipped, failed with the reason), and a report of what was done.
  returned: always
  type: dict
  contains:
    report:
      description:
        - One line per VMI, for people - the compute CPU limit now in force and what it replaced (and the CPU request,
          when it changed), or why it failed.
        - A limit at or above the VM's vCPUs brakes nothing and reads C(unlimited) with the limit (restore raises the
          limit there when the pod had none, as a limit cannot be removed). Prefixed "would be" in check mode.
        - "Followed by the node's answer when it is V(applied) or V(pending), e.g. C((node: applied))."
      type: list
      elements: str
      sample:
        - "tenant-a/web-17: 1 CPU, was unlimited (node: applied)"
        - "tenant-a/web-20: unlimited: limit 5 CPU on 4 vCPUs, unchanged; CPU request 100m, was 400m (its CPU weight)"
        - "tenant-a/web-18: restored to unlimited: limit 4.5 CPU on 4 vCPUs (was 1 CPU)"
        - "tenant-a/web-19: failed: VMI tenant-a/web-19 not found"
"""

import socket

from ansible_collections.overcommit.control.plugins.module_utils.common.fleet import exit_fleet
from ansible_collections.overcommit.control.plugins.module_utils.common.record import clock, record_fields
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import request as vmi_cpu_limit
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.runner import CpuLimitRunner
from ansible_collections.overcommit.control.plugins.module_utils.k8s.metadata import DEFAULT_PREFIX
from ansible_collections.overcommit.control.plugins.module_utils.k8s.module import K8sModule


def main():
    module = K8sModule(
        dict(
            namespace=dict(type="str"),
            names=dict(type="list", elements="str", default=[]),
            label_selector=dict(type="str"),
            state=dict(type="str", default="throttled", choices=list(vmi_cpu_limit.STATES)),
            cpus=dict(type="str"),
            cpu_request=dict(type="str"),
            reason=dict(type="str"),
            requested_by=dict(type="str"),
            plan_id=dict(type="str"),
            expected=dict(type="dict"),
            headroom=dict(type="float", default=1.0),
            floor=dict(type="float", default=0.25),
            force=dict(type="bool", default=False),
            prefix=dict(type="str", default=DEFAULT_PREFIX),
            wait=dict(type="bool", default=False),
            wait_timeout=dict(type="int", default=vmi_cpu_limit.DEFAULT_WAIT_TIMEOUT),
        ),
        failed={"vms": []},
        name_fields=("names",),
    )
    request = module.checked(vmi_cpu_limit.check_request)
    fields, instance = record_fields(module.params), socket.gethostname()
    results = module.with_client(lambda client: CpuLimitRunner(client, request, fields, clock, instance).run())
    exit_fleet(module, results, "VMI", "vms",
               describe=lambda result: vmi_cpu_limit.report_line(result, request["state"], module.check_mode))


if __name__ == "__main__":
    main()
