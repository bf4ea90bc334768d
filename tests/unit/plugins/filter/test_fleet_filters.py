import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.overcommit.control.plugins.filter import fleet


def host(changed=(), unchanged=(), skipped=(), conflict=(), failed=None):
    return {"summary": {"changed": list(changed), "unchanged": list(unchanged), "skipped": list(skipped),
                        "conflict": list(conflict), "failed": dict(failed or {})}}


def test_the_filter_is_registered():
    assert sorted(fleet.FilterModule().filters()) == [
        "fleet_by_namespace", "fleet_failures", "fleet_found_nowhere", "fleet_summaries"]


def test_a_name_every_host_skipped_is_found_nowhere_in_the_order_asked():
    results = [host(changed=["web-17"], skipped=["web-71", "db-1"]), host(unchanged=["db-1"], skipped=["web-17", "web-71"])]
    assert fleet.fleet_found_nowhere(["web-71", "web-17", "db-1", "zz-9"], results) == ["web-71", "zz-9"]


def test_a_name_one_host_failed_or_left_alone_was_found():
    results = [host(failed={"web-17": "cgroup gone"}, skipped=["web-18"]), host(conflict=["web-18"], skipped=["web-17"])]
    assert fleet.fleet_found_nowhere(["web-17", "web-18"], results) == []


def test_hosts_that_did_not_run_the_task_are_left_out_and_when_none_ran_it_no_name_was_handled():
    # A host that failed before the task registered a result without a summary, or none at all.
    assert fleet.fleet_found_nowhere(["web-17"], [None, {"failed": True, "msg": "unreachable"}, host(skipped=["web-17"])]) == [
        "web-17"]
    assert fleet.fleet_found_nowhere(["web-17"], [None, {"msg": "unreachable"}]) == ["web-17"]
    assert fleet.fleet_found_nowhere(["web-17", "web-18"], []) == ["web-17", "web-18"]


def test_names_that_are_not_a_list_of_strings_fail_naming_the_field():
    for bad in ("web-17", [17], None):
        with pytest.raises(AnsibleFilterError) as error:
            fleet.fleet_found_nowhere(bad, [host()])
        assert "fleet_found_nowhere: domains=" in str(error.value)


def test_failures_name_each_object_and_each_whole_task_that_failed_over_every_step():
    steps = {
        "libvirt throttles": host(changed=["web-1"], failed={"web-2": "libvirt: domain is gone"}),
        "libvirt policy state": {"skipped": True, "changed": False},  # the task did not run
        "node gates": None,  # the step was not part of the run
        "kubevirt caps": {"results": [host(changed=["lab/vm-1"]), host(failed={"lab/vm-2": "no launcher pod"}),
                                      {"failed": True, "msg": "namespace tenant-b: forbidden"}]},
        # Registered with failed_when: false, a task that failed as a whole no longer says failed.
        "vsphere reservations": {"failed": False, "failed_when_result": False, "msg": "cannot log in to vCenter"},
    }
    assert fleet.fleet_failures(steps) == [
        "libvirt throttles: web-2: libvirt: domain is gone",
        "kubevirt caps: lab/vm-2: no launcher pod",
        "kubevirt caps: namespace tenant-b: forbidden",
        "vsphere reservations: cannot log in to vCenter",
    ]
    assert fleet.fleet_failures({"libvirt throttles": host(changed=["web-1"])}) == []


def test_failures_of_something_not_a_mapping_is_refused_naming_it():
    with pytest.raises(AnsibleFilterError, match="steps"):
        fleet.fleet_failures(["not", "a", "mapping"])


def test_vms_are_grouped_by_namespace_in_the_order_given():
    assert fleet.fleet_by_namespace(["tenant-a/web-2", "tenant-b/db-1", "tenant-a/web-1"]) == {
        "tenant-a": ["web-2", "web-1"], "tenant-b": ["db-1"]}
    for bad in (["web-1"], ["a/b/c"], ["/web-1"], [7]):
        with pytest.raises(AnsibleFilterError, match=r"\[0\]"):
            fleet.fleet_by_namespace(bad)


def test_summaries_are_kept_by_step_a_loops_as_a_list():
    steps = {"libvirt throttles": host(changed=["web-1"]), "node gates": {"skipped": True},
             "kubevirt caps": {"results": [host(changed=["lab/vm-1"]), {"failed": False, "msg": "forbidden"}]},
             "vsphere reservations": {"failed": False, "msg": "cannot log in"}}
    assert fleet.fleet_summaries(steps) == {"libvirt throttles": host(changed=["web-1"])["summary"],
                                            "kubevirt caps": [host(changed=["lab/vm-1"])["summary"]]}
