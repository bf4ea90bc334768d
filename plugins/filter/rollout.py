# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the fleet rollout (role rollout_wave): the health verdict on a
unit after its wave and what puts that wave back, decided in Python."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.domain import rollout
from ansible_collections.overcommit.control.plugins.plugin_utils.filter_guard import filter_guard


@filter_guard
def rollout_thresholds(thresholds, field="rollout_wave_health"):
    return rollout.check_thresholds(thresholds, field)


@filter_guard
def rollout_health(applied, pressure=None, domains=None, thresholds=None):
    return rollout.health(applied, pressure, domains, thresholds)


@filter_guard
def rollout_undo(applied):
    return rollout.undo(applied)


@filter_guard
def rollout_changes(applied):
    return rollout.changes(applied)


class FilterModule(object):
    def filters(self):
        return {
            "rollout_thresholds": rollout_thresholds,
            "rollout_health": rollout_health,
            "rollout_undo": rollout_undo,
            "rollout_changes": rollout_changes,
        }
