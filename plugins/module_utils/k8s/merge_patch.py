# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""JSON merge patches (RFC 7386), as custom resources take them. Pure.

A merge patch merges maps key by key, so turning one map into another needs
an explicit null for every key that goes away; lists are replaced whole."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def diff(before, after):
    """The merge patch that turns `before` into `after` (None: no change)."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return None if before == after else after
    patch = {}
    for key in set(before) | set(after):
        if key not in after or after[key] is None:
            if before.get(key) is not None:
                patch[key] = None
        elif key not in before:
            patch[key] = after[key]
        elif isinstance(after[key], dict) and isinstance(before[key], dict):
            nested = diff(before[key], after[key])
            if nested is not None:
                patch[key] = nested
        elif before[key] != after[key]:
            patch[key] = after[key]
    return patch or None


def at(obj, path):
    """The value at a dotted path of nested dicts, or None."""
    for key in path.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def nest(path, value):
    """{"a": {"b": value}} for path "a.b"."""
    for key in reversed(path.split(".")):
        value = {key: value}
    return value


def merge(target, patch):
    """`target` with a merge patch applied (a new object; target untouched)."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value)
    return result
