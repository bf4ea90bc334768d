# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing the control policy's state and the kill switch on many nodes
over one connection (nodes/policy_state.py checks the request, k8s/metadata.py
plans each patch)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import PER_OBJECT
from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import K8sClientError
from ansible_collections.overcommit.control.plugins.module_utils.k8s.metadata import paused_patch, policy_patch
from ansible_collections.overcommit.control.plugins.module_utils.k8s.nodes.reader import NODES


class NodePolicyStateRunner(object):
    def __init__(self, client, request):
        self.client = client
        self.request = request

    def run(self):
        return [self.one(name, wanted) for name, wanted in sorted(self.request["wanted"].items())]

    def one(self, name, wanted):
        keys = self.request["keys"]
        result = {"name": name, "changed": False}
        path = "%s/%s" % (NODES, name)
        try:
            try:
                node = self.client.get(path)
            except K8sClientError as exc:
                if exc.status != 404:
                    raise
                outcome = "skipped" if self.request["missing"] == "ignore" else "failed"
                return dict(result, msg="node %s not found" % name, **{outcome: True})

            def plan(obj):
                patch = policy_patch(obj, wanted, keys) or {}
                labels = paused_patch(obj, wanted["paused"], keys) if "paused" in wanted else None
                if labels:
                    patch.setdefault("metadata", {}).update(labels["metadata"])
                return patch or None

            _node, written, _conflicts = self.client.read_modify_write(path, plan, current=node)
            result["changed"] = written is not None
            if "state" in wanted:
                result["policy"] = wanted["state"]
            if "paused" in wanted:
                result["paused"] = wanted["paused"]
        except PER_OBJECT as exc:
            result.update(fleet.outcome(exc))
        return result
