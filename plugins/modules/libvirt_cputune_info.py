#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: libvirt_cputune_info
short_description: CPU tuning, class, throttle record and measured usage of many libvirt domains
version_added: 0.1.0
description:
  - For many domains in one call, reports live and persistent CPU tuning, vCPUs, pinning, the
    effective class, the throttle recorded by M(overcommit.control.libvirt_cputune) (who, why, when, the
    previous values), the control policy's state and kill switch kept by
    M(overcommit.control.libvirt_policy_state), and measured usage from two domain-stats samples.
  - A domain that cannot be read (unknown, or running on a host without a cgroup CPU controller) is
    reported with C(failed) and C(msg); the others are still reported, and the task then fails.
  - Usage is the C(cpu.time) rate (CPUs used) and the C(vcpu.N.delay) rate summed over the vCPUs
    (CPUs of steal; time the vCPUs were runnable but waited for a host CPU).
author:
  - overcommit.control maintainers (@overcommit)
extends_documentation_fragment:
  - overcommit.control.libvirt
  - overcommit.control.attributes.info_module
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.actiongroups
options:
  domains:
    description:
      - Names of the domains to report. With neither O(domains) nor O(classes), every domain of the host.
      - Names are matched exactly; a name that is empty or has surrounding spaces (a list written as one string,
        C("web-1, web-2")) fails the task, naming the option and the element, before anything is read or changed.
    type: list
    elements: str
    default: []
    aliases: [names]
  classes:
    description:
      - Also report every domain whose effective class is one of these.
    type: list
    elements: str
    choices: [dedicated, shared, burstable]
    default: []
  sample_seconds:
    description:
      - Seconds between the two domain-stats samples usage is measured from; V(0) skips measuring.
    type: float
    default: 1.0
"""

EXAMPLES = r"""
- name: Which VMs on this host burn the most CPU, and are any already throttled?
  overcommit.control.libvirt_cputune_info:
    sample_seconds: 2
  register: tuning

- name: Show the top five
  ansible.builtin.debug:
    msg: "{{ tuning.domains | selectattr('usage', 'defined') | sort(attribute='usage.cpus_used', reverse=true) | batch(5) | first }}"
"""

RETURN = r"""
domains:
  description: One entry per domain.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Domain name.
      type: str
    active:
      description: Whether the domain runs.
      type: bool
    persistent:
      description: Whether the domain has a persistent definition.
      type: bool
    vcpus:
      description: Current vCPU count.
      type: int
    pinned:
      description: Whether any vCPU is pinned.
      type: bool
    cpus_allowed:
      description:
        - Host CPU ids the running domain's vCPU threads may run on (the union of their live pinning; every CPU
          of the host where no vCPU is pinned). The control policy's shared pool is the union of these over the
          shared and burstable domains.
      returned: when the domain runs
      type: list
      elements: int
      version_added: 0.1.0
    started_at:
      description:
        - When the running domain's QEMU process started, in seconds since the epoch; null where the hypervisor is
          not the machine the module runs on, or its pid file cannot be read (libvirt's API gives no start time).
          The control policy judges no VM a culprit in its first minute (a booting guest burns its CPUs).
      returned: when the domain runs
      type: float
      version_added: 0.1.1
    class:
      description: Effective class (dedicated, shared, burstable).
      type: str
    class_reason:
      description: Why the domain has that class.
      type: str
    declared_class:
      description: The class its metadata declares (M(overcommit.control.libvirt_vm_class)), or null.
      type: str
    baseline_cpus:
      description: The burstable baseline its metadata declares, in CPUs, or null.
      type: float
    live:
      description: Live scheduler parameters (null when shut off).
      type: dict
    config:
      description: Persistent scheduler parameters, 0 meaning not set (null when transient).
      type: dict
    cap_cpus:
      description: What the current quotas let the whole domain use, in CPUs; null when unlimited.
      type: float
    throttle:
      description: The recorded throttle (reason, time, by, class, scope, cpus, previous values per target) or null.
      type: dict
    policy:
      description:
        - The control policy's state kept on the domain by M(overcommit.control.libvirt_policy_state) (the mapping
          as it was stored), or null when none is kept.
        - Read from the running definition when the domain runs, else from its persistent one.
        - Null too when the stored state cannot be read; C(policy_error) then says why.
      type: dict
      version_added: 0.1.0
    policy_error:
      description: Why the stored policy state could not be read (not JSON, or not a mapping).
      returned: when the domain has a policy element whose state cannot be read
      type: str
      version_added: 0.1.0
    paused:
      description: Whether the kill switch is set on the domain (O(overcommit.control.libvirt_policy_state#module:paused)).
      type: bool
      version_added: 0.1.0
    pause:
      description: With C(paused), why, who and when it was paused; null when not paused.
      type: dict
      version_added: 0.1.0
      contains:
        reason:
          description: Why, when the one who paused it said.
          type: str
        by:
          description: Who paused it.
          type: str
        time:
          description: When, RFC 3339 UTC.
          type: str
    usage:
      description: Measured usage of a running domain.
      type: dict
      returned: when the domain runs through both samples, its counters rising between them, and O(sample_seconds) is above 0
      contains:
        cpus_used:
          description: CPUs the domain used over the sample (cpu.time rate).
          type: float
        steal_cpus:
          description: CPUs' worth of time its vCPUs waited for a host CPU (sum of vcpu.N.delay rates).
          type: float
        sample_seconds:
          description: Seconds between the two samples.
          type: float
"""

import time

from ansible_collections.overcommit.control.plugins.module_utils.libvirt.cputune import NAME_FIELDS, check_sample_seconds, selection_argument_spec
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.reader import describe_domains
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.module import LibvirtModule


def main():
    module = LibvirtModule(
        dict(
            selection_argument_spec(),
            sample_seconds=dict(type="float", default=1.0),
        ),
        failed={"domains": []},
        name_fields=NAME_FIELDS,
    )
    module.checked(check_sample_seconds)
    params = module.params
    domains = module.with_client(lambda client: describe_domains(
        client, params["domains"], params["classes"], params["class_namespace"], params["sample_seconds"],
        time.sleep))
    module.exit_read("domains", domains)


if __name__ == "__main__":
    main()
