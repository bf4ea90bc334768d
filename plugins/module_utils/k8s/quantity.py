# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes resource quantities ("1536Mi", "500m", "2", "1e9") to numbers
and back. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from decimal import Decimal, InvalidOperation

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError

_SUFFIXES = {
    "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60,
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1,
    "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
MI = 2 ** 20


ALLOWED = "a Kubernetes quantity such as 2, 500m, 1536Mi or 4Gi"
# Kubernetes keeps a quantity in 64 bits; its text is never longer than this.
MAX_VALUE = Decimal(2 ** 63 - 1)
MAX_TEXT = 64


def parse(field, value):
    """A quantity as a Decimal; numbers pass through. Raises ValueRangeError
    naming the field for anything Kubernetes would not accept (values read
    from annotations are not trusted to be short or finite)."""
    if isinstance(value, bool):
        raise ValueRangeError(field, value, ALLOWED)
    if isinstance(value, (int, float)):
        number = Decimal(str(value))
    else:
        text = str(value).strip()
        if len(text) > MAX_TEXT:
            raise ValueRangeError(field, "%s... (%d characters)" % (text[:16], len(text)), ALLOWED)
        match = _QUANTITY.match(text)
        if not match:
            raise ValueRangeError(field, value, ALLOWED)
        try:
            number = Decimal(match.group(1)) * Decimal(_SUFFIXES[match.group(2) or ""])
        except InvalidOperation:
            raise ValueRangeError(field, value, ALLOWED)
    if not number.is_finite() or abs(number) > MAX_VALUE:
        raise ValueRangeError(field, value, ALLOWED + ", at most 2^63-1")
    return number


def cpu(field, value):
    """CPUs as a float."""
    return float(parse(field, value))


def memory(field, value):
    """Bytes as an int (rounded up, as Kubernetes does for memory)."""
    number = parse(field, value)
    return int(number.to_integral_value(rounding="ROUND_CEILING"))


def format_cpu(cpus):
    """CPUs as Kubernetes writes them: whole numbers plain, else millicores."""
    millis = int(round(cpus * 1000))
    return str(millis // 1000) if millis % 1000 == 0 else "%dm" % millis


def format_memory(size):
    """Bytes in the largest binary unit that divides them exactly."""
    for suffix in ("Ti", "Gi", "Mi", "Ki"):
        if size and size % _SUFFIXES[suffix] == 0:
            return "%d%s" % (size // _SUFFIXES[suffix], suffix)
    return str(size)


def same_cpu(left, right):
    """Whether two CPU quantities (or None) mean the same."""
    if left is None or right is None:
        return left is None and right is None
    return abs(cpu("cpu", left) - cpu("cpu", right)) < 1e-9


def same_memory(left, right):
    if left is None or right is None:
        return left is None and right is None
    return memory("memory", left) == memory("memory", right)
