#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: node_policy_state
short_description: Keep the control policy's state and the kill switch on many Kubernetes nodes
version_added: 0.1.1
description:
  - Sets or clears the kill switch of many nodes, and writes or removes the control policy's state kept on them,
    without gating or opening them (M(overcommit.control.node_admission) does that). The counterpart of
    M(overcommit.control.kubevirt_policy_state) and M(overcommit.control.libvirt_policy_state) for nodes;
    M(overcommit.control.node_overcommit_info) reports both per node as C(policy) and C(paused).
  - The kill switch is the label C(<prefix>paused=true) on the node; the closed loop takes no automatic action on a
    node that has it, nor on the hypervisor host that stands for it. The state is the annotation C(<prefix>policy)
    (compact JSON, sorted keys), the one M(overcommit.control.node_admission)'s O(overcommit.control.node_admission#module:policy_state)
    writes.
  - Only what differs is written, each write carrying the C(resourceVersion) it was planned from. Every option is
    checked before anything is read; one node failing neither hides nor stops the others.
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
      - Node name to the policy state to keep on it (a mapping of JSON values), or null (or an empty mapping) to
        remove the state kept there. Removing the state leaves the kill switch and the gate as they are.
    type: dict
  names:
    description:
      - The nodes whose kill switch O(paused) sets or clears.
      - A name that is not a DNS subdomain (empty, surrounding spaces, upper case) fails the task, naming the option
        and the element, before anything is read.
    type: list
    elements: str
    default: []
  paused:
    description:
      - V(true) sets the kill switch on O(names); V(false) clears it. At least one of O(states) and O(paused) is
        required.
    type: bool
  missing:
    description:
      - What a node that does not exist is. V(fail) reports it as a failed node; V(ignore) as skipped.
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
- name: Stop every automatic action on two nodes (the kill switch)
  overcommit.control.node_policy_state:
    names: [worker-3, worker-4]
    paused: true

- name: Give the loop its nodes back
  overcommit.control.node_policy_state:
    names: [worker-3, worker-4]
    paused: false

- name: Forget what the policy kept on a node (its gate stays as it is)
  overcommit.control.node_policy_state:
    states:
      worker-3: null
"""

RETURN = r"""
nodes:
  description: One result per node, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Name of the node.
      type: str
    changed:
      description: Whether the node was (or in check mode would be) changed.
      type: bool
    failed:
      description: Present and true when this node failed; the others were still handled.
      type: bool
    skipped:
      description: Present and true when the node does not exist and O(missing=ignore).
      type: bool
    msg:
      description: Why this node failed or was skipped.
      type: str
    policy:
      description: The policy state now kept on the node, or null; only when O(states) names the node.
      type: dict
    paused:
      description: Whether the kill switch is now set; only when O(names) names the node.
      type: bool
  sample:
    - name: worker-3
      changed: true
      paused: true
summary:
  description: Names per outcome (changed, unchanged, skipped, failed with the reason), and one line per node.
  returned: always
  type: dict
"""

from ansible_collections.overcommit.control.plugins.module_utils.common.fleet import exit_fleet
from ansible_collections.overcommit.control.plugins.module_utils.k8s.metadata import DEFAULT_PREFIX, policy_state_line
from ansible_collections.overcommit.control.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.overcommit.control.plugins.module_utils.k8s.nodes import policy_state
from ansible_collections.overcommit.control.plugins.module_utils.k8s.nodes.policy_state_runner import NodePolicyStateRunner


def main():
    module = K8sModule(
        dict(
            states=dict(type="dict"),
            names=dict(type="list", elements="str", default=[]),
            paused=dict(type="bool"),
            missing=dict(type="str", default="fail", choices=list(policy_state.MISSING)),
            prefix=dict(type="str", default=DEFAULT_PREFIX),
        ),
        failed={"nodes": []},
        name_fields=("names",),
    )
    request = module.checked(policy_state.check_request)
    results = module.with_client(lambda client: NodePolicyStateRunner(client, request).run())
    exit_fleet(module, results, "node", "nodes", describe=lambda result: policy_state_line(result, module.check_mode))


if __name__ == "__main__":
    main()
