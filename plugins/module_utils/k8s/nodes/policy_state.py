# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The control policy's state and the kill switch on nodes, apart from the
gate: the state in the node's annotation <prefix>policy, the kill switch as
the label <prefix>paused=true (what node_overcommit_info reports and the
closed loop reads). Pure: the request; policy_state_runner.py writes the
patches (k8s/metadata.py plans them, as for KubeVirt VMs)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.k8s import metadata

MISSING = ("fail", "ignore")


def check_request(params):
    """The task's options, checked before any API call."""
    return metadata.check_policy_state_request(params, metadata.check_object_name, "node name")
