# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the per-host results of a fleet task (the incident throttle
and restore): what no host of the fleet had."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.plugin_utils.filter_guard import filter_guard


@filter_guard
def fleet_found_nowhere(requested, host_results, field="domains"):
    return fleet.found_nowhere(requested, host_results, field)


class FilterModule(object):
    def filters(self):
        return {"fleet_found_nowhere": fleet_found_nowhere}
