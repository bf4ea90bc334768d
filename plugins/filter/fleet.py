# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the results of fleet tasks: what no host of the fleet had
(the incident throttle and restore), and what could not be done over
several tasks (the fleet-wide undo)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.plugin_utils.filter_guard import filter_guard


@filter_guard
def fleet_found_nowhere(requested, host_results, field="domains"):
    return fleet.found_nowhere(requested, host_results, field)


@filter_guard
def fleet_failures(steps):
    return fleet.failures(steps)


@filter_guard
def fleet_summaries(steps):
    return fleet.summaries(steps)


@filter_guard
def fleet_by_namespace(keys):
    return fleet.by_namespace(keys)


class FilterModule(object):
    def filters(self):
        return {"fleet_found_nowhere": fleet_found_nowhere, "fleet_failures": fleet_failures,
                "fleet_summaries": fleet_summaries, "fleet_by_namespace": fleet_by_namespace}
