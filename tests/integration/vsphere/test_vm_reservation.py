"""vsphere_vm_reservation against the lab's vcsim, driven as a real module
and checked independently with pyVmomi."""

import json

import pytest
from pyVmomi import vim

from vsphere_checks import allocation, record_of
from vsphere_task import wait_for_task

pytestmark = pytest.mark.xdist_group("vcsim")

MODULE = "vsphere_vm_reservation"
# Every field of both allocations: vcsim replaces a whole allocation with the
# fields sent, so only a full change makes "restore is exact" observable there.
FULL = {
    "cpu": {"reservation": 500, "limit": 2000, "shares_level": "high"},
    "memory": {"reservation": 16, "limit": 32, "shares": 700},
}


def by_name(result):
    return dict((vm["name"], vm) for vm in result["vms"])


def test_reserve_change_and_restore_exactly(run, vsphere, lab_vms):
    vm0, vm1 = lab_vms[0], lab_vms[1]
    originals = [allocation(vm) for vm in (vm0, vm1)]

    # Two VMs, one by name and one by managed object id, one login.
    result = run(MODULE, dict(FULL, vms=[vm0.name], moids=[vm1._moId], reason="INC-1 reserve node VMs"), diff=True)
    assert result["changed"] is True and not result.get("failed"), result
    for vm in (vm0, vm1):
        assert allocation(vm)["cpu"] == {"reservation": 500, "limit": 2000, "level": "high", "shares": None}
        assert allocation(vm)["memory"] == {"reservation": 16, "limit": 32, "level": "custom", "shares": 700}
        record = json.loads(record_of(vsphere, vm))
        assert record["reason"] == "INC-1 reserve node VMs"
        assert record["prior"]["cpu.reservation"] == originals[0]["cpu"]["reservation"]
    assert len(result["diff"]) == 2 and result["diff"][0]["after"]["cpu"]["reservation"] == 500

    again = run(MODULE, dict(FULL, vms=[vm0.name], moids=[vm1._moId]))
    assert again["changed"] is False and all(vm["sent"] == {} for vm in again["vms"])

    # A second change writes the changed resource whole (as read, with the
    # change), the unchanged one not at all, and keeps the first prior values.
    change = run(MODULE, {"vms": [vm0.name], "cpu": {"reservation": 1000, "limit": 2000}})
    assert change["changed"] is True
    assert change["vms"][0]["sent"] == {"cpu": {"reservation": 1000, "limit": 2000, "shares_level": "high",
                                                "shares": change["vms"][0]["before"]["cpu"]["shares"]}}
    assert vm0.config.cpuAllocation.reservation == 1000
    assert json.loads(record_of(vsphere, vm0))["prior"]["cpu.reservation"] == originals[0]["cpu"]["reservation"]

    restored = run(MODULE, {"vms": [vm0.name, vm1.name], "state": "restored"})
    assert restored["changed"] is True and not restored.get("failed"), restored
    assert [allocation(vm) for vm in (vm0, vm1)] == originals
    assert record_of(vsphere, vm0) == "" and record_of(vsphere, vm1) == ""

    assert run(MODULE, {"vms": [vm0.name, vm1.name], "state": "restored"})["changed"] is False


def test_a_reservation_alone_keeps_the_limit_and_shares_someone_else_set(run, vsphere, lab_vms):
    """vcsim resets the members a reconfigure leaves out of an allocation (as
    some hosts do; vCenter keeps them): a reservation change must not drop a
    limit or shares set by someone else, and restore puts back exactly the
    allocation as it was, those included."""
    vm = lab_vms[1]
    spec = vim.vm.ConfigSpec(cpuAllocation=vim.ResourceAllocationInfo(
        reservation=0, limit=3000, shares=vim.SharesInfo(level="custom", shares=1234)))
    wait_for_task(vm.ReconfigVM_Task(spec))
    foreign = allocation(vm)
    assert foreign["cpu"] == {"reservation": 0, "limit": 3000, "level": "custom", "shares": 1234}

    result = run(MODULE, {"vms": [vm.name], "cpu": {"reservation": 600}})
    assert result["changed"] is True and not result.get("failed"), result
    assert allocation(vm)["cpu"] == {"reservation": 600, "limit": 3000, "level": "custom", "shares": 1234}
    assert allocation(vm)["memory"] == foreign["memory"]

    restored = run(MODULE, {"vms": [vm.name], "state": "restored"})
    assert restored["changed"] is True and not restored.get("failed"), restored
    assert allocation(vm) == foreign and record_of(vsphere, vm) == ""


def test_memory_reservation_locked_to_max_is_set_and_restored(run, vsphere, lab_vms):
    vm = lab_vms[2]
    original = allocation(vm)
    result = run(MODULE, {"vms": [vm.name], "memory_reservation_locked_to_max": True})
    assert result["vms"][0]["sent"] == {"memory_reservation_locked_to_max": True}
    assert vm.config.memoryReservationLockedToMax is True
    assert result["vms"][0]["after"]["memory"]["reservation"] == vm.config.hardware.memoryMB
    run(MODULE, {"vms": [vm.name], "state": "restored"})
    assert allocation(vm) == original and record_of(vsphere, vm) == ""


def test_check_mode_reports_the_change_and_changes_nothing(run, vsphere, lab_vms):
    vm = lab_vms[0]
    before = allocation(vm)
    result = run(MODULE, dict(FULL, vms=[vm.name]), check=True, diff=True)
    assert result["changed"] is True
    assert result["vms"][0]["after"]["cpu"]["reservation"] == 500
    assert allocation(vm) == before and record_of(vsphere, vm) == ""


def test_invalid_values_are_refused_before_any_change(run, vsphere, lab_vms):
    before = [allocation(vm) for vm in lab_vms]
    names = [vm.name for vm in lab_vms]

    bad_option = run(MODULE, {"vms": names, "cpu": {"reservation": 900, "limit": 500}})
    assert bad_option["failed"] is True and bad_option["field"] == "cpu.limit"
    assert "cpu.limit" in bad_option["msg"] and "at least the reservation" in bad_option["msg"]

    bad_level = run(MODULE, {"vms": names, "memory": {"shares_level": "custom"}})
    assert bad_level["failed"] is True and "memory.shares" in bad_level["msg"]

    # Each lab VM has 1 vCPU on a 2294 MHz host and 32 MB of memory.
    over_capacity = run(MODULE, {"vms": names, "cpu": {"reservation": 100000}, "memory": {"reservation": 16}})
    assert over_capacity["failed"] is True
    assert all(vm["field"] == "cpu.reservation" and "configured CPU capacity" in vm["msg"] for vm in over_capacity["vms"])

    # A kept limit below the new reservation: refused per VM, naming the field.
    wait_for_task(lab_vms[3].ReconfigVM_Task(vim.vm.ConfigSpec(cpuAllocation=vim.ResourceAllocationInfo(
        reservation=0, limit=300, shares=vim.SharesInfo(level="normal", shares=0)))))
    before[3] = allocation(lab_vms[3])
    below_limit = run(MODULE, {"vms": [names[3]], "cpu": {"reservation": 400}})
    assert below_limit["failed"] is True and below_limit["vms"][0]["field"] == "cpu.reservation"
    assert "below cpu.reservation=400" in below_limit["vms"][0]["msg"]

    assert [allocation(vm) for vm in lab_vms] == before
    assert all(record_of(vsphere, vm) == "" for vm in lab_vms)


def test_a_name_with_surrounding_spaces_changes_no_vm(run, vsphere, lab_vms):
    before = [allocation(vm) for vm in lab_vms]
    result = run(MODULE, {"vms": [lab_vms[0].name, " " + lab_vms[1].name], "cpu": {"reservation": 300}})
    assert result["failed"] is True and result["field"] == "vms" and not result.get("changed"), result
    assert result["msg"].startswith("vms[1]=' %s' has surrounding spaces" % lab_vms[1].name), result["msg"]
    folder = run(MODULE, {"folders": ["/DC0/vm "], "cpu": {"reservation": 300}})
    assert folder["failed"] is True and folder["field"] == "folders"
    info = run("vsphere_overcommit_info", {"hosts": [" DC0_C0_H0"], "vm_stats": False})
    assert info["failed"] is True and info["field"] == "hosts"
    assert [allocation(vm) for vm in lab_vms] == before
    assert all(record_of(vsphere, vm) == "" for vm in lab_vms)


def test_a_stale_change_version_is_detected_and_nothing_is_overwritten(run, vsphere, lab_vms):
    vm = lab_vms[1]
    plan = run(MODULE, {"vms": [vm.name], "cpu": {"reservation": 800}}, check=True)
    planned_version = plan["vms"][0]["change_version"]

    # Someone else changes the VM after the plan was reviewed.
    wait_for_task(vm.ReconfigVM_Task(vim.vm.ConfigSpec(cpuAllocation=vim.ResourceAllocationInfo(
        reservation=100, limit=-1, shares=vim.SharesInfo(level="normal", shares=0)))))
    assert vm.config.changeVersion != planned_version

    result = run(MODULE, {"vms": [vm.name], "cpu": {"reservation": 800},
                          "change_versions": {vm.name: planned_version}})
    assert result["failed"] is True and result["vms"][0]["field"] == "change_versions"
    assert "changed since it was read" in result["vms"][0]["msg"]
    assert vm.config.cpuAllocation.reservation == 100 and record_of(vsphere, vm) == ""


def test_unknown_vms_are_reported_and_the_others_still_done(run, vsphere, lab_vms):
    vm = lab_vms[2]
    before = allocation(vm)
    # Every CPU field changes: vcsim (unlike vCenter) resets the fields a
    # reconfigure leaves out, which would hide what restore puts back.
    result = run(MODULE, {"vms": ["no-such-vm", vm.name], "uuids": ["00000000-0000-0000-0000-000000000000"],
                          "cpu": {"reservation": 250, "limit": 1000, "shares_level": "low"}})
    assert result["failed"] is True
    outcome = by_name(result)
    assert outcome["no-such-vm"]["failed"] is True
    assert outcome["00000000-0000-0000-0000-000000000000"]["failed"] is True
    assert outcome[vm.name]["changed"] is True and vm.config.cpuAllocation.reservation == 250
    run(MODULE, {"uuids": [vm.config.uuid], "state": "restored"})
    assert allocation(vm) == before


def test_folder_and_cluster_select_every_lab_vm(run, lab_vms):
    names = sorted(vm.name for vm in lab_vms)
    by_cluster = run(MODULE, {"clusters": ["DC0_C0"], "cpu": {"reservation": 10}}, check=True)
    by_folder = run(MODULE, {"folders": ["/DC0/vm"], "cpu": {"reservation": 10}}, check=True)
    assert sorted(vm["name"] for vm in by_cluster["vms"]) == names
    assert sorted(vm["name"] for vm in by_folder["vms"]) == names
    unknown = run(MODULE, {"folders": ["/DC0/vm/none"], "cpu": {"reservation": 10}}, check=True)
    assert unknown["failed"] is True and unknown["field"] == "folders"
    no_selector = run(MODULE, {"cpu": {"reservation": 10}}, check=True)
    assert no_selector["failed"] is True and "vms, uuids, moids, folders, clusters" in no_selector["msg"]


def test_connection_options_from_the_task_and_a_refused_login(run, lab, lab_vms):
    args = {"hostname": lab["VMWARE_HOST"], "port": int(lab["VMWARE_PORT"]), "username": lab["VMWARE_USER"],
            "validate_certs": False, "vms": [lab_vms[0].name], "cpu": {"reservation": 10}}
    empty_env = {"VMWARE_HOST": "", "VMWARE_USER": "", "VMWARE_PASSWORD": "", "VMWARE_PORT": "443"}
    ok = run(MODULE, dict(args, password=lab["VMWARE_PASSWORD"]), check=True, env=empty_env)
    assert not ok.get("failed") and ok["vms"][0]["moid"] == lab_vms[0]._moId
    refused = run(MODULE, dict(args, password="wrong-password"), check=True, env=empty_env)
    assert refused["failed"] is True and "refused" in refused["msg"]
    assert "wrong-password" not in json.dumps(refused)
