# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who asked for a change, and when: the fields every record of a throttle,
gate or reservation keeps on the object it changed, the time they keep read
back, and the schema version every record carries.

Records outlive the collection that wrote them (a VM stays throttled across
an upgrade), so each one says which shape it has: `schema` (an attribute of
the XML elements in libvirt metadata, a key of the JSON annotations; the
vSphere record has carried its version as `v` from the start). A record
without one was written before records carried it and is read as schema 1,
whose fields it has or leaves out. A record of a newer schema than
RECORD_SCHEMA is not guessed at: the object is refused, nothing changed,
so the newer collection that wrote it can still restore it exactly."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import getpass
import time
from datetime import datetime, timezone

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError

# The shape of the records this collection writes; readers take it and older.
# The schema records are written in, and the newest this collection reads
# (a kind of record whose shape grew reads and writes a later one: the
# KubeVirt throttle record, k8s/brake/records.py).
RECORD_SCHEMA = 1
SCHEMA_FIELD = "schema"


class NewerRecordError(ValueRangeError):
    """A record on an object that this collection cannot read: its schema
    is newer than RECORD_SCHEMA (or not a schema at all). Names the record."""

    def __init__(self, field, value, why):
        super(NewerRecordError, self).__init__(field, value, "schema 1..%d" % RECORD_SCHEMA)
        self.args = ("%s: %s; nothing was changed" % (field, why),)


def schema_refusal(value, newest=RECORD_SCHEMA):
    """Why a record whose schema field holds `value` cannot be read (newer
    than `newest`), or None when it can (None: a record written before
    records carried a schema)."""
    if value is None:
        return None
    try:
        number = int(value) if not isinstance(value, (bool, float)) else None
    except (TypeError, ValueError):
        number = None
    if number is None or number < 1:
        return "its schema %r is not a record schema (a whole number from 1)" % (value,)
    if number > newest:
        return ("it was written in record schema %d by a newer overcommit.control, and this one reads schema %d and "
                "older: act on this object with the newer collection" % (number, newest))
    return None


def check_schema(field, value):
    """Raises NewerRecordError naming the record (field) when its schema
    cannot be read."""
    why = schema_refusal(value)
    if why:
        raise NewerRecordError(field, value, why)


def clock():
    """Now in UTC, RFC 3339: (to the second, for records; to the
    microsecond, for Kubernetes Event times)."""
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%SZ"), now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def utc_now():
    return clock()[0]


def unix_time(text):
    """Seconds since the epoch of a record's time as utc_now writes it
    (2026-01-05T10:00:00Z); None when there is none or it is unreadable."""
    if not text:
        return None
    try:
        return calendar.timegm(time.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return None


def requester(params):
    """The task's requested_by, else the user running the module."""
    return params.get("requested_by") or getpass.getuser()


def record_fields(params):
    """reason, by and time of a change the task makes, and the plan it
    carries out when it is one (None values are left out of records)."""
    return {"reason": params.get("reason"), "by": requester(params), "time": utc_now(),
            "plan": params.get("plan_id")}
