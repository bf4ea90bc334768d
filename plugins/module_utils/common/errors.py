# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two errors every layer raises. ValueRangeError is bad input: a field
and the values it allows; the module bases, filters and roles turn it into
one failure that names the field. ObjectRefusal ends one object's part of a
fleet task and no other's; fleet.each turns it into that object's result.
Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ValueRangeError(ValueError):
    """A value outside what the field allows; names the field."""

    def __init__(self, field, value, allowed, message=None):
        self.field = field
        self.value = value
        self.allowed = allowed
        super(ValueRangeError, self).__init__(message or "%s=%r is out of range: allowed %s" % (field, value, allowed))


class ObjectRefusal(Exception):
    """One object refused or failed, the others go on: the object may not be
    changed so (a class, a floor, a QoS class, a lock another run holds), it
    changed since it was read, or its platform refused the call. Subclasses
    say which; `outcome()` is what the object's result says of it."""

    def outcome(self):
        """The fields of the object's result: failed, with the reason."""
        return {"failed": True, "msg": str(self)}


# What ends one object's part of a fleet task: a refusal, or a value of that
# object outside what its field allows (a record, a stored state).
PER_OBJECT = (ObjectRefusal, ValueRangeError)
