# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the closed loop (role closed_loop): what a cycle records on
the objects after acting, and its summary."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.control import cycle
from ansible_collections.overcommit.control.plugins.plugin_utils.filter_guard import filter_guard


@filter_guard
def cycle_vm_states(plan, host, outcomes=None):
    return cycle.vm_states(plan, host, outcomes)


@filter_guard
def cycle_node_records(plan, outcomes=None):
    return cycle.node_records(plan, outcomes)


@filter_guard
def cycle_summary(plan, outcomes=None, mode="act", check_mode=False):
    return cycle.summary(plan, outcomes, mode, check_mode)


class FilterModule(object):
    def filters(self):
        return {
            "cycle_vm_states": cycle_vm_states,
            "cycle_node_records": cycle_node_records,
            "cycle_summary": cycle_summary,
        }
