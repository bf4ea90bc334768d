#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kubevirt_vm_cpu_info
short_description: CPU cap, class, policy state and measured CPU of many running KubeVirt VMs
version_added: 0.1.0
description:
  - Reads, for many VirtualMachineInstances per task, what the control policy (roles C(overcommit.control.recommend),
    C(overcommit.control.apply_plan) and C(overcommit.control.closed_loop)) needs of a KubeVirt VM, in the shape
    M(overcommit.control.libvirt_cputune_info) gives for a libvirt domain, named C(namespace/name).
  - "The cap in force is the desired cap of the CPU brake (M(overcommit.control.kubevirt_vm_cpu_limit), annotation
    C(<prefix>cpu-limit)), with its throttle record; the class comes from the C(<prefix>class) label of the VMI or its
    VirtualMachine; the policy's state from the annotation C(<prefix>policy) on the VMI; the kill switch is the label
    C(<prefix>paused=true) on the VMI or its VirtualMachine."
  - With O(usage_times), the CPU each VM used and waited for comes from KubeVirt's own metrics in Prometheus
    (exported by virt-handler from each domain's libvirt stats) - the rates of C(kubevirt_vmi_cpu_usage_seconds_total)
    (CPUs used) and C(kubevirt_vmi_vcpu_delay_seconds_total) summed over the vCPUs (CPUs of steal, the time the
    vCPUs were runnable but waited for a host CPU) over O(usage_window) seconds ending at each time. A VM
    Prometheus has no series for at a time has null there.
  - Changes nothing.
author:
  - overcommit.control maintainers (@overcommit)
extends_documentation_fragment:
  - overcommit.control.k8s
  - overcommit.control.attributes.info_module
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.actiongroups
options:
  namespace:
    description:
      - Namespace of the VMIs. Required with O(names); without it the VMIs of every namespace are read (or those
        O(label_selector) matches).
    type: str
  names:
    description:
      - Names of the VMIs to read in O(namespace); a name without a VMI is reported as failed, the others are read.
      - Names are matched exactly; a name that is empty or has surrounding spaces fails the task, naming the option
        and the element, before anything is read.
    type: list
    elements: str
    default: []
  label_selector:
    description:
      - Also read every VMI this label selector matches.
    type: str
  usage_times:
    description:
      - Unix times (seconds) at which to read each VM's usage from Prometheus, oldest first; the result's
        C(usage_rounds) has one entry per time and C(usage) is the last. None (the default) reads no usage.
    type: list
    elements: float
  usage_window:
    description:
      - Seconds of the rate window ending at each of O(usage_times). At least twice Prometheus' scrape interval of
        virt-handler, or a counter has too few samples in the window and the VM reads null.
    type: int
    default: 60
  prometheus_url:
    description:
      - URL of the Prometheus that scrapes virt-handler. Required with O(usage_times).
    type: str
  prometheus_token:
    description:
      - Bearer token sent to Prometheus.
    type: str
  prometheus_validate_certs:
    description:
      - Whether Prometheus' TLS certificate is verified.
    type: bool
    default: true
  prometheus_ca_cert:
    description:
      - CA bundle that signed Prometheus' certificate.
    type: path
  prometheus_timeout:
    description:
      - Seconds each Prometheus request may take.
    type: float
    default: 10.0
  prefix:
    description:
      - The key prefix of the brake's annotations and labels.
    type: str
    default: overcommit.control/
"""

EXAMPLES = r"""
- name: The VMs of a namespace with their CPU over the last minute
  overcommit.control.kubevirt_vm_cpu_info:
    namespace: tenant-a
    usage_times: ["{{ now().timestamp() }}"]
    usage_window: 60
    prometheus_url: http://prometheus.monitoring:9090
  register: tenant_a

- name: Which VMs are braked, and by what
  ansible.builtin.debug:
    msg: "{{ tenant_a.vms | selectattr('cap_cpus') | map(attribute='name') | list }}"
"""

RETURN = r"""
vms:
  description: One entry per VMI, in the order they were selected.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: C(namespace/name) of the VMI.
      type: str
    node:
      description: The node the VMI runs on.
      type: str
    active:
      description: Whether the VMI is in phase C(Running).
      type: bool
    vcpus:
      description: The VM's vCPUs (sockets x cores x threads of its current topology).
      type: int
    class:
      description: The VM's class (dedicated, shared, burstable), or null when it has no valid class label.
      type: str
    cap_cpus:
      description: The desired cap of the CPU brake in CPUs, or null (not braked).
      type: float
    desired_request:
      description: The demoted CPU request the brake keeps on the launcher (its CPU weight), or null.
      type: str
      version_added: 0.1.1
    desired_cpu_request:
      description: C(desired_request) in CPUs (null when there is none or it is no CPU quantity). The weight the
        policy judges the VM by, as it judges a cap by the desired cap - also on a new launcher pod (a live
        migration) that has not got it back from a reconcile yet.
      type: float
      version_added: 0.1.1
    throttle:
      description: The throttle record (previous limit and request, reason, by, time, plan), or null.
      type: dict
    previous_cpu_request:
      description: The compute container's CPU request before the first throttle, in CPUs, as its throttle record
        keeps it (what a restore gives back), or null.
      type: float
      version_added: 0.1.1
    compute_cpu_limit:
      description: The CPU limit of the launcher pod's C(compute) container now, as the pod says it.
      type: str
    cpu_request:
      description: The CPU request of the launcher pod's C(compute) container, in CPUs (no cap may go under it); the
        kubelet gives the container a CPU weight of 1024 shares a CPU from it.
      type: float
    policy:
      description: The control policy's state kept on the VMI (empty when none).
      type: dict
    paused:
      description: Whether the kill switch is set on the VMI or its VirtualMachine.
      type: bool
    started_at:
      description:
        - When the VMI last entered the C(Running) phase (its C(status.phaseTransitionTimestamps)), in seconds since
          the epoch; null when the VMI does not say. The control policy judges no VM a culprit in its first minute.
      type: float
      version_added: 0.1.1
    usage:
      description: CPUs used and CPUs of steal at the last of O(usage_times), with the window. Only with O(usage_times).
      type: dict
    usage_rounds:
      description: CPUs used and CPUs of steal at each of O(usage_times). Only with O(usage_times).
      type: list
      elements: dict
  sample:
    - name: tenant-a/web-17
      node: node-12
      active: true
      vcpus: 2
      class: burstable
      cap_cpus: null
      throttle: null
      compute_cpu_limit: null
      policy: {}
      paused: false
      usage: {cpus_used: 1.93, steal_cpus: 0.41, window_seconds: 60}
      usage_rounds: [{cpus_used: 1.93, steal_cpus: 0.41}]
"""

from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import usage
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.usage_reader import VmCpuReader
from ansible_collections.overcommit.control.plugins.module_utils.k8s.metadata import DEFAULT_PREFIX
from ansible_collections.overcommit.control.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.overcommit.control.plugins.module_utils.prometheus import client as prometheus


def main():
    spec = dict(
        namespace=dict(type="str"),
        names=dict(type="list", elements="str", default=[]),
        label_selector=dict(type="str"),
        usage_times=dict(type="list", elements="float"),
        usage_window=dict(type="int", default=60),
        prefix=dict(type="str", default=DEFAULT_PREFIX),
    )
    spec.update(prometheus.connection_argument_spec())
    module = K8sModule(spec, failed={"vms": []}, name_fields=("names",))
    request = module.checked(usage.check_request)
    params = module.params

    def read(client):
        source = None
        if request["times"]:
            source = prometheus.PrometheusClient(params["prometheus_url"], params["prometheus_token"],
                                                 params["prometheus_validate_certs"], params["prometheus_ca_cert"],
                                                 params["prometheus_timeout"])
        reader = VmCpuReader(client, source, request)
        return reader.read(params["namespace"], params["names"], params["label_selector"])
    vms = module.with_client(read, refusals=(prometheus.PrometheusError,))
    module.exit_json(changed=False, vms=vms)


if __name__ == "__main__":
    main()
