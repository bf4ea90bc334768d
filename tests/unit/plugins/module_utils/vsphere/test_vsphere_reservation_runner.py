# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reservation runner's write order and guards, with a client double:
a VM changed between the read and the write is refused, a fault vCenter
reports for a stale changeVersion is reported the same way, and a record
written for a change that then failed is taken back."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.overcommit.control.plugins.module_utils.vsphere.client import VsphereClientError
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.reservation import check_request
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.reservation_runner import ReservationRunner

ALLOCATION = {"reservation": 0, "limit": -1, "shares_level": "normal", "shares": 1000}


def vm(name, version):
    return {"name": name, "runtime.host": "host-1", "runtime.powerState": "poweredOn", "config.changeVersion": version,
            "config.hardware.numCPU": 2, "config.hardware.memoryMB": 4096, "config.cpuAllocation": dict(ALLOCATION),
            "config.memoryAllocation": dict(ALLOCATION), "customValue": {}}


class FakeClient(object):
    def __init__(self, versions_now=None, faults=None):
        self.vms = {"vm-1": vm("a", "v1"), "vm-2": vm("b", "v2")}
        self.versions_now = versions_now or {}
        self.faults = faults or {}
        self.calls = []

    def inventory(self):
        return {"vms": self.vms, "hosts": {"host-1": {"name": "esx", "summary.hardware": {"cpuMhz": 2000}}},
                "clusters": {}, "folders": {}, "datacenters": {}, "root_folder": "group-d1"}

    def custom_field_key(self, name):
        return None

    def ensure_custom_field(self, name):
        self.calls.append(("ensure_custom_field", name))
        return 7

    def change_versions(self, moids):
        return dict((moid, self.versions_now.get(moid, self.vms[moid]["config.changeVersion"])) for moid in moids)

    def set_custom_value(self, moid, key, value):
        self.calls.append(("set_custom_value", moid, value))

    def reconfigure_many(self, changes, window):
        self.calls.append(("reconfigure_many", sorted(changes)))
        return dict((moid, self.faults.get(moid)) for moid in changes)


def params(**extra):
    base = {"state": "present", "vms": ["a", "b"], "uuids": [], "moids": [], "folders": [], "clusters": [],
            "cpu": {"reservation": 1000}, "memory": None, "memory_reservation_locked_to_max": None,
            "change_versions": {}, "attribute": "overcommit.control.reservation", "reason": "test",
            "parallel_tasks": 16}
    base.update(extra)
    return base


def run(client, check_mode=False, **extra):
    runner = ReservationRunner(client, check_request(params(**extra), check_mode), now="2026-01-01T00:00:00Z",
                               requested_by="ops")
    return dict((r["name"], r) for r in runner.run())


def test_a_vm_changed_since_it_was_read_is_refused_and_not_written():
    client = FakeClient(versions_now={"vm-2": "v2-newer"})
    results = run(client)
    assert results["a"]["changed"] is True and not results["a"].get("failed")
    assert results["b"]["failed"] is True and "changeVersion v2, now v2-newer" in results["b"]["msg"]
    assert results["b"]["sent"] == {}
    written = [call[1] for call in client.calls if call[0] == "set_custom_value"]
    assert written == ["vm-1"]
    assert ("reconfigure_many", ["vm-1"]) in client.calls


def test_the_record_is_written_before_the_change_and_sent_fields_carry_the_planned_version():
    client = FakeClient()
    run(client)
    kinds = [call[0] for call in client.calls]
    assert kinds.index("set_custom_value") < kinds.index("reconfigure_many")
    record = json.loads([call[2] for call in client.calls if call[0] == "set_custom_value"][0])
    assert record["prior"] == {"cpu.reservation": 0} and record["reason"] == "test" and record["by"] == "ops"


def test_a_stale_fault_from_vcenter_is_reported_and_the_new_record_taken_back():
    client = FakeClient(faults={"vm-1": VsphereClientError("Cannot complete operation due to concurrent modification",
                                                           "ConcurrentAccess")})
    results = run(client)
    assert results["a"]["failed"] is True and "vCenter refused it as stale" in results["a"]["msg"]
    values_for_vm1 = [call[2] for call in client.calls if call[0] == "set_custom_value" and call[1] == "vm-1"]
    assert values_for_vm1[0] != "" and values_for_vm1[-1] == ""
    assert results["b"]["changed"] is True


def test_check_mode_reads_only():
    client = FakeClient()
    results = run(client, check_mode=True)
    assert results["a"]["changed"] is True and results["a"]["sent"]["cpu"]["reservation"] == 1000
    assert client.calls == []


def test_a_vm_without_readable_configuration_is_refused():
    client = FakeClient()
    client.vms["vm-2"]["config.changeVersion"] = None
    results = run(client)
    assert results["b"]["failed"] is True and "cannot be read" in results["b"]["msg"]
    assert results["a"]["changed"] is True


def test_a_long_reason_is_shortened_in_the_record():
    client = FakeClient()
    run(client, reason="x" * 500)
    record = json.loads([call[2] for call in client.calls if call[0] == "set_custom_value"][0])
    assert record["reason"] == "x" * 120
