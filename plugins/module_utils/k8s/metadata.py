# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes names and the keys this collection owns. Pure: no I/O.

Everything the collection writes on an object (labels, taints, annotations)
has a key under one configurable prefix; keys of other owners are never
changed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError

DEFAULT_PREFIX = "overcommit.control/"
_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def check_prefix(prefix, field="prefix"):
    """A key prefix: a DNS subdomain followed by '/', as Kubernetes requires
    for the prefix of a qualified name."""
    if not prefix.endswith("/") or len(prefix) > 254 or not _DNS_SUBDOMAIN.match(prefix[:-1]):
        raise ValueRangeError(field, prefix, "a DNS subdomain followed by '/', e.g. %s" % DEFAULT_PREFIX)
    return prefix


def check_name_part(field, value):
    if not value or len(value) > 63 or not _NAME.match(value):
        raise ValueRangeError(field, value, "1..63 characters [A-Za-z0-9-_.], starting and ending alphanumeric")
    return value


def owned_key(field, key, prefix):
    """A key this collection may write: a short name gets the prefix; a full
    key must already be under it (keys of other owners are not ours to set)."""
    if "/" not in key:
        return prefix + check_name_part(field, key)
    if not key.startswith(prefix):
        raise ValueRangeError(field, key, "a key under the prefix %r (or a short name, which gets the prefix): "
                                          "keys of other owners are never changed" % prefix)
    check_name_part(field, key[len(prefix):])
    return key


def check_label_value(field, value):
    if value is None:
        return None
    value = str(value)
    if value and (len(value) > 63 or not _NAME.match(value)):
        raise ValueRangeError(field, value, "empty or 1..63 characters [A-Za-z0-9-_.], starting and ending "
                                            "alphanumeric")
    return value


def owned(mapping, prefix):
    """The entries of a labels/annotations mapping that this collection owns."""
    return dict((key, value) for key, value in (mapping or {}).items() if key.startswith(prefix))


def label_changes(current, wanted):
    """A merge patch for labels: wanted values that differ, None to remove."""
    current = current or {}
    return dict((key, value) for key, value in wanted.items() if current.get(key) != value
                and not (value is None and key not in current))
