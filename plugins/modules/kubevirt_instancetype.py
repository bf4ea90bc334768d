#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kubevirt_instancetype
short_description: VM classes as KubeVirt cluster instancetypes and preferences, many per task
version_added: 0.1.0
description:
  - Keeps one C(VirtualMachineClusterInstancetype) and one C(VirtualMachineClusterPreference)
    (C(instancetype.kubevirt.io/v1beta1)) per class definition, both named after it, for many definitions per task;
    O(state=absent) deletes them.
  - V(dedicated) - C(spec.cpu.dedicatedCPUPlacement) and C(spec.cpu.isolateEmulatorThread), no memory overcommit.
    V(shared) - no dedicated placement, so the launcher's CPU request is the vCPUs / the KubeVirt CR's
    C(cpuAllocationRatio) (M(overcommit.control.kubevirt_config)), and the guest memory overcommitted by
    C(memory_overcommit_percent). V(burstable) - as shared, with its baseline.
  - "The class is the label C(<prefix>class) on both objects and, with a burstable class's baseline
    (C(<prefix>baseline-cpus)), an annotation in their C(spec.annotations), which KubeVirt sets on every VMI of the
    instancetype: the brake (M(overcommit.control.kubevirt_vm_cpu_limit)) and the control policy read them there.
    A burstable VM's credit bank is 24 hours of earnings at its baseline (1 credit = 1 vCPU-minute)."
  - "C(memory_overcommit_percent) is the instancetype's C(spec.memory.overcommitPercent), 0-100: the launcher requests
    guest x (1 - percent/100), so 25 lets a 4Gi guest run on a 3Gi request (the guest sees 133 % of it). It is
    B(not) the KubeVirt CR's C(memoryOvercommit), a scale on which 150 means the guest sees 150 % of the request;
    each result gives both (C(resources.memory_overcommit_percent), C(resources.equivalent_memory_overcommit))."
  - Every definition is checked before any API call, naming the field (C(classes[NAME].FIELD)) - a dedicated class
    with memory overcommit, overcommit above O(max_memory_overcommit_percent), a burstable class without a baseline
    under its vCPUs, a baseline for another class. An object of the same name that does not carry the class label
    was not made by the collection and is refused, never changed or deleted.
  - Only what differs is written, each patch carrying the C(resourceVersion) it was planned from; a second run
    changes nothing. A VM keeps the revision of the instancetype it started with (KubeVirt stores it in a
    C(ControllerRevision)), so a changed definition reaches new VMs and VMs moved onto it again
    (M(overcommit.control.kubevirt_vm_resources) with O(overcommit.control.kubevirt_vm_resources#module:instancetype)).
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
    details: Every create, patch and delete is sent to the API server as a dry run (C(dryRun=All)), so KubeVirt's
      CRD schemas validate it and nothing is stored.
  diff_mode:
    support: full
options:
  classes:
    description:
      - The class definitions. With O(state=absent) only C(name) is needed.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Name of the instancetype and of the preference, a DNS subdomain such as V(shared-2c4g).
        type: str
        required: true
      class:
        description: The class of the product.
        type: str
        choices: [dedicated, shared, burstable]
      cpus:
        description: vCPUs the guest sees (C(spec.cpu.guest)), 1-512.
        type: int
      memory:
        description: Memory the guest sees, a quantity such as V(4Gi) (C(spec.memory.guest)).
        type: str
      memory_overcommit_percent:
        description:
          - C(spec.memory.overcommitPercent), the share of the guest memory the launcher does not request; 0 (none)
            by default and for V(dedicated), at most O(max_memory_overcommit_percent).
        type: int
      baseline_cpus:
        description: The CPUs a V(burstable) VM may use at all times, above 0 and under O(classes[].cpus); required
          for V(burstable) and refused for the other classes.
        type: float
  state:
    description:
      - V(present) creates or updates the objects; V(absent) deletes those the collection made.
    type: str
    choices: [present, absent]
    default: present
  max_memory_overcommit_percent:
    description:
      - The most C(overcommitPercent) a definition may have; 50 means the guest sees at most twice what its launcher
        requests (the KubeVirt CR's scale would say 200).
    type: int
    default: 50
  prefix:
    description:
      - The key prefix of the class label and the baseline annotation.
    type: str
    default: overcommit.control/
"""

EXAMPLES = r"""
- name: Sell three products
  overcommit.control.kubevirt_instancetype:
    classes:
      - {name: dedicated-4c8g, class: dedicated, cpus: 4, memory: 8Gi}
      - {name: shared-2c4g, class: shared, cpus: 2, memory: 4Gi, memory_overcommit_percent: 25}
      - {name: burstable-2c2g, class: burstable, cpus: 2, memory: 2Gi, baseline_cpus: 0.5}

- name: Withdraw one
  overcommit.control.kubevirt_instancetype:
    state: absent
    classes:
      - name: shared-2c4g
"""

RETURN = r"""
classes:
  description: One result per definition, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The definition's name (of its instancetype and preference).
      type: str
    class:
      description: Its class (with O(state=present)).
      type: str
    changed:
      description: Whether either object was (or in check mode would be) created, changed or deleted.
      type: bool
    failed:
      description: Present and true when this definition failed or was refused; the others were still handled.
      type: bool
    msg:
      description: Why it failed.
      type: str
    instancetype:
      description: C(kind) and C(action) (created, updated, deleted, unchanged, absent) of the instancetype.
      type: dict
    preference:
      description: The same for the preference.
      type: dict
    resources:
      description: What a VM of the class gets - C(vcpus), C(dedicated_cpu_placement), C(cpu_request), C(memory_guest),
        C(memory_request) (what its launcher requests for the guest), C(memory_overcommit_percent),
        C(equivalent_memory_overcommit) (the same on the KubeVirt CR's scale), C(baseline_cpus), C(credit_bank).
      type: dict
    before:
      description: Per object (C(instancetype), C(preference)) its class label, baseline annotation and spec before
        the task, or null when it did not exist.
      type: dict
    after:
      description: The same after the task.
      type: dict
  sample:
    - name: shared-2c4g
      class: shared
      changed: true
      instancetype: {kind: VirtualMachineClusterInstancetype, action: created}
      preference: {kind: VirtualMachineClusterPreference, action: created}
      resources: {vcpus: 2, dedicated_cpu_placement: false, cpu_request: "2 / cpuAllocationRatio of the KubeVirt CR",
                  memory_guest: 4Gi, memory_request: 3Gi, memory_overcommit_percent: 25,
                  equivalent_memory_overcommit: 133.3, baseline_cpus: null, credit_bank: null}
summary:
  description: Names per outcome (changed, unchanged, failed with the reason), and one line per definition.
  returned: always
  type: dict
"""

from ansible_collections.overcommit.control.plugins.module_utils.common.fleet import exit_fleet
from ansible_collections.overcommit.control.plugins.module_utils.domain import memory, vm_class
from ansible_collections.overcommit.control.plugins.module_utils.k8s.metadata import DEFAULT_PREFIX
from ansible_collections.overcommit.control.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.overcommit.control.plugins.module_utils.k8s.static import instancetypes
from ansible_collections.overcommit.control.plugins.module_utils.k8s.static.instancetype_runner import (
    InstancetypeRunner)


def main():
    module = K8sModule(
        dict(
            classes=dict(type="list", elements="dict", required=True, options=dict(
                name=dict(type="str", required=True),
                # "class" is the name people use; the spec key only follows it.
                **{"class": dict(type="str", choices=list(vm_class.CLASSES))},
                cpus=dict(type="int"),
                memory=dict(type="str"),
                memory_overcommit_percent=dict(type="int"),
                baseline_cpus=dict(type="float"),
            )),
            state=dict(type="str", default="present", choices=list(instancetypes.STATES)),
            max_memory_overcommit_percent=dict(type="int", default=memory.DEFAULT_MAX_OVERCOMMIT_PERCENT),
            prefix=dict(type="str", default=DEFAULT_PREFIX),
        ),
        failed={"classes": []},
    )
    request = module.checked(instancetypes.check_request)
    results = module.with_client(lambda client: InstancetypeRunner(client, request).run())
    exit_fleet(module, results, "class", "classes",
               describe=lambda result: instancetypes.report_line(result, module.check_mode))


if __name__ == "__main__":
    main()
