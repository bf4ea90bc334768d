#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: node_overcommit_info
short_description: How far the pods on Kubernetes nodes overcommit them, and who the nodes are underneath
version_added: 0.1.0
description:
  - Per node, the Kubernetes side of overcommit, the sum of CPU and memory C(requests) (what the scheduler
    fits on) and C(limits) (what the pods may burn) of the node's non-terminated pods, against the node's
    C(allocatable), with their ratios. A limits ratio above 1 is the scheduler's bet that the pods will not
    all peak at once.
  - Pods are summed as the scheduler sums them, app containers and sidecars together, at least the largest
    init container, plus the pod overhead; pod-level resources replace the containers' sum when set. A
    container without a limit adds nothing to the limits sum; C(pods_without_limit) counts the pods that
    have one.
  - Also returns what identifies the machine under the node, C(status.nodeInfo.systemUUID) and
    C(spec.providerID), with the node's labels, taints, cordon and the gate record under O(prefix) that
    M(overcommit.control.node_admission) keeps, so a role can map nodes to hypervisor VMs and decide gates.
  - Also returns the control policy's state kept on the node (annotation C(<prefix>policy)) and whether an
    operator paused automatic actions on it (label C(<prefix>paused=true), the kill switch).
  - Reads only. Up to 20 nodes are read one by one and their pods with one list per node (filtered on the
    server by C(spec.nodeName)); more nodes are read in one list and their pods in one cluster-wide list.
author:
  - overcommit.control maintainers (@overcommit)
extends_documentation_fragment:
  - overcommit.control.k8s
  - overcommit.control.attributes.info_module
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.actiongroups
options:
  names:
    description:
      - Names of the nodes to report. With neither O(names) nor O(label_selector), every node is reported.
      - Names are matched exactly; a name that is empty or has surrounding spaces (a list written as one string,
        C("web-1, web-2")) fails the task, naming the option and the element, before anything is read or changed.
    type: list
    elements: str
    default: []
    aliases: [nodes]
  label_selector:
    description:
      - Also report every node this label selector matches, for example C(node-role.kubernetes.io/worker).
    type: str
  prefix:
    description:
      - The key prefix this collection owns, a DNS subdomain followed by C(/); the gate record is read from
        the annotation C(<prefix>gate), the policy state from C(<prefix>policy) and the kill switch from the
        label C(<prefix>paused).
    type: str
    default: overcommit.control/
seealso:
  - module: overcommit.control.node_admission
  - module: overcommit.control.vsphere_overcommit_info
"""

EXAMPLES = r"""
- name: Requests and limits against allocatable on every worker
  overcommit.control.node_overcommit_info:
    label_selector: node-role.kubernetes.io/worker
  register: k8s

- name: Nodes whose pods may burn more CPU than the node has
  ansible.builtin.debug:
    msg: "{{ item.name }}: CPU limits {{ item.cpu.limits_ratio }}x allocatable"
  loop: "{{ k8s.nodes | selectattr('cpu.limits_ratio', 'gt', 1) }}"
  loop_control:
    label: "{{ item.name }}"
"""

RETURN = r"""
nodes:
  description: One entry per node, those named first, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
    system_uuid:
      description: C(status.nodeInfo.systemUUID) as the kubelet reported it, or null.
      type: str
    provider_id:
      description: C(spec.providerID), for example C(vsphere://4212f0a4-6a0e-2b9c-7f1d-3c1e8f0b9a11), or null.
      type: str
    labels:
      description: All the node's labels.
      type: dict
    dedicated_cpus:
      description:
        - Whether KubeVirt's node labeller marks the node as able to give VMs dedicated CPUs (the kubelet's static
          CPU manager), read from the label C(kubevirt.io/cpumanager) (KubeVirt v1.8 and later) or, without it,
          C(cpumanager) (earlier releases); null where KubeVirt has labelled neither.
        - A VM of the C(dedicated) class (C(dedicatedCpuPlacement)) is scheduled only onto such nodes.
      type: bool
      version_added: 0.1.1
    taints:
      description: The node's taints (key, value, effect).
      type: list
      elements: dict
    unschedulable:
      description: Whether the node is cordoned.
      type: bool
    gate:
      description: The gate record of M(overcommit.control.node_admission) under O(prefix), or null.
      type: dict
    policy:
      description:
        - The control policy's state of the node (for example C(gated_at), C(rule), C(calm_since)) that
          M(overcommit.control.node_admission) keeps in the annotation C(<prefix>policy), or null when there is
          none or it cannot be read (then C(policy_error) says why).
      type: dict
      version_added: 0.1.0
    policy_error:
      description: Why the annotation C(<prefix>policy) could not be read (not JSON, or not a mapping).
      returned: when the annotation is there but cannot be read
      type: str
      version_added: 0.1.0
    paused:
      description:
        - Whether the node carries the label C(<prefix>paused=true), the kill switch that stops every automatic
          action on it.
      type: bool
      version_added: 0.1.0
    pods:
      description: Number of non-terminated pods on the node.
      type: int
    cpu:
      description:
        - C(allocatable), C(requests) and C(limits) in CPUs, C(requests_ratio) and C(limits_ratio) to allocatable
          (null without allocatable), C(pods_without_limit).
      type: dict
    memory:
      description: The same for memory, in bytes.
      type: dict
  sample:
    - name: worker-07
      system_uuid: a4f01242-0e6a-9c2b-7f1d-3c1e8f0b9a11
      provider_id: vsphere://4212f0a4-6a0e-2b9c-7f1d-3c1e8f0b9a11
      labels: {kubernetes.io/hostname: worker-07, kubevirt.io/cpumanager: "false"}
      dedicated_cpus: false
      taints: []
      unschedulable: false
      gate: null
      policy: null
      paused: false
      pods: 31
      cpu: {allocatable: 16.0, requests: 12.5, limits: 40.0, requests_ratio: 0.781, limits_ratio: 2.5,
            pods_without_limit: 3}
      memory: {allocatable: 68719476736, requests: 51539607552, limits: 85899345920, requests_ratio: 0.75,
               limits_ratio: 1.25, pods_without_limit: 3}
nodes_not_found:
  description: Names given in O(names) that no node has.
  returned: always
  type: list
  elements: str
"""

from ansible_collections.overcommit.control.plugins.module_utils.k8s import metadata
from ansible_collections.overcommit.control.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.overcommit.control.plugins.module_utils.k8s.nodes.reader import gather


def main():
    module = K8sModule(
        dict(
            names=dict(type="list", elements="str", default=[], aliases=["nodes"]),
            label_selector=dict(type="str"),
            prefix=dict(type="str", default=metadata.DEFAULT_PREFIX),
        ),
        name_fields=("names",),
    )
    prefix = module.checked(lambda params: metadata.check_prefix(params["prefix"]))
    report = module.with_client(
        lambda client: gather(client, module.params["names"], module.params["label_selector"], prefix))
    module.exit_json(changed=False, **report)


if __name__ == "__main__":
    main()
