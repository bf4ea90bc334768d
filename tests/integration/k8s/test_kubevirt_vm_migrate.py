"""kubevirt_vm_migrate against the lab's real kube-apiserver with KubeVirt's
CRDs (VirtualMachineInstanceMigration's among them), as the collection's
ClusterRole allows (the lab's operator user).

The lab has one real KubeVirt node, so a move itself cannot be carried out
here: this test stops at the API, where the module's work ends. No
virt-controller runs beside these tests (the real one runs in the KubeVirt
phase of its own), so a migration object it creates stays as created, and
the VMIs are the lab's stand-ins (a VMI Running on a node, its launcher pod)
with the status KubeVirt would give them."""

import json
import time

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans
from kubevirt_fleet import GROUP, NAMESPACE, VERSION, Fleet
from run_module import run_module, run_playbook

pytestmark = pytest.mark.isolated

MIGRATIONS = "virtualmachineinstancemigrations"


@pytest.fixture
def fleet(kube_admin):
    made = Fleet(kube_admin)
    yield made
    for migration in migrations_of(made.custom, made.vmis):
        made.custom.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, MIGRATIONS, migration["metadata"]["name"])
    made.cleanup()


def migrations_of(custom, names):
    items = custom.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, MIGRATIONS)["items"]
    return [item for item in items if item["spec"]["vmiName"] in names]


def migrate(lab, names, check=False, **args):
    return run_module("kubevirt_vm_migrate", dict({"namespace": NAMESPACE, "names": names,
                                                   "kubeconfig": lab["OVERCOMMIT_KUBECONFIG_OPERATOR"]}, **args),
                      check=check)


def test_a_move_is_asked_of_kubevirt_once_steered_to_the_node_and_what_cannot_move_is_refused(
        lab, fleet, make_nodes):
    moving, pinned = fleet.vmi(cores=2), fleet.vmi(cores=2)
    # What virt-controller says of a VM whose disk is on storage only its node sees.
    fleet.custom.patch_namespaced_custom_object_status(GROUP, VERSION, NAMESPACE, "virtualmachineinstances", pinned, {
        "status": {"conditions": [{"type": "LiveMigratable", "status": "False", "reason": "DisksNotLiveMigratable",
                                   "message": "cannot migrate VMI: PVC rootdisk is not shared"}]}})
    (target,) = make_nodes(1)

    # Check mode: a server-side dry run of the object; the refusal named with KubeVirt's reason; nothing stored.
    checked = migrate(lab, [moving, pinned], check=True, target_node=target)
    assert checked.get("failed") and checked.get("changed"), checked.get("msg")
    assert checked["summary"]["report"][1] == (
        "%s: not moved: KubeVirt says %s cannot move live: DisksNotLiveMigratable: cannot migrate VMI: PVC rootdisk "
        "is not shared" % (pinned, pinned))
    assert checked["vms"][0]["migration"].startswith(moving + "-move-"), checked["vms"][0]
    assert migrations_of(fleet.custom, fleet.vmis) == []

    asked = migrate(lab, [moving], target_node=target, reason="INC-4711")
    assert asked.get("changed") and not asked.get("failed"), asked.get("msg")
    (created,) = migrations_of(fleet.custom, fleet.vmis)
    assert created["metadata"]["name"] == asked["vms"][0]["migration"]
    assert created["spec"] == {"vmiName": moving, "addedNodeSelector": {"kubernetes.io/hostname": target}}
    assert created["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "overcommit.control"
    assert created["metadata"]["annotations"]["overcommit.control/migrate-reason"] == "INC-4711"
    assert asked["summary"]["report"] == ["%s: move asked from lab-node-a to %s (%s)" % (
        moving, target, created["metadata"]["name"])]

    # Again: the move KubeVirt has not finished is found, nothing more is asked.
    again = migrate(lab, [moving], target_node=target)
    assert not again.get("changed") and not again.get("failed"), again.get("msg")
    assert again["vms"][0]["already"] and again["vms"][0]["msg"] == "a move is under way: %s (Pending)" % (
        created["metadata"]["name"])
    assert len(migrations_of(fleet.custom, fleet.vmis)) == 1

    # A target that is no node, and a VMI that is not there, each named.
    nowhere = migrate(lab, [pinned, moving + "-gone"], target_node="oc-it-no-such-node")
    assert nowhere.get("failed") and not nowhere.get("changed")
    assert [vm.get("msg") for vm in nowhere["vms"]] == [
        "KubeVirt says %s cannot move live: DisksNotLiveMigratable: cannot migrate VMI: PVC rootdisk is not shared"
        % pinned, "VMI %s/%s-gone not found" % (NAMESPACE, moving)]
    assert len(migrations_of(fleet.custom, fleet.vmis)) == 1


def test_without_the_right_to_create_migrations_the_user_is_told_why(lab, fleet):
    """The lab's unbound user has no role: the API's refusal is the VMI's."""
    moving = fleet.vmi(cores=2)
    refused = run_module("kubevirt_vm_migrate", {"namespace": NAMESPACE, "names": [moving],
                                                 "kubeconfig": lab["OVERCOMMIT_KUBECONFIG_UNBOUND"]})
    assert refused.get("failed") and "forbidden" in (refused.get("msg") or "").lower(), refused.get("msg")
    assert "Traceback" not in str(refused)
    assert migrations_of(fleet.custom, [moving]) == []


# apply_plan.yml reads every domain of the lab's hypervisor too.
@pytest.mark.xdist_group("libvirt")
def test_an_approved_plans_move_is_asked_of_kubevirt_once_by_apply_plan(lab, fleet, make_nodes, tmp_path):
    """apply_plan.yml over the lab inventory with a plan whose one action
    moves a KubeVirt VM to the node on its target host: made here with the
    collection's plan code, as recommend.yml -e migrate=true writes one for
    a proposed move (unit tests of control/recommend.py); the lab's one real
    node cannot give the policy a second node to propose."""
    moving = fleet.vmi(cores=2)
    (target,) = make_nodes(1)
    key = "%s/%s" % (NAMESPACE, moving)
    action = {"action": "migrate", "object": key, "vm": key, "host": "lab-hypervisor", "to": "hv-2",
              "to_node": target, "platform": "kubevirt", "rule": "placement",
              "reason": "victims still wait with every culprit at its floor, 3 cycles in a row"}
    plan = plans.make({"actions": [action]}, {key: {"cap_cpus": None, "throttle_time": None}}, time.time(), 600)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    change = "%s: move live to hv-2 (node %s), with its records" % (key, target)
    applied = run_playbook("apply_plan.yml", {"plan_file": str(plan_file)})
    assert applied.returncode == 0, applied.stdout[-4000:]
    (created,) = migrations_of(fleet.custom, [moving])
    assert created["spec"] == {"vmiName": moving, "addedNodeSelector": {"kubernetes.io/hostname": target}}
    assert plan["id"] in created["metadata"]["annotations"]["overcommit.control/migrate-reason"]
    assert '"applied: %s (placement)"' % change in applied.stdout, applied.stdout[-4000:]
    # Applied again while KubeVirt has not finished it: done, nothing more asked.
    again = run_playbook("apply_plan.yml", {"plan_file": str(plan_file)})
    assert again.returncode == 0, again.stdout[-4000:]
    assert '"already applied: %s"' % change in again.stdout, again.stdout[-4000:]
    assert len(migrations_of(fleet.custom, [moving])) == 1
