#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: vsphere_vm_reservation
short_description: Set and restore CPU and memory reservations, limits and shares of many vSphere VMs
version_added: 0.1.0
description:
  - Sets the CPU and memory reservation, limit and shares of many VMs in one task over one login, and
    restores exactly what was there before. Typical use is reserving CPU and memory on ESXi for the VMs
    that are Kubernetes nodes, so the hypervisor's overcommit cannot starve them.
  - VMs are selected by name, BIOS or instance UUID, managed object id, folder or cluster, all looked up
    in one property-collector query; a name, UUID or id that matches no VM is reported on its own.
  - Only a VM whose values differ is reconfigured, in one C(ReconfigVM_Task) per VM carrying the whole allocation
    (reservation, limit and shares, as read, with the changes) of each resource that changes, so a host that resets
    the members left out of an allocation keeps the others; the task is guarded by the C(changeVersion)
    the change was planned against; the changeVersions are re-read in one query just before writing, and a VM
    changed in between is refused rather than overwritten. Reservations, limits and shares apply to running
    VMs, and no VM is ever powered off or on.
  - On the first change the values it replaces are recorded on the VM in a custom attribute (O(attribute)),
    with the reason, time and requester; O(state=restored) returns exactly those and clears the record.
    Later changes keep the first prior values. Restoring a VM that has no record changes nothing.
  - Every option value is checked before anything is read; each VM's resulting allocation is checked
    (limit at least the reservation, CPU reservation within vCPUs x host core speed, memory reservation
    within the configured memory) before any VM is changed. One VM failing neither hides nor stops the
    others; the task then fails and lists each failure.
author:
  - overcommit.control maintainers (@overcommit)
extends_documentation_fragment:
  - overcommit.control.vsphere
  - overcommit.control.attributes
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.actiongroups
options:
  vms:
    description:
      - Names of the VMs to act on. A name that several VMs share is reported as ambiguous; use O(uuids)
        or O(moids) for those.
      - At least one of O(vms), O(uuids), O(moids), O(folders) or O(clusters) is required; an empty list
        given on purpose selects nothing.
      - Every entry of O(vms), O(uuids), O(moids), O(folders) and O(clusters) is matched exactly; one that is empty or
        has surrounding spaces (a list written as one string, C("vm-1, vm-2")) fails the task, naming the option and the
        element, before anything is changed.
    type: list
    elements: str
    aliases: [names]
  uuids:
    description:
      - BIOS UUIDs (C(config.uuid)) or instance UUIDs (C(config.instanceUuid)) of VMs to act on.
    type: list
    elements: str
  moids:
    description:
      - Managed object ids of VMs to act on, for example C(vm-1042).
    type: list
    elements: str
  folders:
    description:
      - Act on every VM in these VM folders and their subfolders, given by inventory path, for example
        C(/DC1/vm/k8s-nodes).
    type: list
    elements: str
  clusters:
    description:
      - Act on every VM registered on a host of these clusters, given by name or inventory path.
    type: list
    elements: str
  state:
    description:
      - V(present) sets the values given; V(restored) returns the values recorded before the first change.
    type: str
    choices: [present, restored]
    default: present
  cpu:
    description:
      - CPU allocation to set. Fields not given are left as they are.
    type: dict
    suboptions:
      reservation:
        description: Guaranteed CPU in MHz, 0 or more, at most vCPUs x the host's core speed.
        type: int
      limit:
        description: Most CPU the VM may use in MHz, at least the reservation, or V(-1) for no limit.
        type: int
      shares_level:
        description: Relative priority under contention; V(custom) needs O(cpu.shares).
        type: str
        choices: [low, normal, high, custom]
      shares:
        description: Custom number of shares (implies O(cpu.shares_level=custom)).
        type: int
  memory:
    description:
      - Memory allocation to set. Fields not given are left as they are.
    type: dict
    suboptions:
      reservation:
        description: Guaranteed memory in MB, 0 or more, at most the VM's configured memory.
        type: int
      limit:
        description: Most memory the VM may use in MB, at least the reservation, or V(-1) for no limit.
        type: int
      shares_level:
        description: Relative priority under contention; V(custom) needs O(memory.shares).
        type: str
        choices: [low, normal, high, custom]
      shares:
        description: Custom number of shares (implies O(memory.shares_level=custom)).
        type: int
  memory_reservation_locked_to_max:
    description:
      - Reserve all of the VM's memory, following later memory changes (C(memoryReservationLockedToMax)).
        vSphere then sets the memory reservation itself; a different O(memory.reservation) is refused.
    type: bool
  change_versions:
    description:
      - The C(changeVersion) each VM is expected to have, by name or managed object id, for example the
        C(change_version) a check-mode run reported for a plan that was then reviewed. A VM whose
        changeVersion differs is refused and left unchanged.
    type: dict
    default: {}
  attribute:
    description:
      - Name of the VM custom attribute that keeps the record of the values replaced. It is created on first
        use (this needs the Global.ManageCustomFields privilege).
    type: str
    default: overcommit.control.reservation
  reason:
    description:
      - Why the change is made; kept in the record (its first 120 characters).
    type: str
  requested_by:
    description:
      - Who asked for the change; kept in the record. Defaults to the user running the module.
    type: str
  parallel_tasks:
    description:
      - How many reconfigure tasks run at once.
    type: int
    default: 16
notes:
  - Units are MHz for CPU and MB for memory, as in the vSphere API.
seealso:
  - module: overcommit.control.vsphere_overcommit_info
"""

EXAMPLES = r"""
- name: Reserve CPU and memory for the Kubernetes node VMs
  overcommit.control.vsphere_vm_reservation:
    hostname: vcenter.example.com
    username: automation@vsphere.local
    password: "{{ vcenter_password }}"
    folders: [/DC1/vm/k8s-nodes]
    cpu:
      reservation: 4000
      shares_level: high
    memory:
      reservation: 16384
    reason: "CHG-1182 protect node VMs from ESXi overcommit"

- name: Cap two noisy VMs, found by UUID
  overcommit.control.vsphere_vm_reservation:
    uuids:
      - 4212f0a4-6a0e-2b9c-7f1d-3c1e8f0b9a11
      - 4212d2aa-08c3-51f0-9f44-0d6a4c7e2b3c
    cpu:
      limit: 2000

- name: Put them back exactly as they were
  overcommit.control.vsphere_vm_reservation:
    folders: [/DC1/vm/k8s-nodes]
    state: restored
"""

RETURN = r"""
vms:
  description: One result per VM, in the order they were selected.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: VM name (or the selector that matched nothing).
      type: str
    moid:
      description: Managed object id of the VM.
      type: str
    uuid:
      description: BIOS UUID of the VM.
      type: str
    power_state:
      description: Power state of the VM (never changed by this module).
      type: str
    changed:
      description: Whether this VM was (or in check mode would be) changed.
      type: bool
    failed:
      description: Present and true when this VM failed; the other VMs were still handled.
      type: bool
    msg:
      description: Why this VM failed.
      type: str
    field:
      description: The option or record field a refusal is about.
      type: str
    change_version:
      description: The C(changeVersion) the change was planned against.
      type: str
    sent:
      description: What was sent (or in check mode would be sent) in the reconfigure, the whole allocation of each
        resource that changes.
      type: dict
    before:
      description: C(cpu), C(memory), C(memory_reservation_locked_to_max) and the C(record) before the task.
      type: dict
    after:
      description: The same after the task.
      type: dict
    record:
      description: The record now on the VM (prior values, reason, time, requester), or null.
      type: dict
  sample:
    - name: k8s-node-3
      moid: vm-1042
      changed: true
      sent: {cpu: {reservation: 4000, limit: -1, shares_level: normal, shares: 2000}}
      before: {cpu: {reservation: 0, limit: -1, shares_level: normal, shares: 2000}, record: null}
      after: {cpu: {reservation: 4000, limit: -1, shares_level: normal, shares: 2000},
              record: {v: 1, prior: {cpu.reservation: 0}, by: ops, at: "2026-01-01T00:00:00Z"}}
"""

from ansible_collections.overcommit.control.plugins.module_utils.common.fleet import exit_fleet
from ansible_collections.overcommit.control.plugins.module_utils.common.record import requester, utc_now
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.module import VsphereModule
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.reservation import DEFAULT_ATTRIBUTE, check_request
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.reservation_runner import ReservationRunner


def allocation_options():
    return dict(type="dict", options=dict(
        reservation=dict(type="int"),
        limit=dict(type="int"),
        shares_level=dict(type="str", choices=["low", "normal", "high", "custom"]),
        shares=dict(type="int"),
    ))


def main():
    module = VsphereModule(
        dict(
            vms=dict(type="list", elements="str", aliases=["names"]),
            uuids=dict(type="list", elements="str"),
            moids=dict(type="list", elements="str"),
            folders=dict(type="list", elements="str"),
            clusters=dict(type="list", elements="str"),
            state=dict(type="str", default="present", choices=["present", "restored"]),
            cpu=allocation_options(),
            memory=allocation_options(),
            memory_reservation_locked_to_max=dict(type="bool"),
            change_versions=dict(type="dict", default={}),
            attribute=dict(type="str", default=DEFAULT_ATTRIBUTE),
            reason=dict(type="str"),
            requested_by=dict(type="str"),
            parallel_tasks=dict(type="int", default=16),
        ),
        name_fields=("vms", "uuids", "moids", "folders", "clusters"),
        required_one_of=[("vms", "uuids", "moids", "folders", "clusters")],
    )
    request = module.checked(lambda params: check_request(params, module.check_mode))
    now, requested_by = utc_now(), requester(module.params)
    results = module.with_client(lambda client: ReservationRunner(client, request, now, requested_by).run())
    exit_fleet(module, results, "vm", "vms")


if __name__ == "__main__":
    main()
