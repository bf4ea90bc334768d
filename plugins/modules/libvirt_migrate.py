#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: libvirt_migrate
short_description: Move running libvirt domains live to another host, as relief, keeping the collection's records
version_added: 0.1.1
description:
  - Moves running domains of this host live to the host libvirtd reaches at O(target_uri), one at a time, as the
    relief when brakes cannot help (a culprit at its floor while its neighbours still wait, or a host overloaded
    with no culprit). The control policy only proposes such moves (the C(proposals) of a plan or a cycle, with
    the VM, the target and why); a person or a playbook decides, and the closed loop never moves a VM.
  - Every move is judged before any is made, on the target as it is (its CPUs and the domains libvirt lists
    there) and counting the moves judged before it. A move is refused, and the domain left as it is, when it
    cannot work or would break a promise the collection keeps - the domain is shut off, the target is the host it
    runs on (by libvirt's host UUID) or already has a domain of that name, it is V(dedicated) and pinned to CPUs
    the target lacks, or the target has no room by the collection's accounting (the CPUs its running domains are
    promised - a dedicated one its vCPUs, a shared or burstable one its floor - plus this one's would exceed its
    CPUs, or its vCPUs per CPU would pass O(max_vcpu_ratio)).
  - The move is peer to peer - this host's libvirtd opens O(target_uri) with its own credentials - and by default
    tunnelled through that connection, so the hosts need one port between them (SSH for C(qemu+ssh), libvirt's
    own for C(qemu+tls)). The domain is defined on the target with its stored definition and undefined here.
    Its disks must be on storage both hosts see (libvirt refuses a move of a writable disk on local storage).
  - The collection's records live in the domain's own metadata (class, throttle record, policy state, kill
    switch) and travel with it, as does its CPU tuning (a throttle stays in force). After each move the module
    reads the domain on the target and fails it, naming what, if any of them did not arrive as it left;
    M(overcommit.control.libvirt_cputune) with O(overcommit.control.libvirt_cputune#module:state=restored) then
    restores it there as it would here.
  - A domain that is not defined here but runs on the target has moved already - it is reported unchanged, with
    C(already), whatever O(missing) says; a rerun after a move changes nothing. The C(overcommit.control.apply_plan)
    role's C(migrate) actions rely on it.
  - A move libvirt could not make leaves the domain running here (libvirt's own rollback); it is reported as that
    domain's failure and the next ones still go. The task fails when any domain was refused or failed.
author:
  - overcommit.control maintainers (@overcommit)
extends_documentation_fragment:
  - overcommit.control.libvirt
  - overcommit.control.attributes
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.actiongroups
attributes:
  check_mode:
    details: Judges every move and reports what would move; nothing moves.
  diff_mode:
    support: none
options:
  domains:
    description:
      - Names of the running domains to move, in the order they are moved.
      - Names are matched exactly; a name that is empty or has surrounding spaces fails the task, naming the option
        and the element, before anything is read.
    type: list
    elements: str
    required: true
    aliases: [names]
  target_uri:
    description:
      - The libvirt URI of the target host as this host's libvirtd reaches it, for example
        C(qemu+ssh://migrate@hv-2.example.com/system) or C(qemu+tls://hv-2.example.com/system). The module reads the
        target through it too, as the user running the module.
      - A local URI (C(qemu:///system)) is refused, as it would name this host.
    type: str
    required: true
  target_name:
    description:
      - What the report calls the target host. Defaults to the target's hostname as libvirt reports it.
    type: str
  tunnelled:
    description:
      - Send the guest's memory through libvirt's connection to the target (one port between the hosts). V(false)
        lets QEMU connect to the target directly, on the migration ports libvirtd gives (49152 and up), which must
        then be open between the hosts.
    type: bool
    default: true
  floor_fraction:
    description:
      - The share of its vCPUs a shared or burstable domain is promised, for the target's room (the policy's
        C(floor_fraction)). A burstable domain's baseline counts instead where it has one.
    type: float
    default: 0.25
  max_vcpu_ratio:
    description:
      - Most vCPUs per CPU the target may run after the move (its running domains' vCPUs and this one's). Unset,
        only the promises count.
    type: float
  missing:
    description:
      - What a name that is not defined on this host is. V(fail) reports it as a failed domain; V(ignore) reports it
        as skipped, for fleet runs that name every domain on every host.
    type: str
    choices: [fail, ignore]
    default: fail
  class_namespace:
    description:
      - XML namespace of the class element in the domains' C(<metadata>), as for
        M(overcommit.control.libvirt_vm_class).
    type: str
    default: https://overcommit.control/xmlns/vm/1
  lock_dir:
    description:
      - Folder of the per-domain lock files, shared with
        O(overcommit.control.libvirt_cputune#module:lock_dir), so that a cycle or a throttle does not write a domain while
        it moves. Not taken in check mode.
    type: path
    default: /run/lock/overcommit-control
requirements:
  - libvirt-python on the host that runs the module, and access to the target's libvirtd for both this host's
    libvirtd and the user running the module
"""

EXAMPLES = r"""
- name: Move the noisy VM off hv-1 to hv-2, over SSH between the hosts
  overcommit.control.libvirt_migrate:
    domains: [batch-3]
    target_uri: qemu+ssh://migrate@hv-2.example.com/system
  delegate_to: hv-1.example.com

- name: Only say whether two VMs could move, and why not
  overcommit.control.libvirt_migrate:
    domains: [web-17, web-18]
    target_uri: qemu+tls://hv-2.example.com/system
    max_vcpu_ratio: 4
  check_mode: true
"""

RETURN = r"""
summary:
  description: Names of the domains per outcome, and one line per domain for people.
  returned: always
  type: dict
  contains:
    report:
      description: One line per domain handled; names not defined on the host are only counted.
      type: list
      elements: str
      sample: ["batch-3: moved from hv-1 to hv-2, records carried", "web-17: not moved: no room on hv-2 ..."]
    changed:
      description: Domains moved (or that would be, in check mode).
      type: list
      elements: str
    unchanged:
      description: Always empty here (a domain either moves, is refused or fails).
      type: list
      elements: str
    skipped:
      description: Names not defined on the host, with O(missing=ignore).
      type: list
      elements: str
    conflict:
      description: Always empty here (the shape every fleet module's summary has).
      type: list
      elements: str
    failed:
      description: Domain name to why it was refused or failed.
      type: dict
domains:
  description: One result per domain, in the order of O(domains).
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Domain name.
      type: str
    changed:
      description: Whether the domain moved (or in check mode would move).
      type: bool
    failed:
      description: Present and true when the move was refused or failed; the other domains were still handled.
      type: bool
    refused:
      description: Present and true when the move was refused before anything changed.
      type: bool
    skipped:
      description: Present and true when the name is not defined on the host and O(missing=ignore).
      type: bool
    already:
      description: Present and true when the domain is not here but runs on the target (moved already).
      type: bool
    msg:
      description: Why the domain was refused, failed or skipped.
      type: str
    source:
      description: This host's name, as libvirt reports it.
      type: str
    target:
      description: The target's name (O(target_name) or its hostname).
      type: str
    persistent:
      description: Whether the domain has a stored definition (carried to the target).
      type: bool
    records:
      description: The collection's records on the domain as it left (C(class), C(throttle), C(policy),
        C(paused)), as M(overcommit.control.libvirt_cputune_info) reports them.
      type: dict
    lost:
      description: Present when the domain moved but parts did not arrive as they left (C(live records),
        C(live tuning), C(stored records), C(stored tuning)).
      type: list
      elements: str
  sample:
    - name: batch-3
      changed: true
      source: hv-1
      target: hv-2
      persistent: true
      records: {class: shared, throttle: {reason: "contain: ...", cpus: 0.5}, policy: null, paused: false}
"""

from ansible_collections.overcommit.control.plugins.module_utils.common.fleet import exit_fleet
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.domain_xml import CLASS_NAMESPACE
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.lock import DEFAULT_LOCK_DIR
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.migrate import check_request, report_line
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.module import LibvirtModule
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.migrate_runner import (
    DomainMigrateRunner, connect_target)


def main():
    module = LibvirtModule(
        dict(
            domains=dict(type="list", elements="str", required=True, aliases=["names"]),
            target_uri=dict(type="str", required=True),
            target_name=dict(type="str"),
            tunnelled=dict(type="bool", default=True),
            floor_fraction=dict(type="float", default=0.25),
            max_vcpu_ratio=dict(type="float"),
            missing=dict(type="str", default="fail", choices=["fail", "ignore"]),
            class_namespace=dict(type="str", default=CLASS_NAMESPACE),
            lock_dir=dict(type="path", default=DEFAULT_LOCK_DIR),
        ),
        name_fields=("domains",),
    )
    request = module.checked(lambda params: check_request(params, module.check_mode))

    def work(client):
        target_client = connect_target(request["target_uri"])
        try:
            return DomainMigrateRunner(client, request, target_client).run()
        finally:
            target_client.close()
    results = module.with_client(work)
    exit_fleet(module, results, "domain", "domains", describe=lambda result: report_line(result, module.check_mode))


if __name__ == "__main__":
    main()
