#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: host_pressure_info
short_description: CPU, memory and I/O pressure, load, run queue and per-VM CFS throttling of a hypervisor host
version_added: 0.1.0
description:
  - Run on a hypervisor host (or a Kubernetes node). Reports the kernel's pressure stall information (PSI
    C(some) and C(full), avg10/avg60/avg300 in percent and the totals in seconds) for CPU, memory and I/O
    from C(/proc/pressure), the load averages, the run queue (C(procs_running)) and the CPUs online.
  - Also reports the cgroup that holds the VMs (C(machine.slice) or C(machine)) with its own CPU pressure
    where the kernel keeps PSI per cgroup (cgroup v2), and, per running libvirt domain, the CFS bandwidth
    statistics of its cgroup (periods, throttled periods, throttled time), on cgroup v1 and v2, for the
    domain and summed over its vCPU cgroups (where per-vCPU quotas are enforced).
  - The output feeds the collection's control policy as it is (C(pressure.cpu.some.avg10), C(cpus),
    C(procs_running)); counters are cumulative, so compare two runs for a rate.
  - Fails, saying so, on a host whose kernel keeps no PSI.
author:
  - overcommit.control maintainers (@overcommit)
extends_documentation_fragment:
  - overcommit.control.attributes.info_module
  - ansible.builtin.action_common_attributes
options:
  uri:
    description:
      - libvirt connection URI of the hypervisor on this host, to find its running domains.
    type: str
    default: qemu:///system
  domains:
    description:
      - Names of the running domains to report; empty means every running domain.
    type: list
    elements: str
    default: []
  collect_domains:
    description:
      - Whether to report libvirt domains at all; V(false) on a host without libvirt (a Kubernetes node).
    type: bool
    default: true
requirements:
  - libvirt-python on the host, when O(collect_domains=true)
  - a Linux kernel with PSI (CONFIG_PSI, not disabled with psi=0)
"""

EXAMPLES = r"""
- name: How pressured is this hypervisor, and which VMs does CFS throttle?
  overcommit.control.host_pressure_info:
  register: host

- name: Say it
  ansible.builtin.debug:
    msg: "CPU some avg60 {{ host.pressure.cpu.some.avg60 }} %, run queue {{ host.procs_running }} on {{ host.cpus }} CPUs"

- name: On a Kubernetes node without libvirt
  overcommit.control.host_pressure_info:
    collect_domains: false
"""

RETURN = r"""
pressure:
  description: PSI per resource (cpu, memory, io), each with C(some) and C(full) (avg10, avg60, avg300 in %,
    total_seconds).
  returned: always
  type: dict
  sample: {cpu: {some: {avg10: 12.5, avg60: 30.1, avg300: 8.2, total_seconds: 535.7},
                 full: {avg10: 0.0, avg60: 0.0, avg300: 0.0, total_seconds: 0.0}}}
cpus:
  description: CPUs online.
  returned: always
  type: int
isolated_cpus:
  description:
    - CPU ids the kernel keeps out of its load balancing (C(isolcpus), from C(/sys/devices/system/cpu/isolated)),
      empty when there are none. The control policy leaves them out of the shared pool.
  returned: always
  type: list
  elements: int
  version_added: 0.1.0
load:
  description: Load averages (load1, load5, load15).
  returned: always
  type: dict
procs_running:
  description: Runnable tasks now (the run queue), from /proc/stat.
  returned: always
  type: int
procs_blocked:
  description: Tasks blocked on I/O now.
  returned: always
  type: int
cpu_time:
  description:
    - Seconds all CPUs spent busy (C(busy_seconds)) and idle (C(idle_seconds), idle and I/O wait) since boot, from
      C(/proc/stat); their rate between two reads is the CPUs the host used, VMs and everything else together.
  returned: always
  type: dict
  sample: {busy_seconds: 81234.5, idle_seconds: 402311.2}
cpu_time_per_cpu:
  description:
    - The same as C(cpu_time) for each online CPU, by CPU id. Between two reads it gives the load of a set of
      CPUs (the shared pool's own, not the dedicated VMs' or the host's other cores).
  returned: always
  type: dict
  sample: {"0": {busy_seconds: 40211.3, idle_seconds: 201002.1}, "1": {busy_seconds: 41023.2, idle_seconds: 201309.1}}
  version_added: 0.1.1
cgroup_version:
  description: 1 or 2.
  returned: always
  type: int
vm_cgroup:
  description: The cgroup that holds the VMs (path, and cpu_pressure on cgroup v2), or null.
  returned: always
  type: dict
domains:
  description: Per domain, its cgroup, C(throttling) (periods, throttled_periods, throttled_seconds) of the
    domain's cgroup, C(vcpu_throttling) summed over its vCPU cgroups, and C(cpu_pressure) on cgroup v2; a
    domain that is not running is reported with C(failed) and C(msg).
  returned: when O(collect_domains=true)
  type: list
  elements: dict
"""

from ansible_collections.overcommit.control.plugins.module_utils.host.procfs import ProcFS
from ansible_collections.overcommit.control.plugins.module_utils.host.pressure import NoPressureInfo
from ansible_collections.overcommit.control.plugins.module_utils.host.signals import domain_signals, host_signals
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.module import LibvirtModule


def main():
    module = LibvirtModule(
        dict(
            domains=dict(type="list", elements="str", default=[]),
            collect_domains=dict(type="bool", default=True),
        ),
        name_fields=("domains",),
        libvirt_required=False,
    )
    fs = ProcFS()
    try:
        result = host_signals(fs)
    except NoPressureInfo as exc:
        module.fail_json(msg=str(exc))
    if not module.params["collect_domains"]:
        module.exit_json(changed=False, **result)
    # Each running domain's cgroup is found by its id: libvirt says which run.
    module.require_libvirt(**result)
    running = module.with_client(lambda client: client.running_ids(), **result)
    module.exit_read("domains", domain_signals(fs, running, module.params["domains"]), **result)


if __name__ == "__main__":
    main()
