#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: node_admission
short_description: Open or close Kubernetes nodes to new VMs, for many nodes per task
version_added: 0.1.0
description:
  - The admission gate of overcommit, which decides whether I(more) VMs may land on a node, with taints, labels
    and optionally the cordon. It never slows or evicts a running VM (the runtime brake is
    M(overcommit.control.libvirt_cputune) or M(overcommit.control.kubevirt_vm_cpu_limit)).
  - Acts on many nodes per task over one connection, selected by name and/or label selector.
  - Owns only keys under O(prefix). Taints and labels of other owners always survive, also when they
    change while the task runs, because C(spec.taints) is written whole with the C(resourceVersion) it was
    computed from and re-read and re-planned on a conflict, as Kubernetes' own taint helper does.
  - Why, when and by whom a node was gated is kept in the annotation C(<prefix>gate), with the taints the gate
    added and whether it cordoned the node. O(state=open) removes exactly those and lifts only a cordon the
    gate set itself.
  - Refuses, before changing anything, a task that would leave more than O(max_gated_share) of the cluster's
    nodes (or of the nodes of O(fleet_label_selector)) closed to new VMs (cordoned, or carrying a
    C(NoSchedule) taint under O(prefix)), unless O(force=true).
  - Nodes not found and nodes whose write fails are reported one by one; the others are still handled and
    the task then fails.
  - Every node the task gates or opens gets a Kubernetes Event (type C(Normal), reason C(NodeGated) or
    C(NodeOpened), reporting controller C(overcommit.control)) in the namespace C(default), saying who, why and
    under which plan. An Event that cannot be created is reported in the node's result and never fails the task.
  - With O(policy_state), the control policy's state of the nodes is kept in the annotation C(<prefix>policy)
    (compact JSON), written in the same write as the gate.
  - With O(expected), a node that is no longer as the caller saw it when it decided (someone gated, opened,
    tainted or cordoned it meanwhile; another run acted first) is left alone and reported as a conflict. The
    comparison is made on the node as read for the write and again whenever another writer got there first,
    so two runs that decided on the same view never both act.
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
    details: Every write, the Events included, is sent to the API server as a dry run (C(dryRun=All)).
options:
  names:
    description:
      - Names of the nodes to act on.
      - Names are matched exactly; a name that is empty or has surrounding spaces (a list written as one string,
        C("web-1, web-2")) fails the task, naming the option and the element, before anything is read or changed.
    type: list
    elements: str
    default: []
    aliases: [nodes]
  label_selector:
    description:
      - Also act on every node this label selector matches, for example C(topology.kubernetes.io/zone=zone-a).
    type: str
  state:
    description:
      - V(gated) closes the nodes to new VMs with O(taints) (and the cordon with O(cordon=true)).
      - V(open) removes the taints the gate record lists (and O(taints) when given) and lifts the cordon if
        the gate set it.
    type: str
    choices: [gated, open]
    default: gated
  taints:
    description:
      - The gate taints. A short key gets O(prefix); a full key must be under O(prefix).
      - With O(state=gated) the owned taints with these keys are set to exactly these; other taints stay.
      - "Defaults to C({key: gated, effect: NoSchedule})."
    type: list
    elements: dict
    suboptions:
      key:
        description: Taint key.
        type: str
        required: true
      value:
        description: Taint value, for example why the node is gated.
        type: str
      effect:
        description:
          - V(NoSchedule) closes the node to new pods; V(PreferNoSchedule) only steers them away.
          - C(NoExecute) is refused because it evicts running VMs.
        type: str
        choices: [NoSchedule, PreferNoSchedule]
        default: NoSchedule
  labels:
    description:
      - Owned labels to set on the nodes in either state, for example the ESXi host a node runs on.
        A null value removes the label. Keys follow the same rule as taint keys.
    type: dict
    default: {}
  cordon:
    description:
      - With O(state=gated), also mark the nodes unschedulable. The record says whether the gate cordoned a
        node, so opening it never lifts a cordon set by someone else.
    type: bool
    default: false
  reason:
    description:
      - Why the nodes are gated; kept in the gate record.
    type: str
  requested_by:
    description:
      - Who asked for the gate; kept in the record. Defaults to the user running the module.
    type: str
  plan_id:
    description:
      - The id of the approved plan this change carries out (role C(overcommit.control.apply_plan) passes it);
        kept in the record as C(plan), so the object itself says which plan changed it.
    type: str
    version_added: 0.1.0
  prefix:
    description:
      - The key prefix this collection owns, a DNS subdomain followed by C(/).
    type: str
    default: overcommit.control/
  max_gated_share:
    description:
      - The largest share of the fleet's nodes that may be closed to new VMs after the task,
        greater than 0 and at most 1. A task that closes no additional node is never refused.
    type: float
    default: 0.5
  fleet_label_selector:
    description:
      - The nodes O(max_gated_share) is a share of, for example one node pool. Defaults to all the cluster's nodes.
      - Nodes gated by the task outside this fleet do not count.
    type: str
  force:
    description:
      - Gate even beyond O(max_gated_share).
    type: bool
    default: false
  policy_state:
    description:
      - The control policy's state of the nodes (for example C(gated_at), C(rule), C(calm_since)), kept in the
        annotation C(<prefix>policy) as compact JSON with sorted keys, together with whatever O(state) does.
      - V(null) or an empty mapping removes the annotation. When the option is not given the annotation is left
        as it is.
      - The same state is written on every node of the task. Writing the state a node already has changes nothing.
      - Anything but a mapping or V(null) fails the task, naming the option, before anything is read or changed.
    type: raw
    version_added: 0.1.0
  expected:
    description:
      - What the caller saw of each node when it decided, node name to C(gated) (bool), C(gate_time) (the gate
        record's time, or null), C(taints) (every taint as C(key=value:effect) or C(key:effect)) and C(cordoned)
        (bool), as the plans of the collection record it.
      - A node named here that is no longer so is not changed; its result has C(conflict=true) and a C(msg) saying
        what changed, and the task does not fail. Nodes not named here are changed without this check.
    type: dict
    version_added: 0.1.0
"""

EXAMPLES = r"""
- name: Close the pressured nodes to new VMs
  overcommit.control.node_admission:
    names: [worker-07, worker-12]
    taints:
      - key: pressure
        value: cpu
    reason: "CPU PSI above 40 % for 10 minutes"

- name: Close every node of an over-committed ESXi host, and label them with the host
  overcommit.control.node_admission:
    label_selector: overcommit.control/esxi-host=esx-03
    labels:
      esxi-pressure: "true"
    reason: "esx-03 CPU ready above 10 %"

- name: Gate a node only if nobody touched it since it was read, and keep the policy's state on it
  overcommit.control.node_admission:
    names: [worker-07]
    reason: "gate_pressure: CPU pressure 45 % (avg60)"
    plan_id: "{{ plan.id }}"
    policy_state: {gated_at: 1767607200, rule: gate_pressure}
    expected:
      worker-07: {gated: false, gate_time: null, taints: [], cordoned: false}

- name: Reopen them, removing exactly what the gate added
  overcommit.control.node_admission:
    label_selector: overcommit.control/esxi-host=esx-03
    state: open
    labels:
      esxi-pressure: null
"""

RETURN = r"""
nodes:
  description: One result per node, in the order they were selected.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
    changed:
      description: Whether this node was (or in check mode would be) changed.
      type: bool
    failed:
      description: Present and true when this node failed; the other nodes were still handled.
      type: bool
    msg:
      description: Why this node failed.
      type: str
    before:
      description: The node's taints, cordon, owned labels and gate record before the task, and its policy state
        (C(policy)) when O(policy_state) is given.
      type: dict
    after:
      description: The same after the task.
      type: dict
    gate:
      description: The gate record now on the node (reason, time, by, taints, cordoned), or null when open.
      type: dict
    conflicts:
      description: How many times another writer changed the node between our read and our write
        (each time it was read again and re-planned). Present only when it happened.
      type: int
    conflict:
      description:
        - "Present and true when the node was left alone because it is no longer as O(expected) says; C(msg)
          then says what changed, for example C(worker-07 changed since it was read: taints was [], is
          ['example.com/x:NoSchedule'] now)."
      type: bool
      version_added: 0.1.0
    event:
      description:
        - The Event created on the node when the task gated or opened it (C(type), C(reason), C(note)), with
          C(error) when it could not be created. Absent when the gate did not change.
      type: dict
      version_added: 0.1.0
      sample: {type: Normal, reason: NodeGated, note: "Closed to new VMs by ops: CPU PSI above 40 % (plan p-1)"}
  sample:
    - name: worker-07
      changed: true
      before: {taints: [], unschedulable: false, labels: {}, gate: null}
      after:
        taints: [{key: overcommit.control/pressure, value: cpu, effect: NoSchedule}]
        unschedulable: false
        labels: {}
        gate: {reason: CPU PSI above 40 %, time: "2026-01-05T10:00:00Z", by: ops,
               taints: [overcommit.control/pressure], cordoned: false}
summary:
  description:
    - The nodes' names per outcome, C(changed), C(unchanged), C(skipped), C(conflict) (left alone as they changed
      since the caller read them, see O(expected)) and C(failed) (name to why).
  returned: always
  type: dict
  sample: {changed: [worker-07], unchanged: [], skipped: [], conflict: [worker-12], failed: {}}
fleet:
  description: With O(state=gated), the safety check over the fleet's nodes.
  returned: when state is gated and the fleet could be read
  type: dict
  sample: {nodes: 40, closed_before: 2, closed_after: 4, max_gated_share: 0.5, max_closed: 20}
"""

import socket

from ansible_collections.overcommit.control.plugins.module_utils.common.fleet import exit_fleet
from ansible_collections.overcommit.control.plugins.module_utils.common.record import clock, record_fields
from ansible_collections.overcommit.control.plugins.module_utils.k8s.gate import plan as gate
from ansible_collections.overcommit.control.plugins.module_utils.k8s.gate.runner import AdmissionRunner
from ansible_collections.overcommit.control.plugins.module_utils.k8s.metadata import DEFAULT_PREFIX
from ansible_collections.overcommit.control.plugins.module_utils.k8s.module import K8sModule


def main():
    module = K8sModule(
        dict(
            names=dict(type="list", elements="str", default=[], aliases=["nodes"]),
            label_selector=dict(type="str"),
            state=dict(type="str", default="gated", choices=list(gate.STATES)),
            taints=dict(type="list", elements="dict", options=dict(
                key=dict(type="str", required=True, no_log=False),
                value=dict(type="str"),
                effect=dict(type="str", default="NoSchedule", choices=["NoSchedule", "PreferNoSchedule"]),
            )),
            labels=dict(type="dict", default={}),
            cordon=dict(type="bool", default=False),
            reason=dict(type="str"),
            requested_by=dict(type="str"),
            plan_id=dict(type="str"),
            prefix=dict(type="str", default=DEFAULT_PREFIX),
            max_gated_share=dict(type="float", default=0.5),
            fleet_label_selector=dict(type="str"),
            force=dict(type="bool", default=False),
            policy_state=dict(type="raw"),
            expected=dict(type="dict"),
        ),
        required_one_of=[("names", "label_selector")],
        failed={"nodes": []},
        name_fields=("names",),
    )
    request = module.checked(lambda params: gate.check_request(params, module.given("policy_state")))
    fields = record_fields(module.params)
    results, fleet = module.with_client(
        lambda client: AdmissionRunner(client, request, fields, clock, socket.gethostname()).run(),
        refusals=(gate.GateRefusal,))
    exit_fleet(module, results, "node", "nodes", **({"fleet": fleet} if fleet else {}))


if __name__ == "__main__":
    main()
