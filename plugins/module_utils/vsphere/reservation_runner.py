# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Set and restore CPU/memory reservations, limits and shares of many VMs
in one task: one inventory query, plan every VM with the pure functions in
`reservation`, re-check changeVersions in one more query, then write. One VM
failing is reported and the others go on."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.vsphere import inventory as inv
from ansible_collections.overcommit.control.plugins.module_utils.vsphere import reservation as rsv
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.client import UNKNOWN_END, VsphereClientError


def stale_message(planned, current=None):
    now = ", now %s" % current if current is not None else "; vCenter refused it as stale"
    return ("the VM changed since it was read (changeVersion %s%s): its allocation was left as it is; run the task "
            "again" % (planned, now))


class VmPlan(object):
    """One VM's planned change and its result entry."""

    def __init__(self, result, moid, change_set, record_before, record_after, change_version):
        self.result = result
        self.moid = moid
        self.change_set = change_set
        self.record_before = record_before
        self.record_after = record_after
        self.change_version = change_version

    @property
    def record_changed(self):
        return self.record_before != self.record_after

    @property
    def changed(self):
        return bool(self.change_set.changed) or self.record_changed

    def fail(self, msg):
        # Nothing of this VM's change stays: report it as unchanged.
        self.result.update(failed=True, changed=False, msg=msg, sent={}, after=self.result.get("before"))


class ReservationRunner(object):
    """One task: state present (set) or restored, for many VMs. Each VM is
    planned on its own (one); the planned changes are then written in
    parallel batches (execute). now and requested_by: the time and the
    person a new record keeps."""

    def __init__(self, client, request, now, requested_by):
        self.client = client
        self.request = request
        self.check_mode = request["check_mode"]
        self.now = now
        self.requested_by = requested_by
        self.desired = request["desired"]

    def run(self):
        """Raises SelectorError for an unknown folder or cluster (before any change)."""
        inventory = self.client.inventory()
        selected = inv.select(inventory, self.request["vms"], self.request["uuids"], self.request["moids"],
                              self.request["folders"], self.request["clusters"])
        field_key = self.client.custom_field_key(self.request["attribute"])
        plans = []
        results = []
        for label, moid, error in selected:
            result = {"name": label, "changed": False}
            results.append(result)
            if error:
                result.update(failed=True, msg=error)
                continue
            try:
                plans.append(self.one(result, inventory, moid, field_key))
            except rsv.ReservationError as exc:
                result.update(failed=True, msg=str(exc), field=exc.field)
        pending = [plan for plan in plans if plan.changed]
        if pending and not self.check_mode:
            self.execute(pending, field_key)
        return results

    def one(self, result, inventory, moid, field_key):
        """One VM's plan (its result filled in); raises ReservationError for
        that VM alone."""
        vm = inventory["vms"][moid]
        result.update(moid=moid, uuid=vm.get("config.uuid"), power_state=vm.get("runtime.powerState"))
        if vm.get("config.changeVersion") is None or vm.get("config.hardware.numCPU") is None:
            # Orphaned or inaccessible VMs have no readable configuration.
            raise rsv.ReservationError("vms", "the VM's configuration cannot be read (orphaned or inaccessible VM)")
        change_version = vm.get("config.changeVersion")
        result["change_version"] = change_version
        expected = self.request["change_versions"] or {}
        wanted = expected.get(moid, expected.get(vm.get("name")))
        if wanted is not None and str(wanted) != str(change_version):
            raise rsv.ReservationError("change_versions", stale_message(wanted, change_version))
        live = rsv.live_allocation(vm)
        memory_mb = vm.get("config.hardware.memoryMB")
        record = rsv.decode_record((vm.get("customValue") or {}).get(field_key), self.request["attribute"])
        if self.request["state"] == "present":
            fields = {"at": self.now, "by": self.requested_by}
            if self.request["reason"]:
                # Kept short: the record lives in a custom attribute value.
                fields["reason"] = self.request["reason"][:rsv.REASON_MAX]
            change_set, record_after = rsv.plan_set(live, self.desired, record, fields, memory_mb)
        else:
            change_set, record_after = rsv.plan_restore(live, record, memory_mb)
        capacity = rsv.capacity(vm, inventory["hosts"].get(vm.get("runtime.host")))
        rsv.validate_after(change_set, capacity)
        plan = VmPlan(result, moid, change_set, record, record_after, change_version)
        before = rsv.nested(live)
        after = rsv.nested(change_set.after)
        before["record"], after["record"] = record, record_after
        result.update(changed=plan.changed, before=before, after=after, sent=change_set.spec_fields(),
                      record=record_after)
        return plan

    def execute(self, plans, field_key):
        """Writes the plans. The changeVersion every plan was made against is
        re-read in one query first: a VM changed since is refused, not
        overwritten (the same changeVersion also guards the reconfigure on
        vCenter). A new record is written before the allocation changes and
        removed only after it is back, so a failure half-way always leaves a
        VM restorable."""
        try:
            current = self.client.change_versions([plan.moid for plan in plans])
        except VsphereClientError as exc:
            for plan in plans:
                plan.fail(str(exc))
            return
        live_plans = []
        for plan in plans:
            if current.get(plan.moid) != plan.change_version:
                plan.fail(stale_message(plan.change_version, current.get(plan.moid)))
            else:
                live_plans.append(plan)
        if any(plan.record_after is not None and plan.record_changed for plan in live_plans):
            try:
                field_key = self.client.ensure_custom_field(self.request["attribute"])
            except VsphereClientError as exc:
                for plan in live_plans:
                    plan.fail(str(exc))
                return
        to_reconfigure = {}
        for plan in live_plans:
            if plan.record_after is not None and plan.record_changed:
                if not self.write_record(plan, field_key, plan.record_after):
                    continue
            if plan.change_set.changed:
                to_reconfigure[plan.moid] = plan
        outcomes = self.client.reconfigure_many(
            dict((moid, (plan.change_set.spec_fields(), plan.change_version)) for moid, plan in to_reconfigure.items()),
            window=self.request["parallel_tasks"])
        for moid, plan in to_reconfigure.items():
            error = outcomes.get(moid)
            if error is None:
                continue
            if error.fault == "ConcurrentAccess":
                plan.fail(stale_message(plan.change_version))
            else:
                plan.fail("reconfigure failed: %s" % error)
            if plan.record_before is None and plan.record_after is not None and error.fault != UNKNOWN_END:
                # Nothing changed: the record written for this attempt goes again (kept when the
                # reconfigure may have been applied: it is what a restore needs).
                self.write_record(plan, field_key, None, keep_failure=True)
        for plan in live_plans:
            if plan.record_after is None and plan.record_changed and not plan.result.get("failed"):
                self.write_record(plan, field_key, None)

    def write_record(self, plan, field_key, record, keep_failure=False):
        try:
            self.client.set_custom_value(plan.moid, field_key, rsv.encode_record(record))
        except VsphereClientError as exc:
            if not keep_failure:
                plan.fail(str(exc))
            return False
        return True
