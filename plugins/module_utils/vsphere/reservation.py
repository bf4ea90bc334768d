# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What CPU and memory allocation to set on a vSphere VM, what to record so
that restore is exact, and what is valid. Pure: no I/O.

An allocation is flat: "cpu.reservation", "cpu.limit", "cpu.shares_level",
"cpu.shares" (MHz), the same under "memory." (MB), and
"memory_reservation_locked_to_max". A limit of -1 means no limit. The shares
number only matters when the level is `custom`; vSphere derives it otherwise.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.overcommit.control.plugins.module_utils.common import untrusted
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.common.record import RECORD_SCHEMA, schema_refusal

RESOURCES = ("cpu", "memory")
UNITS = {"cpu": "MHz", "memory": "MB"}
ALLOCATION_KEYS = ("reservation", "limit", "shares_level", "shares")
SHARES_LEVELS = ("low", "normal", "high", "custom")
LOCKED = "memory_reservation_locked_to_max"
FIELDS = tuple("%s.%s" % (resource, key) for resource in RESOURCES for key in ALLOCATION_KEYS) + (LOCKED,)
UNLIMITED = -1
# The record's schema (common.record), kept under "v" since its first shape.
RECORD_VERSION = RECORD_SCHEMA
DEFAULT_ATTRIBUTE = "overcommit.control.reservation"
REASON_MAX = 120


class ReservationError(ValueRangeError):
    """A value that is not allowed, or a combination that cannot hold;
    names the field and what is allowed."""

    def __init__(self, field, message):
        super(ReservationError, self).__init__(field, None, message)
        self.args = ("%s: %s" % (field, message),)


# --- desired values from the task ----------------------------------------------

def _check_int(field, value, minimum, allowed):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ReservationError(field, "%r is not allowed: %s" % (value, allowed))
    return value


def desired_from_options(cpu=None, memory=None, locked=None):
    """The fields a task asks for (only those given), validated on their
    own: reservation >= 0, limit -1 or >= 1, shares level one of
    low/normal/high/custom, custom shares >= 1 and limit >= reservation when
    both are given. Raises ReservationError before anything is read."""
    desired = {}
    for resource, options in (("cpu", cpu), ("memory", memory)):
        options = options or {}
        unit = UNITS[resource]
        reservation = _check_int(resource + ".reservation", options.get("reservation"), 0,
                                 "a reservation in %s, 0 or more" % unit)
        limit = options.get("limit")
        if limit is not None and limit != UNLIMITED:
            _check_int(resource + ".limit", limit, 1, "-1 (no limit) or a limit in %s of at least 1" % unit)
        level = options.get("shares_level")
        shares = options.get("shares")
        if level is not None and level not in SHARES_LEVELS:
            raise ReservationError(resource + ".shares_level", "%r is not allowed: one of %s" % (level, ", ".join(SHARES_LEVELS)))
        if shares is not None:
            _check_int(resource + ".shares", shares, 1, "a number of shares of at least 1 (implies shares_level=custom)")
            if level not in (None, "custom"):
                raise ReservationError(resource + ".shares", "a number of shares needs shares_level=custom, not %s" % level)
            level = "custom"
        elif level == "custom":
            raise ReservationError(resource + ".shares", "shares_level=custom needs a number of shares")
        if reservation is not None and limit is not None and limit != UNLIMITED and limit < reservation:
            raise ReservationError(resource + ".limit", "%d %s is below %s.reservation=%d %s; allowed: -1 (no limit) or at least the reservation"
                                   % (limit, unit, resource, reservation, unit))
        for key, value in (("reservation", reservation), ("limit", limit), ("shares_level", level), ("shares", shares)):
            if value is not None:
                desired["%s.%s" % (resource, key)] = value
    if locked is not None:
        desired[LOCKED] = bool(locked)
    return desired


# --- live values -------------------------------------------------------------------

def live_allocation(vm):
    """The flat allocation of one VM from its inventory properties. An unset
    memoryReservationLockedToMax is false, as vSphere treats it."""
    live = {}
    for resource in RESOURCES:
        info = vm.get("config.%sAllocation" % resource) or {}
        for key in ALLOCATION_KEYS:
            live["%s.%s" % (resource, key)] = info.get(key)
    live[LOCKED] = bool(vm.get("config.memoryReservationLockedToMax"))
    return live


def capacity(vm, host):
    """What the VM is configured with: vCPUs x host core speed in MHz, and its memory in MB."""
    vcpus = vm.get("config.hardware.numCPU")
    mhz = ((host or {}).get("summary.hardware") or {}).get("cpuMhz")
    return {"vcpus": vcpus, "cpu_mhz_per_vcpu": mhz,
            "cpu": vcpus * mhz if vcpus and mhz else None,
            "memory": vm.get("config.hardware.memoryMB")}


def nested(flat):
    """{"cpu": {...}, "memory": {...}, "memory_reservation_locked_to_max": x} for reports."""
    out = {}
    for field, value in flat.items():
        if "." in field:
            resource, key = field.split(".", 1)
            out.setdefault(resource, {})[key] = value
        else:
            out[field] = value
    return out


# --- the change set ---------------------------------------------------------------

def _differs(field, live, desired):
    if field.endswith(".shares"):
        # The number is vSphere's own unless the level is custom.
        level_field = field.replace(".shares", ".shares_level")
        level = desired.get(level_field, live.get(level_field))
        return level == "custom" and live.get(field) != desired[field]
    return live.get(field) != desired[field]


class ChangeSet(object):
    """Desired against live for one VM: which fields change, the allocation
    after the change, and what to send (the whole allocation of a changed
    resource).

    Locking the memory reservation to the VM's memory makes vSphere set the
    reservation itself: it is not sent, but is shown in `after` and counts as
    touched so a record keeps its prior value."""

    def __init__(self, live, desired, memory_mb=None):
        self.live = dict(live)
        self.desired = dict(desired)
        self.memory_mb = memory_mb
        self.changed = [field for field in FIELDS if field in desired and _differs(field, live, desired)]
        for resource in RESOURCES:
            # A level and its number travel together (SharesInfo holds both).
            level, number = resource + ".shares_level", resource + ".shares"
            if number in self.changed and level not in self.changed:
                self.changed.insert(self.changed.index(number), level)
        self.after = dict(live)
        for field in self.changed:
            self.after[field] = desired[field]
        for resource in RESOURCES:
            level, number = resource + ".shares_level", resource + ".shares"
            if level in self.changed and self.after[level] != "custom" and number not in desired:
                # vSphere recomputes the number for low/normal/high.
                self.after[number] = live.get(number) if live.get(level) == self.after[level] else None
        self.implied = []
        if self.after.get(LOCKED) and memory_mb is not None and "memory.reservation" not in desired \
                and live.get("memory.reservation") != memory_mb:
            self.implied.append("memory.reservation")
            self.after["memory.reservation"] = memory_mb

    @property
    def touched(self):
        """Fields whose prior value a record must keep."""
        return self.changed + [field for field in self.implied if field not in self.changed]

    def spec_fields(self):
        """The fields to send, nested as the client's config_spec wants them:
        the whole allocation (as read, with the changes) of every resource
        with a change, none of a resource without. vCenter keeps a member
        left out of an allocation but vcsim and some older hosts reset it,
        so sending only the changed member could drop a limit or shares
        someone else set; the changeVersion guard makes sending what was
        read safe."""
        fields = {}
        if LOCKED in self.changed:
            fields[LOCKED] = self.after[LOCKED]
        for resource in RESOURCES:
            if not any(field.startswith(resource + ".") for field in self.changed):
                continue
            alloc = dict((key, self.after.get("%s.%s" % (resource, key))) for key in ALLOCATION_KEYS)
            alloc = dict((key, value) for key, value in alloc.items() if value is not None)
            if "shares_level" in alloc:
                # SharesInfo needs a number; vSphere ignores it for a named level.
                alloc.setdefault("shares", 0)
            else:
                alloc.pop("shares", None)
            fields[resource] = alloc
        return fields


def validate_after(change_set, vm_capacity):
    """Checks the allocation a change would leave before it is sent: limit
    >= reservation, reservation within the VM's configured capacity, and a
    locked memory reservation not contradicted. Raises ReservationError."""
    if not change_set.changed:
        return
    after, desired = change_set.after, change_set.desired
    for resource in RESOURCES:
        unit = UNITS[resource]
        reservation = after.get(resource + ".reservation")
        limit = after.get(resource + ".limit")
        if reservation is not None and limit is not None and limit != UNLIMITED and limit < reservation:
            field = resource + ".limit" if resource + ".limit" in change_set.changed else resource + ".reservation"
            raise ReservationError(field, "%s.limit=%d %s would be below %s.reservation=%d %s; the limit must be -1 "
                                   "(no limit) or at least the reservation" % (resource, limit, unit, resource, reservation, unit))
    cpu_capacity = vm_capacity.get("cpu")
    reservation = after.get("cpu.reservation")
    if cpu_capacity is not None and reservation is not None and reservation > cpu_capacity:
        raise ReservationError("cpu.reservation", "%d MHz exceeds the VM's configured CPU capacity of %d MHz (%d vCPUs x %d MHz); "
                               "allowed 0..%d" % (reservation, cpu_capacity, vm_capacity["vcpus"], vm_capacity["cpu_mhz_per_vcpu"],
                                                  cpu_capacity))
    memory_capacity = vm_capacity.get("memory")
    reservation = after.get("memory.reservation")
    if memory_capacity is not None and reservation is not None and reservation > memory_capacity:
        raise ReservationError("memory.reservation", "%d MB exceeds the VM's configured memory of %d MB; allowed 0..%d"
                               % (reservation, memory_capacity, memory_capacity))
    if after.get(LOCKED) and memory_capacity is not None:
        wanted = desired.get("memory.reservation")
        if wanted is not None and wanted != memory_capacity:
            raise ReservationError("memory.reservation", "%d MB contradicts memory_reservation_locked_to_max=true, which "
                                   "reserves all %d MB of the VM's memory" % (wanted, memory_capacity))


def check_request(params, check_mode):
    """The task's options as a request, every value checked before anything
    is read or changed; raises ReservationError naming the field and what
    is allowed. `desired`: the allocation fields to set (state=present)."""
    desired = {}
    if params["state"] == "present":
        desired = desired_from_options(params["cpu"], params["memory"], params["memory_reservation_locked_to_max"])
        if not desired:
            raise ReservationError("cpu", "nothing to set: give cpu, memory or memory_reservation_locked_to_max")
    if params["parallel_tasks"] < 1:
        raise ReservationError("parallel_tasks", "%r is not allowed: at least 1" % params["parallel_tasks"])
    if not params["attribute"]:
        raise ReservationError("attribute", "the custom attribute name must not be empty")
    return dict(params, check_mode=check_mode, desired=desired)


# --- the record ------------------------------------------------------------------

def encode_record(record):
    return json.dumps(record, sort_keys=True, separators=(",", ":")) if record else ""


def decode_record(text, attribute=DEFAULT_ATTRIBUTE):
    """The record kept in the custom attribute, or None when there is none.
    Raises ReservationError when it is not ours to read."""
    if not text:
        return None
    try:
        record = untrusted.loads(text)
    except ValueError as exc:
        raise ReservationError(attribute, "the custom attribute holds %r (%s), not a reservation record; clear it or "
                                          "use another attribute" % (text[:80], exc))
    newer = schema_refusal(record.get("v")) if isinstance(record, dict) and record.get("v") is not None else None
    if newer:
        raise ReservationError(attribute, "the reservation record cannot be read: %s; nothing was changed" % newer)
    if not isinstance(record, dict) or record.get("v") != RECORD_VERSION or not isinstance(record.get("prior"), dict):
        raise ReservationError(attribute, "the custom attribute holds an unknown record format: %r" % text[:80])
    unknown = [field for field in record["prior"] if field not in FIELDS]
    if unknown:
        raise ReservationError(attribute, "the record names unknown fields: %s" % ", ".join(sorted(unknown)))
    for field in sorted(record["prior"]):
        allowed = _prior_allowed(field, record["prior"][field])
        if allowed:
            raise ReservationError(attribute, "the record's prior %s=%r cannot be restored: allowed %s; correct or "
                                              "clear the attribute" % (field, record["prior"][field], allowed))
    return record


def _prior_allowed(field, value):
    """What a prior value of `field` may be, when `value` is not that (None
    when it is): the record is read from vCenter, edited by anyone."""
    if value is None:
        return None
    key = field.rsplit(".", 1)[-1]
    if field == LOCKED:
        return None if isinstance(value, bool) else "true or false"
    if key == "shares_level":
        return None if value in SHARES_LEVELS else "one of %s" % ", ".join(SHARES_LEVELS)
    if isinstance(value, bool) or not isinstance(value, int):
        return "a whole number"
    if key == "limit":
        return None if value == UNLIMITED or value >= 1 else "-1 (no limit) or at least 1"
    return None if value >= 0 else "0 or more"


def plan_set(live, desired, record, record_fields, memory_mb=None):
    """The change for state=present and the record after it. A new record
    keeps the prior value of every field the change touches; an existing one
    keeps its prior values and adds those of newly touched fields, so restore
    always returns what was there before the first change."""
    change_set = ChangeSet(live, desired, memory_mb)
    if not change_set.changed:
        return change_set, record
    prior = dict((record or {}).get("prior", {}))
    for field in change_set.touched:
        prior.setdefault(field, live.get(field))
        if field.endswith(".shares_level"):
            prior.setdefault(field.replace(".shares_level", ".shares"), live.get(field.replace(".shares_level", ".shares")))
    new_record = dict(record_fields, v=RECORD_VERSION, prior=prior)
    return change_set, new_record


def plan_restore(live, record, memory_mb=None):
    """The change for state=restored: exactly the recorded prior values, and
    no record afterwards. A VM without a record needs nothing."""
    if not record:
        return ChangeSet(live, {}, memory_mb), None
    # A prior value vSphere never reported (None) cannot be sent back.
    desired = dict((field, value) for field, value in record["prior"].items() if value is not None)
    for resource in RESOURCES:
        level, number = resource + ".shares_level", resource + ".shares"
        if desired.get(level) not in (None, "custom"):
            # vSphere owns the number of a named level.
            desired.pop(number, None)
    return ChangeSet(live, desired, memory_mb), None
