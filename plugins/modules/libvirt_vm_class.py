#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: libvirt_vm_class
short_description: Assign the VM class (dedicated, shared, burstable) to many libvirt domains
version_added: 0.1.0
description:
  - Keeps the class of many libvirt domains per task in their metadata, so that a fleet can be classified from the
    inventory. M(overcommit.control.libvirt_cputune) refuses to brake a V(dedicated) domain (unless forced) and never
    caps a domain under its class's floor; the control policy (roles C(overcommit.control.recommend) and
    C(overcommit.control.closed_loop)) takes the class, and a burstable domain's baseline, from there;
    M(overcommit.control.libvirt_cputune_info) reports both (C(declared_class), C(baseline_cpus)).
  - "The element is C(<vm><class>burstable</class><baseline>0.5</baseline></vm>) in the namespace O(class_namespace)
    (prefix C(oc)), the one the lab's and the collection's domain definitions use."
  - Only what differs is written; a second run with the same classes changes nothing. Every option is checked
    before anything is read; one domain failing (unknown, shut off with O(apply=live), a baseline at or above its
    vCPUs) neither hides nor stops the others, and the task then fails listing each failure.
  - A class says how a domain is treated; it does not pin vCPUs. Pinning (C(<cputune><vcpupin>)) makes a domain
    dedicated whatever its class says.
author:
  - overcommit.control maintainers (@overcommit)
extends_documentation_fragment:
  - overcommit.control.libvirt
  - overcommit.control.attributes
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.actiongroups
attributes:
  diff_mode:
    support: none
options:
  classes:
    description:
      - Domain name to its class, V(dedicated), V(shared) or V(burstable), or null to remove the class (the domain is
        then treated as shared).
      - A name that is empty or has surrounding spaces, or a class that is none of these, fails the task naming
        C(classes.<name>) before anything is read.
    type: dict
    required: true
  baselines:
    description:
      - Domain name to the CPUs a V(burstable) domain may use at all times (its baseline; it earns credits under it
        and spends them above it). Only for domains O(classes) makes burstable; under the domain's vCPUs.
      - A burstable domain without a baseline gets the class's floor share of its vCPUs.
    type: dict
  apply:
    description:
      - Where the class is written. V(auto) is V(both) for a running persistent domain (a guest restart keeps it),
        V(live) for a running transient one and V(config) for a shut-off one.
    type: str
    choices: [auto, live, config, both]
    default: auto
  missing:
    description:
      - What a name that is not defined on the host is. V(fail) reports it as a failed domain; V(ignore) reports
        it as skipped, for fleet runs that name every target on every host.
    type: str
    choices: [fail, ignore]
    default: fail
  class_namespace:
    description:
      - XML namespace of the class element in the domains' metadata.
    type: str
    default: https://overcommit.control/xmlns/vm/1
"""

EXAMPLES = r"""
- name: Classify this host's domains from the inventory
  overcommit.control.libvirt_vm_class:
    classes: "{{ vm_classes }}"        # e.g. {db-1: dedicated, web-17: shared, batch-3: burstable}
    baselines:
      batch-3: 0.5

- name: Take the class off a domain
  overcommit.control.libvirt_vm_class:
    classes:
      web-17: null
"""

RETURN = r"""
domains:
  description: One result per domain, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The domain's name.
      type: str
    changed:
      description: Whether the class was (or in check mode would be) written.
      type: bool
    failed:
      description: Present and true when this domain failed; the others were still handled.
      type: bool
    skipped:
      description: Present and true when the name is not defined on the host and O(missing=ignore).
      type: bool
    msg:
      description: Why this domain failed or was skipped.
      type: str
    class:
      description: The class the domain now has (null for none).
      type: str
    baseline:
      description: The burstable baseline it now has, in CPUs, or null.
      type: float
    before:
      description: Per target written (C(live), C(config)) the C(class) and C(baseline) before the task.
      type: dict
    after:
      description: The same after the task.
      type: dict
  sample:
    - name: batch-3
      changed: true
      class: burstable
      baseline: 0.5
      before: {live: {class: shared, baseline: null}, config: {class: shared, baseline: null}}
      after: {live: {class: burstable, baseline: 0.5}, config: {class: burstable, baseline: 0.5}}
summary:
  description: Names per outcome (changed, unchanged, skipped, failed with the reason), and one line per domain.
  returned: always
  type: dict
"""

from ansible_collections.overcommit.control.plugins.module_utils.common.fleet import exit_fleet
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import classify
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.classify_runner import ClassRunner
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.domain_xml import CLASS_NAMESPACE
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.module import LibvirtModule


def main():
    module = LibvirtModule(
        dict(
            classes=dict(type="dict", required=True),
            baselines=dict(type="dict"),
            apply=dict(type="str", default="auto", choices=["auto", "live", "config", "both"]),
            missing=dict(type="str", default="fail", choices=["fail", "ignore"]),
            class_namespace=dict(type="str", default=CLASS_NAMESPACE),
        ),
        failed={"domains": []},
    )
    request = module.checked(lambda params: classify.check_request(params, module.check_mode))
    results = module.with_client(lambda client: ClassRunner(client, request).run())
    exit_fleet(module, results, "domain", "domains",
               describe=lambda result: classify.report_line(result, module.check_mode))


if __name__ == "__main__":
    main()
