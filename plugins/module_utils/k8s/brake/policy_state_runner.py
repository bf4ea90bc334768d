# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing the control policy's state and the kill switch on many KubeVirt
VMs over one connection (policy_state.py plans each patch)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import state as limit_state
from ansible_collections.overcommit.control.plugins.module_utils.k8s.kubevirt_api import namespaced_path
from ansible_collections.overcommit.control.plugins.module_utils.k8s.metadata import paused_patch, policy_patch
from ansible_collections.overcommit.control.plugins.module_utils.k8s.policy_state_runner import write_one


class VmiPolicyStateRunner(object):
    def __init__(self, client, request):
        self.client = client
        self.request = request

    def run(self):
        return [self.one(key, wanted) for key, wanted in sorted(self.request["wanted"].items())]

    def one(self, key, wanted):
        namespace, name = key.split("/", 1)
        path = namespaced_path(namespace, "virtualmachineinstances", name)
        return write_one(self.client, self.request, "VMI", key, wanted, path,
                         lambda vmi: self.write(namespace, path, vmi, wanted))

    def write(self, namespace, path, vmi, wanted):
        keys = self.request["keys"]
        owner = limit_state.owning_vm(vmi)
        _vmi, written, _conflicts = self.client.read_modify_write(
            path, lambda obj: policy_patch(obj, wanted, keys), current=vmi)
        changed = written is not None
        if "paused" in wanted:
            # The switch lives where a restart keeps it: on the VirtualMachine when there is one.
            holders = [namespaced_path(namespace, "virtualmachines", owner), path] if owner else [path]
            for index, holder in enumerate(holders):
                # Clearing removes it from both; setting puts it on the first.
                paused = wanted["paused"] and index == 0
                _obj, patch, _conflicts = self.client.read_modify_write(
                    holder, lambda obj, paused=paused: paused_patch(obj, paused, keys))
                changed = changed or patch is not None
        return changed
