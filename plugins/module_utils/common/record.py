# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who asked for a change, and when: the fields every record of a throttle,
gate or reservation keeps on the object it changed, and the time they keep
read back."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import getpass
import time
from datetime import datetime, timezone


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
