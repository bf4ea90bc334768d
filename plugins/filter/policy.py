# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The control policy as a filter, for playbooks and roles that feed it the
info modules' results."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.overcommit.control.plugins.module_utils.domain import policy
from ansible_collections.overcommit.control.plugins.plugin_utils.filter_guard import filter_guard


@filter_guard
def policy_decide(vms, hosts, now=None, parameters=None):
    return policy.decide(hosts, vms, time.time() if now is None else float(now), parameters or {})


class FilterModule(object):
    def filters(self):
        return {"policy_decide": policy_decide}
