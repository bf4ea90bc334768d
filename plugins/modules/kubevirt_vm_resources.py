#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kubevirt_vm_resources
short_description: Resource templates for many KubeVirt VMs by class, and an audit of risky ones
version_added: 0.1.0
description:
  - Sets what KubeVirt VirtualMachines are promised (requests) and capped at (limits) according to their class,
    for many VMs per task. O(mode=audit) changes nothing and lists risky VMs instead.
  - The class comes from the VM label C(<prefix>class) (V(shared) when absent); dedicated CPU placement or
    realtime vCPUs make a VM V(dedicated) whatever the label says. O(vm_class) sets the label.
  - V(shared) - CPU request explicit or from the cluster's C(cpuAllocationRatio) (O(cpu_request=ratio)), optional
    CPU limit not under O(floor) of the vCPUs. V(burstable) - O(cpu_request) is the baseline, O(cpu_limit) the
    ceiling, both required. V(dedicated) - dedicated CPU placement, CPU request = limit = vCPUs and memory
    request = guest memory; never overcommitted.
  - "Memory: O(memory_guest) is what the guest sees; a O(memory_request) under it overcommits memory
    (C(memoryOvercommit) of M(overcommit.control.kubevirt_config) applies only to VMs without a request).
    A memory limit is never equal to the guest memory and always leaves room for the virt-launcher overhead,
    computed as KubeVirt does (a running VMI's reported C(status.memory.memoryOverhead) when there is one)."
  - Options not given keep the VM's current values. Every value is validated before any API call, and
    each VM's result against the class and memory rules before its write, naming the field.
  - Changing resources of a running VM does not reach it until a restart (KubeVirt sets C(RestartRequired));
    the result says so per VM (C(restart_required), C(restart_reasons)) instead of hiding it.
  - "O(mode=audit) reports per VM: memory limit equal to the guest memory, memory limit under guest + overhead,
    memory request above the guest memory, dedicated VMs with overcommitted CPU or memory, and annotations that
    do not exist in KubeVirt (C(kubevirt.io/allow-memory-overcommit), C(kubevirt.io/domainMemoryOvercommit))."
  - "Instancetypes: a VM that takes its CPU and memory from an instancetype (C(spec.instancetype)) is read through it
    - the revision of it the VM keeps (C(revisionName), a C(ControllerRevision)) when it names one, else the
    C(VirtualMachineClusterInstancetype) or C(VirtualMachineInstancetype) - for its class, vCPUs, dedicated placement,
    guest memory and the memory its launcher requests (C(overcommitPercent)). The audit checks it as it runs; a
    template for such a VM is refused (with what it has now, C(effective)): change the instancetype, or move it."
  - "Moving VMs onto an instancetype (M(overcommit.control.kubevirt_instancetype) makes one per class): O(instancetype)
    (and O(preference)) with O(mode=audit) says per VM what it would become and whether it needs a restart
    (C(move)), changing nothing; with O(mode=enforce) (and C(--check --diff) to see the plan first) it sets
    C(spec.instancetype) (and C(spec.preference)), removes the template fields KubeVirt refuses beside an instancetype
    (C(domain.cpu) topology and placement, C(domain.memory.guest), CPU and memory requests and limits;
    C(removed_fields)) and sets the class label from the instancetype. A running VM is never restarted: it keeps its
    resources until its next restart, and its result says C(restart_required). A dedicated VM is not moved onto an
    overcommitted class unless forced, and an instancetype that breaks the memory rules is refused."
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
    details: Every write is sent to the API server as a dry run (C(dryRun=All)), so KubeVirt's schema validates it.
options:
  namespace:
    description:
      - Namespace of the VMs. Required with O(names); without it O(label_selector) selects in every namespace.
    type: str
  names:
    description:
      - Names of the VMs to act on, in O(namespace).
      - Names are matched exactly; a name that is empty or has surrounding spaces (a list written as one string,
        C("web-1, web-2")) fails the task, naming the option and the element, before anything is read or changed.
    type: list
    elements: str
    default: []
  label_selector:
    description:
      - Also act on every VM this label selector matches.
    type: str
  mode:
    description:
      - V(enforce) applies the template; V(audit) changes nothing and reports risky VMs.
    type: str
    choices: [enforce, audit]
    default: enforce
  vm_class:
    description:
      - Set the VMs' class (the C(<prefix>class) label) and apply its rules.
    type: str
    choices: [dedicated, shared, burstable]
  cpu_request:
    description:
      - CPU the launcher requests, a quantity such as V(500m) or V(2); V(ratio) removes an explicit request so
        that the cluster's allocation ratio applies (vCPUs / ratio).
    type: str
  cpu_limit:
    description:
      - CPU limit of the launcher, a quantity; V(none) removes it.
    type: str
  memory_guest:
    description:
      - Memory the guest sees, a quantity such as V(4Gi).
    type: str
  memory_request:
    description:
      - Memory the launcher requests for the guest, at most O(memory_guest); V(none) removes it.
    type: str
  memory_limit:
    description:
      - Memory limit, at least guest memory + launcher overhead; V(auto) sets exactly that (rounded up to Mi),
        V(none) removes it.
    type: str
  balloon:
    description:
      - Attach the memory balloon device (C(devices.autoattachMemBalloon), which KubeVirt defaults to true).
        KubeVirt never inflates it; it only reports guest memory statistics.
    type: bool
  floor:
    description:
      - The least CPU limit a non-dedicated VM may get, as a fraction of its vCPUs.
    type: float
    default: 0.25
  force:
    description:
      - Allow overcommitting a dedicated VM, moving one out of the dedicated class, or a limit under the floor.
    type: bool
    default: false
  prefix:
    description:
      - The key prefix of the class label.
    type: str
    default: overcommit.control/
  instancetype:
    description:
      - Move the VMs onto this instancetype (O(mode=enforce)), or say what they would become (O(mode=audit)).
      - Not together with O(vm_class), O(cpu_request), O(cpu_limit), O(memory_guest), O(memory_request) or
        O(memory_limit); the instancetype sets those.
    type: str
  instancetype_kind:
    description:
      - The kind of O(instancetype); a V(VirtualMachineInstancetype) is looked up in each VM's namespace.
    type: str
    choices: [VirtualMachineClusterInstancetype, VirtualMachineInstancetype]
    default: VirtualMachineClusterInstancetype
  preference:
    description:
      - The preference the moved VMs get (only with O(instancetype)). Without it a VM keeps its preference when its
        instancetype does not change, and loses it when it does.
    type: str
  preference_kind:
    description:
      - The kind of O(preference); a V(VirtualMachinePreference) is looked up in each VM's namespace.
    type: str
    choices: [VirtualMachineClusterPreference, VirtualMachinePreference]
    default: VirtualMachineClusterPreference
"""

EXAMPLES = r"""
- name: Shared VMs of the tenant namespace - CPU from the ratio, capped at half their vCPUs, safe memory limit
  overcommit.control.kubevirt_vm_resources:
    namespace: tenant-a
    label_selector: overcommit.control/class=shared
    cpu_request: ratio
    cpu_limit: "2"
    memory_limit: auto

- name: Make the database VMs dedicated
  overcommit.control.kubevirt_vm_resources:
    namespace: tenant-a
    names: [db-1, db-2]
    vm_class: dedicated

- name: What the tenant's shared VMs would become on the shared-2c4g instancetype, and which need a restart
  overcommit.control.kubevirt_vm_resources:
    namespace: tenant-a
    label_selector: overcommit.control/class=shared
    mode: audit
    instancetype: shared-2c4g
    preference: shared-2c4g
  register: move_audit

- name: Move them (run with --check --diff first to see the plan); running VMs take it at their next restart
  overcommit.control.kubevirt_vm_resources:
    namespace: tenant-a
    label_selector: overcommit.control/class=shared
    instancetype: shared-2c4g
    preference: shared-2c4g

- name: List risky VMs of the whole cluster
  overcommit.control.kubevirt_vm_resources:
    label_selector: kubevirt.io/vm
    mode: audit
  register: audit
"""

RETURN = r"""
vms:
  description: One result per VM (C(namespace/name)), in the order they were selected.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: C(namespace/name) of the VM.
      type: str
    changed:
      description: Whether the VM was (or in check mode would be) changed.
      type: bool
    failed:
      description: Present and true when this VM failed or was refused; the others were still handled.
      type: bool
    msg:
      description: Why this VM failed.
      type: str
    field:
      description: The option that broke a rule for this VM, when one did.
      type: str
    before:
      description: Class, CPU request and limit, dedicated placement, guest memory, memory request and limit and
        balloon before the task; with O(instancetype) also the C(instancetype) and C(preference) referenced.
      type: dict
    after:
      description: The same after the task.
      type: dict
    launcher_overhead:
      description: The virt-launcher memory overhead the limit rule used.
      type: str
    running:
      description: Whether a VMI of the VM runs.
      type: bool
    restart_required:
      description: Whether the change reaches the running VM only after a restart.
      type: bool
    restart_reasons:
      description: The changed fields that need the restart.
      type: list
      elements: str
    restart_required_condition:
      description: Whether the VM already carries KubeVirt's RestartRequired condition.
      type: bool
    removed_fields:
      description: With O(instancetype), the template fields removed because the instancetype sets them.
      type: list
      elements: str
    effective:
      description: For a VM refused because it takes its resources from an instancetype, what it has from it.
      type: dict
    instancetype:
      description: With O(mode=audit), for a VM on an instancetype, its class and resources from it and the
        C(instancetype) and C(preference) it references.
      type: dict
    move:
      description: With O(mode=audit) and O(instancetype), what the VM would become (C(before), C(after)), whether it
        would change and need a restart (C(restart_required), C(restart_reasons)) and the template fields that would
        go (C(removed_fields)); or C(refused) and C(msg).
      type: dict
    findings:
      description: With O(mode=audit), each risk found (C(check) and C(message)).
      type: list
      elements: dict
    risky:
      description: With O(mode=audit), whether any risk was found.
      type: bool
  sample:
    - name: tenant-a/web-1
      changed: true
      before: {class: shared, cpu_request: null, cpu_limit: null, memory_guest: 4Gi, memory_limit: 4Gi}
      after: {class: shared, cpu_request: null, cpu_limit: "2", memory_guest: 4Gi, memory_limit: 4373Mi}
      launcher_overhead: 276Mi
      running: true
      restart_required: true
      restart_reasons: [cpu_limit, memory_limit]
risky:
  description: With O(mode=audit), the VMs with at least one finding.
  returned: when mode is audit
  type: list
  elements: str
"""

from ansible_collections.overcommit.control.plugins.module_utils.common.fleet import exit_fleet
from ansible_collections.overcommit.control.plugins.module_utils.domain import vm_class
from ansible_collections.overcommit.control.plugins.module_utils.k8s.metadata import DEFAULT_PREFIX
from ansible_collections.overcommit.control.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.overcommit.control.plugins.module_utils.k8s.static import instancetypes, vm_resources
from ansible_collections.overcommit.control.plugins.module_utils.k8s.static.runner import VmResourcesRunner


def main():
    module = K8sModule(
        dict(
            namespace=dict(type="str"),
            names=dict(type="list", elements="str", default=[]),
            label_selector=dict(type="str"),
            mode=dict(type="str", default="enforce", choices=list(vm_resources.MODES)),
            vm_class=dict(type="str", choices=list(vm_class.CLASSES)),
            cpu_request=dict(type="str"),
            cpu_limit=dict(type="str"),
            memory_guest=dict(type="str"),
            memory_request=dict(type="str"),
            memory_limit=dict(type="str"),
            balloon=dict(type="bool"),
            floor=dict(type="float", default=0.25),
            force=dict(type="bool", default=False),
            prefix=dict(type="str", default=DEFAULT_PREFIX),
            instancetype=dict(type="str"),
            instancetype_kind=dict(type="str", default=instancetypes.CLUSTER_INSTANCETYPE,
                                   choices=list(instancetypes.INSTANCETYPE_KINDS)),
            preference=dict(type="str"),
            preference_kind=dict(type="str", default=instancetypes.CLUSTER_PREFERENCE,
                                 choices=list(instancetypes.PREFERENCE_KINDS)),
        ),
        required_one_of=[("names", "label_selector")],
        failed={"vms": []},
        name_fields=("names",),
    )
    request = module.checked(vm_resources.check_request)
    results = module.with_client(lambda client: VmResourcesRunner(client, request).run())
    extra = {"risky": [r["name"] for r in results if r.get("risky")]} if request["mode"] == "audit" else {}
    exit_fleet(module, results, "VM", "vms", **extra)


if __name__ == "__main__":
    main()
