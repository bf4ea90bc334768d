#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kubevirt_vm_migrate
short_description: Ask KubeVirt to move running VMs live to another node
version_added: 0.1.0
description:
  - Creates a C(VirtualMachineInstanceMigration) for each running VirtualMachineInstance of O(names), optionally
    steering it to O(target_node) (the migration's C(addedNodeSelector) on the node label
    C(kubernetes.io/hostname)); KubeVirt carries the move out. The counterpart of
    M(overcommit.control.libvirt_migrate) for KubeVirt, as the relief when brakes cannot help. The control policy
    only proposes moves; a person or a playbook decides, and the closed loop never moves a VM.
  - Each move is judged first, on what the API shows, and refused before anything is created when it cannot
    work - the VMI is not C(Running), KubeVirt's C(LiveMigratable) condition is false (with its reason), or
    O(target_node) is not a node of the cluster. The collection's kill switch holds the closed loop back, not a
    person, so a move asked for with this module is judged like any other.
  - A VMI with a migration KubeVirt has not finished, or already on O(target_node), is reported unchanged with
    C(already) and the reason; a rerun asks for nothing more.
  - The collection's records stay on the VMI, which is the same object after the move. A CPU brake
    (M(overcommit.control.kubevirt_vm_cpu_limit)) is on the launcher pod the move replaces; the VMI's records
    bring it onto the new pod with O(overcommit.control.kubevirt_vm_cpu_limit#module:state=reconciled), as after
    any migration.
  - The module returns once KubeVirt has the request; it does not wait for the move to end (the migration's
    C(status.phase) says how it went).
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
    details: Each migration object is sent to the API server as a dry run (C(dryRun=All)) and not stored.
  diff_mode:
    support: none
options:
  namespace:
    description: The namespace of the VMIs.
    type: str
    required: true
  names:
    description:
      - Names of the running VirtualMachineInstances to move (a VMI has its VM's name).
      - A name that is empty, has surrounding spaces or is given twice fails the task, naming the option and the
        element, before anything is read.
    type: list
    elements: str
    required: true
  target_node:
    description:
      - The node to move them to. When unset, KubeVirt's scheduler picks the target as for any migration.
    type: str
  reason:
    description: Why they move, kept as the annotation C(<prefix>migrate-reason) on each migration object.
    type: str
  missing:
    description:
      - What a VMI that does not exist is. V(fail) reports it as failed; V(ignore) as skipped.
    type: str
    choices: [fail, ignore]
    default: fail
  prefix:
    description: The key prefix of the collection's labels and annotations.
    type: str
    default: overcommit.control/
notes:
  - Needs C(create) and C(list) on C(virtualmachineinstancemigrations.kubevirt.io), C(get) on
    C(virtualmachineinstances.kubevirt.io), and with O(target_node) C(get) on C(nodes).
"""

EXAMPLES = r"""
- name: Move a noisy VM off its node, to a node with room
  overcommit.control.kubevirt_vm_migrate:
    namespace: tenant-a
    names: [batch-3]
    target_node: worker-7
    reason: "INC-4711: victims still wait with batch-3 at its floor"

- name: What would be asked (a server-side dry run)
  overcommit.control.kubevirt_vm_migrate:
    namespace: tenant-a
    names: [batch-3, web-17]
  check_mode: true
"""

RETURN = r"""
vms:
  description: One result per VMI, in the order of O(names).
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: VMI name.
      type: str
    changed:
      description: Whether a migration was asked for (or in check mode would be).
      type: bool
    migration:
      description: The name of the C(VirtualMachineInstanceMigration) created (in check mode, the name the dry run
        gave).
      type: str
    node:
      description: The node the VMI ran on.
      type: str
    target_node:
      description: O(target_node), when given.
      type: str
    already:
      description: Present and true when a move is under way or the VMI is on O(target_node) already.
      type: bool
    refused:
      description: Present and true when the move was refused before anything was created.
      type: bool
    failed:
      description: Present and true when the VMI was refused, not found or the API failed for it.
      type: bool
    skipped:
      description: Present and true when the VMI is not there and O(missing=ignore).
      type: bool
    msg:
      description: Why the VMI was refused, failed, skipped or left as it is.
      type: str
  sample:
    - name: batch-3
      changed: true
      migration: batch-3-move-x7k2p
      node: worker-2
      target_node: worker-7
summary:
  description: Names per outcome (changed, unchanged, skipped, failed with the reason), and one line per VMI.
  returned: always
  type: dict
"""

from ansible_collections.overcommit.control.plugins.module_utils.common.fleet import exit_fleet
from ansible_collections.overcommit.control.plugins.module_utils.k8s.metadata import DEFAULT_PREFIX
from ansible_collections.overcommit.control.plugins.module_utils.k8s.migrate import request as migrate
from ansible_collections.overcommit.control.plugins.module_utils.k8s.migrate.runner import VmiMigrateRunner
from ansible_collections.overcommit.control.plugins.module_utils.k8s.module import K8sModule


def main():
    module = K8sModule(
        dict(
            namespace=dict(type="str", required=True),
            names=dict(type="list", elements="str", required=True),
            target_node=dict(type="str"),
            reason=dict(type="str"),
            missing=dict(type="str", default="fail", choices=list(migrate.MISSING)),
            prefix=dict(type="str", default=DEFAULT_PREFIX),
        ),
        failed={"vms": []},
        name_fields=("names",),
    )
    request = module.checked(migrate.check_request)
    results = module.with_client(lambda client: VmiMigrateRunner(client, request).run())
    exit_fleet(module, results, "VM", "vms", describe=lambda result: migrate.report_line(result, module.check_mode))


if __name__ == "__main__":
    main()
