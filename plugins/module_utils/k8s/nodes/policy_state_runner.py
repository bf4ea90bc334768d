# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing the control policy's state and the kill switch on many nodes
over one connection (nodes/policy_state.py checks the request, k8s/metadata.py
plans each patch)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.k8s.metadata import paused_patch, policy_patch
from ansible_collections.overcommit.control.plugins.module_utils.k8s.nodes.reader import NODES
from ansible_collections.overcommit.control.plugins.module_utils.k8s.policy_state_runner import write_one


class NodePolicyStateRunner(object):
    def __init__(self, client, request):
        self.client = client
        self.request = request

    def run(self):
        return [self.one(name, wanted) for name, wanted in sorted(self.request["wanted"].items())]

    def one(self, name, wanted):
        path = "%s/%s" % (NODES, name)
        return write_one(self.client, self.request, "node", name, wanted, path,
                         lambda node: self.write(path, node, wanted))

    def write(self, path, node, wanted):
        keys = self.request["keys"]

        def plan(obj):
            patch = policy_patch(obj, wanted, keys) or {}
            labels = paused_patch(obj, wanted["paused"], keys) if "paused" in wanted else None
            if labels:
                patch.setdefault("metadata", {}).update(labels["metadata"])
            return patch or None

        _node, written, _conflicts = self.client.read_modify_write(path, plan, current=node)
        return written is not None
