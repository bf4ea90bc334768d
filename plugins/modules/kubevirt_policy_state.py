#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kubevirt_policy_state
short_description: Keep the control policy's state and the kill switch on many KubeVirt VMs
version_added: 0.1.0
description:
  - Keeps, on each KubeVirt VM itself, what the control loop carries from one cycle to the next (the policy's
    per-VM state) and the per-VM kill switch, so that any runner can run the next cycle. The counterpart of
    M(overcommit.control.libvirt_policy_state) for KubeVirt; M(overcommit.control.kubevirt_vm_cpu_info) reports
    both per VM as C(policy) and C(paused).
  - The state is the annotation C(<prefix>policy) on the VirtualMachineInstance (compact JSON, sorted keys), as
    on nodes. The kill switch is the label C(<prefix>paused=true) on the VirtualMachine that owns the VMI (a restart
    keeps it), or on the VMI when it has no VirtualMachine; clearing it removes it from both.
  - Only what differs is written, each write carrying the C(resourceVersion) it was planned from. Every option is
    checked before anything is read; one VM failing neither hides nor stops the others.
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
    details: Every write is sent to the API server as a dry run (C(dryRun=All)).
  diff_mode:
    support: none
options:
  states:
    description:
      - C(namespace/name) of a VMI to the policy state to keep on it (a mapping of JSON values, as the policy
        returns it per VM), or null (or an empty mapping) to remove the state kept there.
    type: dict
  names:
    description:
      - The VMs (C(namespace/name)) whose kill switch O(paused) sets or clears.
      - A name that is empty, has surrounding spaces or is not C(namespace/name) fails the task, naming the option
        and the element, before anything is read.
    type: list
    elements: str
    default: []
  paused:
    description:
      - V(true) sets the kill switch on O(names) (the control loop takes no automatic action on them); V(false)
        clears it. At least one of O(states) and O(paused) is required.
    type: bool
  missing:
    description:
      - What a VMI that does not exist is. V(fail) reports it as a failed VM; V(ignore) as skipped (a VM stopped
        since it was read).
    type: str
    choices: [fail, ignore]
    default: fail
  prefix:
    description:
      - The key prefix of the annotation and the label.
    type: str
    default: overcommit.control/
"""

EXAMPLES = r"""
- name: Keep what this cycle decided on the VMs it decided about
  overcommit.control.kubevirt_policy_state:
    states:
      tenant-a/web-17: {cap: 0.5, rule: contain, capped_at: 1714557600, hist: "11"}
      tenant-a/web-18: null

- name: Stop every automatic action on a VM (the kill switch)
  overcommit.control.kubevirt_policy_state:
    names: [tenant-a/web-17]
    paused: true
"""

RETURN = r"""
vms:
  description: One result per VM, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: C(namespace/name) of the VMI.
      type: str
    changed:
      description: Whether the VMI or its VirtualMachine was (or in check mode would be) changed.
      type: bool
    failed:
      description: Present and true when this VM failed; the others were still handled.
      type: bool
    skipped:
      description: Present and true when the VMI does not exist and O(missing=ignore).
      type: bool
    msg:
      description: Why this VM failed or was skipped.
      type: str
    policy:
      description: The policy state now kept on the VMI, or null; only when O(states) names the VM.
      type: dict
    paused:
      description: Whether the kill switch is now set; only when O(names) names the VM.
      type: bool
  sample:
    - name: tenant-a/web-17
      changed: true
      policy: {cap: 0.5, rule: contain}
summary:
  description: Names per outcome (changed, unchanged, skipped, failed with the reason), and one line per VM.
  returned: always
  type: dict
"""

from ansible_collections.overcommit.control.plugins.module_utils.common.fleet import exit_fleet
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import policy_state
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.policy_state_runner import VmiPolicyStateRunner
from ansible_collections.overcommit.control.plugins.module_utils.k8s.metadata import DEFAULT_PREFIX, policy_state_line
from ansible_collections.overcommit.control.plugins.module_utils.k8s.module import K8sModule


def main():
    module = K8sModule(
        dict(
            states=dict(type="dict"),
            names=dict(type="list", elements="str", default=[]),
            paused=dict(type="bool"),
            missing=dict(type="str", default="fail", choices=list(policy_state.MISSING)),
            prefix=dict(type="str", default=DEFAULT_PREFIX),
        ),
        failed={"vms": []},
        name_fields=("names",),
    )
    request = module.checked(policy_state.check_request)
    results = module.with_client(lambda client: VmiPolicyStateRunner(client, request).run())
    exit_fleet(module, results, "VM", "vms", describe=lambda result: policy_state_line(result, module.check_mode))


if __name__ == "__main__":
    main()
