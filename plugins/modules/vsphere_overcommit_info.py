#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: vsphere_overcommit_info
short_description: How far vSphere hosts and clusters are overcommitted, and what their VMs suffer for it
version_added: 0.1.0
description:
  - Per host and per cluster, what running VMs were promised against the hardware, physical cores and
    hardware threads against the vCPUs of powered-on VMs (vCPU:core and vCPU:thread ratios), and the memory
    configured in powered-on VMs against physical memory.
  - Per powered-on VM, how much the overcommit costs it, CPU ready and co-stop time as a percentage of the
    sample interval, ballooned and swapped memory, from real-time performance statistics (20 s samples).
  - Ready and co-stop come from C(cpu.ready.summation) and C(cpu.costop.summation), milliseconds summed over
    all vCPUs in each interval, converted as ms / (interval_s x 1000) x 100. A 4-vCPU VM can therefore
    show up to 400 %; C(avg_per_vcpu) divides by the vCPUs. As a rule of thumb, sustained ready above about
    5 % per vCPU is felt by the guest.
  - Balloon is C(mem.vmmemctl.average) and swap C(mem.swapped.average), reported in MB.
  - Counters are looked up by name, since their numeric ids differ between servers. One inventory query
    and one performance query per 50 VMs serve the whole task.
author:
  - overcommit.control maintainers (@overcommit)
extends_documentation_fragment:
  - overcommit.control.vsphere
  - overcommit.control.attributes.info_module
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.actiongroups
options:
  clusters:
    description:
      - Report only the hosts of these clusters (and the VMs on them). With neither O(clusters) nor O(hosts),
        every host is reported.
      - Every name of O(clusters), O(hosts) and O(vms) is matched exactly; one that is empty or has surrounding spaces
        fails the task, naming the option and the element, before any connection.
    type: list
    elements: str
    default: []
  hosts:
    description:
      - Report only these ESXi hosts (and the VMs on them), by name.
    type: list
    elements: str
    default: []
  vms:
    description:
      - Report per-VM figures only for these VMs, by name; default every powered-on VM in scope. Host and
        cluster pressure then covers only these VMs.
    type: list
    elements: str
    default: []
  vm_stats:
    description:
      - Query performance statistics for ready, co-stop, balloon and swap. V(false) reports only the
        configured ratios.
    type: bool
    default: true
  samples:
    description:
      - How many 20 s real-time samples to average over, 1..180 (the last hour). The default covers 5 minutes.
    type: int
    default: 15
  return_samples:
    description:
      - Also return, per VM, the raw samples the figures were computed from (intervals, timestamps and the
        values of each counter), to audit a figure.
    type: bool
    default: false
seealso:
  - module: overcommit.control.vsphere_vm_reservation
"""

EXAMPLES = r"""
- name: Overcommit of the cluster that hosts the Kubernetes nodes
  overcommit.control.vsphere_overcommit_info:
    hostname: vcenter.example.com
    username: readonly@vsphere.local
    password: "{{ vcenter_password }}"
    clusters: [prod-c1]
  register: esxi

- name: Hosts whose VMs wait for CPU
  ansible.builtin.debug:
    msg: "{{ item.name }}: {{ item.cpu.vcpu_per_core }} vCPU per core, worst VM ready {{ item.pressure.vm_cpu_ready_pct_max }} %"
  loop: "{{ esxi.hosts | selectattr('pressure.vm_cpu_ready_pct_per_vcpu_max', 'gt', 5) }}"
"""

RETURN = r"""
hosts:
  description: One entry per ESXi host in scope.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Host name.
      type: str
    cluster:
      description: Cluster of the host, or null for a standalone host.
      type: str
    cpu:
      description:
        - C(packages), C(cores), C(threads), C(mhz_per_core), C(vcpus) of powered-on VMs,
          C(vcpu_per_core) and C(vcpu_per_thread).
      type: dict
    memory:
      description: C(physical_mb), C(configured_mb) of powered-on VMs and their C(ratio).
      type: dict
    vms:
      description: Number of VMs C(powered_on) and in C(total) registered on the host.
      type: dict
    pressure:
      description:
        - Worst CPU ready % of a VM on the host (C(vm_cpu_ready_pct_max), C(vm_cpu_ready_pct_per_vcpu_max)),
          ballooned and swapped MB summed over its VMs and how many VMs balloon or swap; null values without
          statistics.
      type: dict
  sample:
    - name: esx-07
      cluster: prod-c1
      cpu: {packages: 2, cores: 32, threads: 64, mhz_per_core: 2600, vcpus: 96, vcpu_per_core: 3.0, vcpu_per_thread: 1.5}
      memory: {physical_mb: 524288, configured_mb: 655360, ratio: 1.25}
      vms: {powered_on: 24, total: 27}
      pressure: {vm_cpu_ready_pct_max: 18.4, vm_cpu_ready_pct_per_vcpu_max: 4.6, balloon_mb: 0, vms_ballooned: 0,
                 swapped_mb: 0, vms_swapped: 0}
clusters:
  description: One entry per cluster in scope, the sum of its hosts in scope.
  returned: always
  type: list
  elements: dict
vms:
  description: One entry per powered-on VM in scope.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: VM name.
      type: str
    uuid:
      description: BIOS UUID of the VM (C(config.uuid)), what a Kubernetes node on it reports as its system UUID.
      type: str
    host:
      description: ESXi host the VM runs on.
      type: str
    vcpus:
      description: Configured vCPUs.
      type: int
    cpu_ready_pct:
      description: CPU ready % over the samples, C(avg), C(max) (aggregate of all vCPUs), C(avg_per_vcpu), C(samples).
      type: dict
    cpu_costop_pct:
      description: Co-stop % in the same form.
      type: dict
    balloon:
      description: Ballooned memory, C(avg_mb) and C(max_mb).
      type: dict
    swapped:
      description: Swapped memory, C(avg_mb) and C(max_mb).
      type: dict
    interval_s:
      description: Sample interval the percentages were computed with (20 for real-time statistics).
      type: int
    samples:
      description:
        - The raw samples, C(intervals) (s), C(timestamps) and the values of each counter by name (ms for the
          summation counters, KB for the memory ones; -1 where vSphere has no value).
      type: dict
      returned: when O(return_samples=true)
vms_not_reported:
  description: VMs named in O(vms) that are not reported, each with C(name) and C(reason).
  returned: always
  type: list
  elements: dict
counters:
  description: The counter id this server uses for each counter name (null when it does not offer it).
  returned: when O(vm_stats=true)
  type: dict
"""

from ansible_collections.overcommit.control.plugins.module_utils.vsphere.module import VsphereModule
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.overcommit_reader import gather
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.overcommit_report import validate


def main():
    module = VsphereModule(
        dict(
            clusters=dict(type="list", elements="str", default=[]),
            hosts=dict(type="list", elements="str", default=[]),
            vms=dict(type="list", elements="str", default=[]),
            vm_stats=dict(type="bool", default=True),
            samples=dict(type="int", default=15),
            return_samples=dict(type="bool", default=False),
        ),
        name_fields=("clusters", "hosts", "vms"),
    )
    module.checked(validate)
    report = module.with_client(lambda client: gather(client, module.params))
    if not module.params["vm_stats"]:
        report.pop("counters")
    module.exit_json(changed=False, **report)


if __name__ == "__main__":
    main()
