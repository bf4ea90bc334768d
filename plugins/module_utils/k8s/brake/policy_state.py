# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The control policy's state and the kill switch on KubeVirt VMs: the
state in the VMI's annotation <prefix>policy (compact JSON, as on nodes),
the kill switch as the label <prefix>paused=true on the VirtualMachine that
owns the VMI (so that it outlives a restart) or on a VMI of its own. Each
write is a merge patch carrying the resourceVersion it was planned from.
Pure: the request and the patches; policy_state_runner.py writes them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.k8s import metadata

MISSING = ("fail", "ignore")


def _split(field, key):
    namespace, _sep, name = key.partition("/")
    if not namespace or not name or "/" in name:
        raise ValueRangeError(field, key, "a VMI named namespace/name")
    return namespace, name


def check_request(params):
    """The task's options, checked before any API call."""
    return metadata.check_policy_state_request(params, _split, "namespace/name")
