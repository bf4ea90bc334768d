# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lists of object names as users give them. Pure.

Names are matched exactly. A name with surrounding whitespace is almost
always a list written as one string ("web-1, web-2" becomes 'web-1' and
' web-2'): matched as given it would half-apply a batch and report the second
VM as not found, so it is refused, naming the field, before anything changes.
So is a name given twice (the second would act on the object again and
count it twice), a name longer than any platform allows, control characters,
and more names than one run is meant for."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError


# More names than this in one task is a mistake (a whole inventory pasted in).
MAX_NAMES = 5000
# The longest name a platform takes: Kubernetes object names (a DNS
# subdomain); libvirt and vSphere names this long are not names people type.
MAX_NAME_CHARS = 253


class NameListError(ValueRangeError):
    """Names of a list option that cannot be any object's name; names the
    field (the option) and each bad element by its index."""

    def __init__(self, field, problems):
        super(NameListError, self).__init__(field, None, "names without surrounding whitespace, not empty")
        # The message names each bad element rather than the whole list.
        self.args = ("; ".join(problems),)


def problem(value):
    """Why one name cannot be used as given, or None."""
    if not isinstance(value, str):
        return None
    if value.strip() == "":
        return "is empty"
    if len(value) > MAX_NAME_CHARS:
        return "is %d characters long, more than the %d a name may have" % (len(value), MAX_NAME_CHARS)
    if any(ord(char) < 32 or ord(char) == 127 for char in value.strip()):
        return "holds a control character"
    if value != value.strip():
        kind = "spaces" if value.strip(" ") == value.strip() else "whitespace"
        return "has surrounding %s (names are matched exactly: did you mean %r?)" % (kind, value.strip())
    return None


def check_names(params, fields):
    """Raises NameListError for the first of `fields` (list options of
    `params`) holding a name that is empty or has surrounding whitespace; the
    message lists every such element of that field, e.g.
    "domains[1]=' web-2' has surrounding spaces (...)"."""
    for field in fields:
        given = params.get(field) or []
        if len(given) > MAX_NAMES:
            raise ValueRangeError(field, "%d names" % len(given), "at most %d names in one task" % MAX_NAMES)
        problems, seen = [], set()
        for index, value in enumerate(given):
            why = problem(value)
            if why is None and isinstance(value, str) and value in seen:
                why = "is given twice (each name once)"
            seen.add(value)
            if why:
                shown = value if len(value) <= 64 else value[:32] + "..."
                problems.append("%s[%d]=%r %s" % (field, index, shown, why))
        if problems:
            raise NameListError(field, problems)
