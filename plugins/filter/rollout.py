# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the fleet rollout (role rollout_wave): the health verdict on a
unit after its wave and what puts that wave back, decided in Python."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.overcommit.control.plugins.module_utils.domain import rollout
from ansible_collections.overcommit.control.plugins.module_utils.domain.cpu import ValueRangeError


def _decided(name, decide, *args):
    """The decision, or an error naming the filter and what was wrong."""
    try:
        return decide(*args)
    except (ValueRangeError, TypeError, KeyError, AttributeError) as exc:
        raise AnsibleFilterError("%s: %s" % (name, exc))


def rollout_thresholds(thresholds, field="rollout_wave_health"):
    return _decided("rollout_thresholds", rollout.check_thresholds, thresholds, field)


def rollout_health(applied, pressure=None, domains=None, thresholds=None):
    return _decided("rollout_health", rollout.health, applied, pressure, domains, thresholds)


def rollout_undo(applied):
    return _decided("rollout_undo", rollout.undo, applied)


def rollout_changes(applied):
    return _decided("rollout_changes", rollout.changes, applied)


class FilterModule(object):
    def filters(self):
        return {
            "rollout_thresholds": rollout_thresholds,
            "rollout_health": rollout_health,
            "rollout_undo": rollout_undo,
            "rollout_changes": rollout_changes,
        }
