# -*- coding: utf-8 -*-
"""kubevirt_vm_migrate's request: options checked naming the field, each
move judged on what the API shows, the migration object asked for, and
the report."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.k8s.migrate import request as migrate


def vmi(name="batch-3", phase="Running", node="worker-2", conditions=()):
    return {"metadata": {"name": name},
            "status": {"phase": phase, "nodeName": node, "conditions": list(conditions)}}


def migration(vmi_name, phase, name="m-1"):
    return {"metadata": {"name": name}, "spec": {"vmiName": vmi_name}, "status": {"phase": phase} if phase else {}}


def request(**changes):
    params = dict({"namespace": "tenant-a", "names": ["batch-3"], "target_node": None, "missing": "fail",
                   "prefix": None, "reason": None}, **changes)
    return migrate.check_request(params)


@pytest.mark.parametrize("changes, field", [
    ({"names": []}, "names"),
    ({"namespace": "Tenant A"}, "namespace"),
    ({"names": ["ok", "Not_OK"]}, "names[1]"),
    ({"target_node": "worker 7"}, "target_node"),
    ({"missing": "skip"}, "missing"),
    ({"prefix": "no-slash"}, "prefix"),
])
def test_bad_options_are_refused_naming_the_field(changes, field):
    with pytest.raises(ValueRangeError) as refused:
        request(**changes)
    assert refused.value.field == field


def test_a_running_migratable_vmi_moves():
    assert migrate.judge(vmi(), [], "worker-7", True) == ("move", None)
    # Without a target KubeVirt's scheduler picks one.
    assert migrate.judge(vmi(), [], None, True) == ("move", None)


@pytest.mark.parametrize("subject, target, node_found, why", [
    (vmi(phase="Scheduling"), "worker-7", True, "batch-3 is Scheduling: a live move needs it Running"),
    (vmi(conditions=[{"type": "LiveMigratable", "status": "False", "reason": "DisksNotLiveMigratable",
                      "message": "cannot migrate VMI: PVC rootdisk is not shared"}]), None, True,
     "KubeVirt says batch-3 cannot move live: DisksNotLiveMigratable: cannot migrate VMI: PVC rootdisk is not shared"),
    (vmi(), "worker-9", False, "target_node worker-9 is not a node of the cluster"),
])
def test_what_cannot_work_is_refused_with_the_reason(subject, target, node_found, why):
    assert migrate.judge(subject, [], target, node_found) == ("refuse", why)


def test_a_move_under_way_or_done_already_asks_for_nothing():
    under_way = [migration("other", None, "m-0"), migration("batch-3", "Succeeded", "m-1"),
                 migration("batch-3", "Running", "m-2")]
    assert migrate.judge(vmi(), under_way, "worker-7", True) == (
        "already", "a move is under way: m-2 (Running)")
    # Just created, KubeVirt has not given it a phase yet.
    assert migrate.judge(vmi(), [migration("batch-3", None, "m-3")], None, True)[1] == \
        "a move is under way: m-3 (Pending)"
    assert migrate.judge(vmi(node="worker-7"), [], "worker-7", True) == (
        "already", "runs on worker-7 already: nothing to move")
    # Finished migrations are history: a new move is asked for.
    assert migrate.judge(vmi(), under_way[:2], "worker-7", True) == ("move", None)


def test_the_migration_object_names_the_vmi_the_target_node_and_the_reason():
    body = migrate.migration_body("tenant-a", "batch-3", request(target_node="worker-7", reason="INC-4711"))
    assert body == {
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
        "metadata": {"generateName": "batch-3-move-", "namespace": "tenant-a",
                     "labels": {"app.kubernetes.io/managed-by": "overcommit.control"},
                     "annotations": {"overcommit.control/migrate-reason": "INC-4711"}},
        "spec": {"vmiName": "batch-3", "addedNodeSelector": {"kubernetes.io/hostname": "worker-7"}}}
    plain = migrate.migration_body("tenant-a", "batch-3", request())
    assert "addedNodeSelector" not in plain["spec"] and "annotations" not in plain["metadata"]


def test_the_report_says_what_was_asked_and_why_not():
    asked = {"name": "batch-3", "changed": True, "node": "worker-2", "target_node": "worker-7",
             "migration": "batch-3-move-x7k2p"}
    assert migrate.report_line(asked) == "batch-3: move asked from worker-2 to worker-7 (batch-3-move-x7k2p)"
    assert migrate.report_line(asked, check_mode=True) == \
        "batch-3: would ask KubeVirt to move it from worker-2 to worker-7 (batch-3-move-x7k2p)"
    refused = {"name": "web-1", "failed": True, "refused": True, "msg": "web-1 is Succeeded: ..."}
    assert migrate.report_line(refused) == "web-1: not moved: web-1 is Succeeded: ..."
    already = {"name": "web-2", "changed": False, "already": True, "msg": "a move is under way: m-2 (Running)"}
    assert migrate.report_line(already) == "web-2: a move is under way: m-2 (Running)"
