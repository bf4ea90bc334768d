# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the closed loop (role closed_loop): what a cycle records on
the objects after acting, and its summary."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.overcommit.control.plugins.module_utils.control import cycle
from ansible_collections.overcommit.control.plugins.module_utils.domain.cpu import ValueRangeError

ERRORS = (ValueRangeError, TypeError, KeyError, AttributeError)


def cycle_vm_states(plan, host, outcomes=None):
    try:
        return cycle.vm_states(plan, host, outcomes)
    except ERRORS as exc:
        raise AnsibleFilterError("cycle_vm_states: %s" % exc)


def cycle_node_records(plan, outcomes=None):
    try:
        return cycle.node_records(plan, outcomes)
    except ERRORS as exc:
        raise AnsibleFilterError("cycle_node_records: %s" % exc)


def cycle_summary(plan, outcomes=None, mode="act", check_mode=False):
    try:
        return cycle.summary(plan, outcomes, mode, check_mode)
    except ERRORS as exc:
        raise AnsibleFilterError("cycle_summary: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {
            "cycle_vm_states": cycle_vm_states,
            "cycle_node_records": cycle_node_records,
            "cycle_summary": cycle_summary,
        }
