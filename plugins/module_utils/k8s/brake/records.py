# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The records the KubeVirt CPU brake keeps in annotations, as types: what
they hold, how they are read (anything that is not such a record - not
JSON, not a mapping, too big - reads as none, so a hand-edited annotation
never breaks a run) and how they are written (JSON, sorted keys, with the
record schema they are in: common.record). Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.overcommit.control.plugins.module_utils.common import untrusted
from ansible_collections.overcommit.control.plugins.module_utils.common.record import RECORD_SCHEMA, SCHEMA_FIELD, \
    schema_refusal

# The schema of a throttle record that keeps the launcher's CPU request
# before a demotion (`previous_request`): a collection that reads only
# schema 1 would restore the cap and leave the weight demoted.
DEMOTED_REQUEST_SCHEMA = 2


def _mapping(text, newest=RECORD_SCHEMA):
    # Annotations are data anyone with write access may have put there.
    try:
        value = untrusted.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or schema_refusal(value.get(SCHEMA_FIELD), newest):
        return None
    return value


class _Record(object):
    """Fields by name; keys of the stored JSON it does not know are kept.
    The schema is the stored text's business (text()), not a field: a record
    written before records carried one equals the same record written now."""

    FIELDS = ()
    # Field name -> its key in the JSON, where they differ.
    KEYS = {}
    # The newest schema of this kind of record that this collection reads.
    NEWEST = RECORD_SCHEMA

    def __init__(self, **values):
        unknown = set(values) - set(self.FIELDS) - {"extra"}
        if unknown:
            raise TypeError("%s has no field %s" % (type(self).__name__, ", ".join(sorted(unknown))))
        for field in self.FIELDS:
            setattr(self, field, values.get(field))
        self.extra = dict(values.get("extra") or {})

    @classmethod
    def unreadable(cls, text):
        """Why an annotation's text is not such a record, or None when it is
        one (or there is none)."""
        if text is None:
            return None
        try:
            value = untrusted.loads(text)
        except ValueError as exc:
            return "not a record: %s" % exc
        if not isinstance(value, dict):
            return "not a record: a JSON %s, not a mapping" % type(value).__name__
        return schema_refusal(value.get(SCHEMA_FIELD), cls.NEWEST)

    @classmethod
    def parse(cls, text):
        """The record an annotation holds, or None (absent or unreadable)."""
        stored = _mapping(text, cls.NEWEST)
        if stored is None:
            return None
        keys = dict((cls.KEYS.get(field, field), field) for field in cls.FIELDS)
        return cls(extra=dict((k, v) for k, v in stored.items() if k not in keys and k != SCHEMA_FIELD),
                   **dict((keys[k], v) for k, v in stored.items() if k in keys))

    def as_dict(self):
        """The record as stored (and as results show it)."""
        out = dict(self.extra)
        for field in self.FIELDS:
            value = getattr(self, field)
            if value is not None or field in self.ALWAYS:
                out[self.KEYS.get(field, field)] = value
        return out

    ALWAYS = ()

    def schema(self):
        return RECORD_SCHEMA

    def text(self):
        """The annotation's text: the record in its schema."""
        return json.dumps(dict(self.as_dict(), **{SCHEMA_FIELD: self.schema()}), sort_keys=True)

    def __eq__(self, other):
        return type(other) is type(self) and other.as_dict() == self.as_dict()

    def __ne__(self, other):
        return not self == other

    __hash__ = None


class ThrottleRecord(_Record):
    """Why, by whom and when a VM was first throttled, and the compute CPU
    limit and request its launcher had before (`previous`,
    `previous_request`, kept through later throttles and restarts: what
    restore gives back). `forced`: the cap went past the class's guard, so a
    reconcile applies it again the same way."""

    FIELDS = ("previous", "previous_request", "reason", "by", "time", "plan", "forced")
    ALWAYS = ("previous",)
    NEWEST = DEMOTED_REQUEST_SCHEMA

    def as_dict(self):
        out = super(ThrottleRecord, self).as_dict()
        if not self.forced:
            out.pop("forced", None)
        return out

    def schema(self):
        # A record that keeps a demoted request is one an older collection could not restore exactly.
        return DEMOTED_REQUEST_SCHEMA if self.previous_request is not None else RECORD_SCHEMA


class AppliedRecord(_Record):
    """The cap (`cpus`) and the demoted CPU request (`request`, its weight)
    last written to a launcher pod: which pod (name and uid), and when."""

    FIELDS = ("cpus", "request", "pod", "pod_uid", "time")
    KEYS = {"pod_uid": "podUID"}
    ALWAYS = ("cpus", "pod", "pod_uid", "time")


def shown(record):
    """A record as results show it (a mapping), or None."""
    return record.as_dict() if record is not None else None


def same_record_text(left, right):
    """Whether two throttle record texts say the same (None: no record)."""
    if left is None or right is None:
        return left is right
    return left == right or (ThrottleRecord.parse(left) is not None
                             and ThrottleRecord.parse(left) == ThrottleRecord.parse(right))
