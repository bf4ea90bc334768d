# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing the control policy's state and the kill switch on many KubeVirt
VMs over one connection (policy_state.py plans each patch)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import PER_OBJECT
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import state as limit_state
from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import K8sClientError
from ansible_collections.overcommit.control.plugins.module_utils.k8s.kubevirt_api import namespaced_path
from ansible_collections.overcommit.control.plugins.module_utils.k8s.metadata import paused_patch, policy_patch


class VmiPolicyStateRunner(object):
    def __init__(self, client, request):
        self.client = client
        self.request = request

    def run(self):
        return [self.one(key, wanted) for key, wanted in sorted(self.request["wanted"].items())]

    def one(self, key, wanted):
        keys = self.request["keys"]
        namespace, name = key.split("/", 1)
        result = {"name": key, "changed": False}
        path = namespaced_path(namespace, "virtualmachineinstances", name)
        try:
            try:
                vmi = self.client.get(path)
            except K8sClientError as exc:
                if exc.status != 404:
                    raise
                if self.request["missing"] == "ignore":
                    return dict(result, skipped=True, msg="VMI %s not found" % key)
                return dict(result, failed=True, msg="VMI %s not found" % key)
            owner = limit_state.owning_vm(vmi)
            _vmi, written, _conflicts = self.client.read_modify_write(
                path, lambda obj: policy_patch(obj, wanted, keys), current=vmi)
            result["changed"] = written is not None
            if "paused" in wanted:
                # The switch lives where a restart keeps it: on the VirtualMachine when there is one.
                holders = [namespaced_path(namespace, "virtualmachines", owner), path] if owner else [path]
                for index, holder in enumerate(holders):
                    # Clearing removes it from both; setting puts it on the first.
                    paused = wanted["paused"] and index == 0
                    _obj, patch, _conflicts = self.client.read_modify_write(
                        holder, lambda obj, paused=paused: paused_patch(obj, paused, keys))
                    result["changed"] = result["changed"] or patch is not None
            if "state" in wanted:
                result["policy"] = wanted["state"]
            if "paused" in wanted:
                result["paused"] = wanted["paused"]
        except PER_OBJECT as exc:
            result.update(fleet.outcome(exc))
        return result
