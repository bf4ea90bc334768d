# -*- coding: utf-8 -*-
"""domain/migration.py: the refusals of a move, judged before anything changes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import migration


def vm(name="web", klass="shared", vcpus=2, active=True, **extra):
    # As libvirt_cputune_info returns a domain.
    entry = {"name": name, "class": klass, "vcpus": vcpus, "active": active}
    entry.update(extra)
    return entry


def target(cpus=4, vms=()):
    return {"name": "hv-2", "cpus": cpus, "vms": list(vms)}


def test_a_shared_vm_moves_where_the_promises_fit():
    assert migration.refusal(vm(), "hv-1", target(vms=[vm("a", vcpus=4), vm("db", "dedicated", 2)])) is None
    # Its floor (2 x 0.25) beside a dedicated VM's 2 CPUs and a shared floor of 1.0: 3.5 of 4.
    assert migration.promised_cpus(vm()) == 0.5
    assert migration.promised_cpus(vm(klass="dedicated")) == 2.0
    assert migration.promised_cpus(vm(klass="burstable", baseline_cpus=0.8)) == 0.8


def test_what_cannot_work_is_refused_naming_why():
    assert migration.refusal(vm(), "hv-2", target()) == "web is already on hv-2"
    assert migration.refusal(vm(active=False), "hv-1", target()) == "web is shut off: a live move needs it running"
    assert migration.refusal(vm(), "hv-1", target(vms=[vm(active=False)])) == "hv-2 already has a domain named web"
    pinned = vm("db", "dedicated", 2, cpus_allowed=[4, 5])
    assert migration.refusal(pinned, "hv-1", target()) == \
        "db is dedicated and pinned to CPUs 4,5 that hv-2 lacks (it has 4)"
    # Pinned to CPUs the target has: it may move.
    assert migration.refusal(dict(pinned, cpus_allowed=[2, 3]), "hv-1", target()) is None


def test_a_target_without_room_by_the_collections_accounting_is_refused():
    full = target(cpus=4, vms=[vm("db", "dedicated", 3), vm("a", vcpus=2), vm("off", "dedicated", 4, active=False)])
    assert migration.refusal(vm("big", "dedicated", 1), "hv-1", full) == (
        "no room on hv-2 by the collection's accounting: its running VMs are promised 3.50 of its 4 CPUs and big "
        "needs 1.00 more (its vCPUs)")
    # A shut-off VM promises nothing; a shared VM needs only its floor.
    assert migration.refusal(vm("small", vcpus=2), "hv-1", full) is None
    assert "would pass max_vcpu_ratio 1" in migration.refusal(vm("small"), "hv-1", full, max_vcpu_ratio=1)
    assert migration.refusal(vm("small"), "hv-1", full, max_vcpu_ratio=2) is None


def test_bad_input_names_the_field():
    with pytest.raises(ValueRangeError) as caught:
        migration.refusal(vm(), "hv-1", {"name": "hv-2", "cpus": 0})
    assert "target.cpus" in str(caught.value)
    with pytest.raises(ValueRangeError) as caught:
        migration.refusal(vm(klass="gold"), "hv-1", target())
    assert "web.class" in str(caught.value)
    with pytest.raises(ValueRangeError) as caught:
        migration.check_max_vcpu_ratio(0)
    assert "max_vcpu_ratio" in str(caught.value)


def test_the_records_that_did_not_arrive_as_they_left_are_named():
    before = {"class": "shared", "throttle": {"cpus": 0.5, "reason": "INC-1"}, "policy": {"cap": 0.5}, "paused": False}
    assert migration.records_lost(before, dict(before, cap_cpus=0.5)) == []
    assert migration.records_lost(before, dict(before, throttle=None)) == ["throttle"]
    assert migration.records_of(dict(before, name="web")) == before
