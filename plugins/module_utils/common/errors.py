# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one error type for bad input: a field and the values it allows.
Every layer raises it and the module bases, filters and roles turn it into
one failure that names the field. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ValueRangeError(ValueError):
    """A value outside what the field allows; names the field."""

    def __init__(self, field, value, allowed):
        self.field = field
        self.value = value
        self.allowed = allowed
        super(ValueRangeError, self).__init__("%s=%r is out of range: allowed %s" % (field, value, allowed))
