# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ConfigSpec the client builds carries only the fields it is given,
and the changeVersion the change was planned against."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.vsphere.client import config_spec


def test_only_the_given_fields_are_set():
    spec = config_spec({"cpu": {"reservation": 1000}}, "2026-01-01T00:00:00.000001Z")
    assert spec.changeVersion == "2026-01-01T00:00:00.000001Z"
    assert spec.cpuAllocation.reservation == 1000
    assert spec.cpuAllocation.limit is None and spec.cpuAllocation.shares is None
    assert spec.memoryAllocation is None and spec.memoryReservationLockedToMax is None


def test_shares_go_as_level_and_number_and_the_lock_alone():
    spec = config_spec({"memory": {"shares_level": "custom", "shares": 700},
                        "memory_reservation_locked_to_max": False}, "7")
    assert spec.memoryAllocation.shares.level == "custom" and spec.memoryAllocation.shares.shares == 700
    assert spec.memoryAllocation.reservation is None
    assert spec.memoryReservationLockedToMax is False and spec.cpuAllocation is None
