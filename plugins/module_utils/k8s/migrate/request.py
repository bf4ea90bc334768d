# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Moving running KubeVirt VMs live: the task's request (its options,
checked), what refuses a move before anything is created, the
VirtualMachineInstanceMigration that asks KubeVirt for one, and the report.
Creating it is runner.py. Pure.

KubeVirt carries a move out itself (virt-controller starts a target
launcher pod, virt-handler moves the guest's memory); the collection asks
for it and judges first what it can see through the API. Its records stay
on the VirtualMachineInstance, which is the same object after the move; a
CPU brake on the old launcher pod is applied to the new one by a reconcile
(kubevirt_vm_cpu_limit with state reconciled), as after any migration."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import migration as moves
from ansible_collections.overcommit.control.plugins.module_utils.k8s import metadata

MISSING = ("fail", "ignore")
# The phases after which a migration object asks nothing more of KubeVirt.
FINAL_PHASES = ("Succeeded", "Failed")
# The node label a target node is picked by (spec.addedNodeSelector).
HOSTNAME_LABEL = "kubernetes.io/hostname"
MANAGED_BY = "app.kubernetes.io/managed-by"
REASON_NAME = "migrate-reason"


def check_request(params):
    """The task's options, validated before any API call; raises
    ValueRangeError naming the field and the allowed values."""
    if not params.get("names"):
        raise ValueRangeError("names", params.get("names"),
                              "names of running VirtualMachineInstances to move (at least one)")
    metadata.check_object_name("namespace", params.get("namespace"))
    for index, name in enumerate(params["names"]):
        metadata.check_object_name("names[%d]" % index, name)
    target = params.get("target_node")
    if target is not None:
        metadata.check_object_name("target_node", target)
    if params.get("missing", "fail") not in MISSING:
        raise ValueRangeError("missing", params.get("missing"), ", ".join(MISSING))
    prefix = metadata.check_prefix(params.get("prefix") or metadata.DEFAULT_PREFIX)
    return dict(params, prefix=prefix, target_node=target, reason=params.get("reason") or "")


def condition(vmi, kind):
    """The VMI's status condition of type `kind`, or {}."""
    for entry in (vmi.get("status") or {}).get("conditions") or []:
        if entry.get("type") == kind:
            return entry
    return {}


def unfinished(migrations, name):
    """The first migration object of VMI `name` KubeVirt has not finished,
    or None."""
    for migration in migrations:
        if ((migration.get("spec") or {}).get("vmiName") == name
                and (migration.get("status") or {}).get("phase") not in FINAL_PHASES):
            return migration
    return None


def judge(vmi, migrations, target_node, node_found):
    """What to do with one VMI: ("move", None), ("already", why) or
    ("refuse", why). migrations: the namespace's migration objects;
    node_found: whether target_node is a node of the cluster (True when
    no target is asked). The kill switch holds the loop back, not a
    person: a move asked for is judged like any other."""
    name = vmi["metadata"]["name"]
    status = vmi.get("status") or {}
    source = status.get("nodeName")
    pending = unfinished(migrations, name)
    if pending is not None:
        return "already", "a move is under way: %s (%s)" % (
            pending["metadata"]["name"], (pending.get("status") or {}).get("phase") or "Pending")
    if target_node and source == target_node:
        return "already", "runs on %s already: nothing to move" % target_node
    phase = status.get("phase")
    if phase != "Running":
        return "refuse", "%s is %s: a live move needs it Running" % (name, phase or "not started")
    migratable = condition(vmi, "LiveMigratable")
    if migratable.get("status") == "False":
        return "refuse", "KubeVirt says %s cannot move live: %s%s" % (
            name, migratable.get("reason") or "LiveMigratable is False",
            ": %s" % migratable["message"] if migratable.get("message") else "")
    if not node_found:
        return "refuse", "target_node %s is not a node of the cluster" % target_node
    return "move", None


def migration_body(namespace, name, request):
    """The VirtualMachineInstanceMigration that asks KubeVirt to move VMI
    `name`, to request's target_node when one is given."""
    body = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
            "metadata": {"generateName": "%s-move-" % name[:40], "namespace": namespace,
                         "labels": {MANAGED_BY: "overcommit.control"}},
            "spec": {"vmiName": name}}
    if request["reason"]:
        body["metadata"]["annotations"] = {request["prefix"] + REASON_NAME: request["reason"]}
    if request["target_node"]:
        body["spec"]["addedNodeSelector"] = {HOSTNAME_LABEL: request["target_node"]}
    return body


def report_line(result, check_mode=False):
    """One VMI's line of the task's report."""
    where = " to %s" % result["target_node"] if result.get("target_node") else ""
    return moves.report_line(result, "%s from %s%s (%s)" % (
        "would ask KubeVirt to move it" if check_mode else "move asked", result.get("node"), where,
        result.get("migration")))
