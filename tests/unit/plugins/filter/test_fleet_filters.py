import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.overcommit.control.plugins.filter import fleet


def host(changed=(), unchanged=(), skipped=(), conflict=(), failed=None):
    return {"summary": {"changed": list(changed), "unchanged": list(unchanged), "skipped": list(skipped),
                        "conflict": list(conflict), "failed": dict(failed or {})}}


def test_the_filter_is_registered():
    assert sorted(fleet.FilterModule().filters()) == ["fleet_found_nowhere"]


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
