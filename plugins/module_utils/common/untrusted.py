# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading data that anyone with write access to an object may have put
there (annotations, domain metadata, custom attributes): bounded in size and
depth before it is parsed, so that an oversized or deeply nested value makes
that object's record unreadable instead of being loaded whole or crashing
the module."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError

# The collection's records and states are under a few KiB; anything far
# larger was not written by it.
MAX_CHARS = 64 * 1024
# Nesting the records never reach; json's parser would otherwise recurse
# until RecursionError.
MAX_DEPTH = 32


class UntrustedValueError(ValueRangeError):
    """A stored value refused before or while parsing it (too large, too
    deeply nested, not JSON): the field error of `field` (the record or
    state that held it), saying only why, since the value may be large."""

    def __init__(self, why, field="record"):
        super(UntrustedValueError, self).__init__(field, None, "JSON text a record holds", message=why)


def check_size(text, max_chars=MAX_CHARS):
    """Raises UntrustedValueError when text is longer than max_chars."""
    if text is not None and len(text) > max_chars:
        raise UntrustedValueError("too large: %d characters, more than the %d a record may hold"
                                  % (len(text), max_chars))


def _depth(text):
    """The deepest nesting of brackets and braces outside strings."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def loads(text, max_chars=MAX_CHARS, max_depth=MAX_DEPTH):
    """json.loads of a stored value; raises UntrustedValueError (a
    ValueError) when it is too large, nested deeper than max_depth or not
    JSON, without parsing more than needed to tell."""
    if not isinstance(text, str):
        raise UntrustedValueError("a %s, not JSON text" % type(text).__name__)
    check_size(text, max_chars)
    if _depth(text) > max_depth:
        raise UntrustedValueError("too deeply nested: more than %d levels" % max_depth)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UntrustedValueError(str(exc))
