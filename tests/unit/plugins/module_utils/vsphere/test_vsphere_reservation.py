# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vSphere reservation planner: option checks, the change set (only
changed fields), per-VM validation, the record and exact restore."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.vsphere import reservation as rsv
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.reservation import ReservationError

LIVE = {
    "cpu.reservation": 0, "cpu.limit": -1, "cpu.shares_level": "normal", "cpu.shares": 2000,
    "memory.reservation": 0, "memory.limit": -1, "memory.shares_level": "normal", "memory.shares": 81920,
    rsv.LOCKED: False,
}
CAPACITY = {"vcpus": 2, "cpu_mhz_per_vcpu": 2000, "cpu": 4000, "memory": 8192}
META = {"at": "2026-01-01T00:00:00Z", "by": "ops"}


@pytest.mark.parametrize("cpu, memory, field", [
    ({"reservation": -1}, None, "cpu.reservation"),
    ({"limit": 0}, None, "cpu.limit"),
    ({"limit": -5}, None, "cpu.limit"),
    (None, {"shares_level": "huge"}, "memory.shares_level"),
    (None, {"shares_level": "custom"}, "memory.shares"),
    (None, {"shares": 100, "shares_level": "high"}, "memory.shares"),
    (None, {"shares": 0}, "memory.shares"),
    ({"reservation": 3000, "limit": 2000}, None, "cpu.limit"),
])
def test_bad_options_are_refused_naming_the_field(cpu, memory, field):
    with pytest.raises(ReservationError) as caught:
        rsv.desired_from_options(cpu, memory)
    assert caught.value.field == field
    assert str(caught.value).startswith(field + ":")


def test_options_become_flat_fields_and_custom_shares_imply_the_level():
    desired = rsv.desired_from_options({"reservation": 1000, "limit": -1}, {"shares": 500}, True)
    assert desired == {"cpu.reservation": 1000, "cpu.limit": -1, "memory.shares_level": "custom",
                       "memory.shares": 500, rsv.LOCKED: True}


def test_a_changed_resource_is_sent_whole_and_an_unchanged_one_not_at_all():
    # A host that resets the members left out of an allocation keeps the limit and shares as read.
    change_set = rsv.ChangeSet(LIVE, {"cpu.reservation": 1000, "cpu.limit": -1, "memory.reservation": 0})
    assert change_set.changed == ["cpu.reservation"]
    assert change_set.spec_fields() == {"cpu": {"reservation": 1000, "limit": -1, "shares_level": "normal",
                                                "shares": 2000}}
    assert change_set.after["cpu.reservation"] == 1000 and change_set.after["cpu.limit"] == -1


def test_a_named_shares_level_ignores_the_number_vsphere_derives():
    assert rsv.ChangeSet(LIVE, {"cpu.shares_level": "normal"}).changed == []
    change_set = rsv.ChangeSet(LIVE, {"cpu.shares_level": "high"})
    # SharesInfo needs a number too; vSphere ignores it for a named level.
    assert change_set.spec_fields() == {"cpu": {"reservation": 0, "limit": -1, "shares_level": "high", "shares": 0}}


def test_custom_shares_compare_the_number_and_send_the_level_with_it():
    live = dict(LIVE, **{"cpu.shares_level": "custom", "cpu.shares": 700})
    assert rsv.ChangeSet(live, {"cpu.shares_level": "custom", "cpu.shares": 700}).changed == []
    change_set = rsv.ChangeSet(live, {"cpu.shares_level": "custom", "cpu.shares": 900})
    assert change_set.spec_fields() == {"cpu": {"reservation": 0, "limit": -1, "shares_level": "custom", "shares": 900}}


def test_locking_memory_implies_the_full_reservation_without_sending_it():
    change_set = rsv.ChangeSet(LIVE, {rsv.LOCKED: True}, memory_mb=8192)
    assert change_set.spec_fields() == {rsv.LOCKED: True}
    assert change_set.after["memory.reservation"] == 8192
    assert "memory.reservation" in change_set.touched


@pytest.mark.parametrize("desired, field", [
    ({"cpu.limit": 500}, None),
    ({"cpu.reservation": 4001}, "cpu.reservation"),
    ({"memory.reservation": 8193}, "memory.reservation"),
    ({rsv.LOCKED: True, "memory.reservation": 4096}, "memory.reservation"),
])
def test_the_allocation_a_change_leaves_is_checked(desired, field):
    live = dict(LIVE, **{"cpu.reservation": 1000})
    change_set = rsv.ChangeSet(live, desired, memory_mb=8192)
    with pytest.raises(ReservationError) as caught:
        rsv.validate_after(change_set, CAPACITY)
    assert caught.value.field == (field or "cpu.limit")


def test_reservation_at_capacity_is_allowed():
    rsv.validate_after(rsv.ChangeSet(LIVE, {"cpu.reservation": 4000, "memory.reservation": 8192}), CAPACITY)


def test_first_change_records_prior_values_of_touched_fields_only():
    change_set, record = rsv.plan_set(LIVE, {"cpu.reservation": 1000, "cpu.shares_level": "high"}, None, META)
    assert record == dict(META, v=1, prior={"cpu.reservation": 0, "cpu.shares_level": "normal", "cpu.shares": 2000})
    assert change_set.changed == ["cpu.reservation", "cpu.shares_level"]


def test_a_later_change_keeps_the_first_prior_values():
    _cs, first = rsv.plan_set(LIVE, {"cpu.reservation": 1000}, None, META)
    live = dict(LIVE, **{"cpu.reservation": 1000})
    _cs, second = rsv.plan_set(live, {"cpu.reservation": 2000, "memory.limit": 4096}, first, META)
    assert second["prior"] == {"cpu.reservation": 0, "memory.limit": -1}


def test_an_unchanged_vm_keeps_its_record():
    record = dict(META, v=1, prior={"cpu.reservation": 0})
    live = dict(LIVE, **{"cpu.reservation": 1000})
    change_set, after = rsv.plan_set(live, {"cpu.reservation": 1000}, record, META)
    assert change_set.changed == [] and after is record


def test_restore_returns_exactly_the_recorded_values_and_drops_the_record():
    record = dict(META, v=1, prior={"cpu.reservation": 0, "cpu.shares_level": "custom", "cpu.shares": 1234,
                                    rsv.LOCKED: False, "memory.reservation": 0})
    live = dict(LIVE, **{"cpu.reservation": 1000, "cpu.shares_level": "high", rsv.LOCKED: True,
                         "memory.reservation": 8192})
    change_set, after = rsv.plan_restore(live, record, memory_mb=8192)
    assert after is None
    assert change_set.spec_fields() == {"cpu": {"reservation": 0, "limit": -1, "shares_level": "custom", "shares": 1234},
                                        "memory": {"reservation": 0, "limit": -1, "shares_level": "normal",
                                                   "shares": 81920},
                                        rsv.LOCKED: False}


def test_restore_without_a_record_changes_nothing():
    change_set, after = rsv.plan_restore(LIVE, None)
    assert change_set.changed == [] and after is None


def test_record_round_trips_and_foreign_values_are_refused():
    record = dict(META, v=1, prior={"cpu.reservation": 0})
    assert rsv.decode_record(rsv.encode_record(record)) == record
    assert rsv.decode_record("") is None
    for text in ("hello", '{"v": 2, "prior": {}}', '{"v": 1, "prior": {"cpu.bogus": 1}}'):
        with pytest.raises(ReservationError):
            rsv.decode_record(text, "attr")


@pytest.mark.parametrize("prior,named", [
    ({"cpu.reservation": "lots"}, "cpu.reservation"), ({"memory.limit": -7}, "memory.limit"),
    ({"memory.limit": 2.5}, "memory.limit"), ({"cpu.shares_level": "max"}, "cpu.shares_level"),
    ({"cpu.shares": True}, "cpu.shares"), ({rsv.LOCKED: "yes"}, rsv.LOCKED),
])
def test_a_prior_value_restore_could_not_write_is_refused_naming_it(prior, named):
    with pytest.raises(ReservationError) as error:
        rsv.decode_record(rsv.encode_record(dict(META, v=1, prior=prior)), "attr")
    assert error.value.field == "attr" and "prior %s=" % named in str(error.value)


def test_prior_values_as_vsphere_reports_them_are_accepted():
    prior = {"cpu.reservation": 0, "cpu.limit": -1, "cpu.shares_level": "normal", "cpu.shares": 1000,
             "memory.limit": 4096, "memory.shares": None, rsv.LOCKED: False}
    assert rsv.decode_record(rsv.encode_record(dict(META, v=1, prior=prior)))["prior"] == prior
