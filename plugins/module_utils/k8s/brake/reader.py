# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one reader of the KubeVirt objects the CPU brake acts on, for the
brake's writer (runner.py) and its info reader (usage_reader.py): the
VirtualMachineInstances a task names or selects, their VirtualMachines'
metadata and their launcher pods, each kind in one list for the whole task."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import state as limit_state
from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import K8sClientError
from ansible_collections.overcommit.control.plugins.module_utils.k8s.kubevirt_api import API, namespaced_path


def pods_path(namespace=None):
    return "/api/v1/namespaces/%s/pods" % namespace if namespace else "/api/v1/pods"


class KubevirtReader(object):
    def __init__(self, client):
        self.client = client

    def select(self, namespace, names, label_selector):
        """(target keys namespace/name in order; key -> VMI)."""
        targets, vmis = [], {}
        for name in dict.fromkeys(names or []):
            key = "%s/%s" % (namespace, name)
            targets.append(key)
            try:
                vmis[key] = self.client.get(namespaced_path(namespace, "virtualmachineinstances", name))
            except K8sClientError as exc:
                if exc.status != 404:
                    raise
        if label_selector or not names:
            scope = namespaced_path(namespace, "virtualmachineinstances") if namespace \
                else API + "/virtualmachineinstances"
            for vmi in self.client.list(scope, label_selector):
                key = "%s/%s" % (vmi["metadata"]["namespace"], vmi["metadata"]["name"])
                if key not in vmis:
                    targets.append(key)
                    vmis[key] = vmi
        return targets, vmis

    def launcher_pods(self, namespace):
        """VMI uid -> the virt-launcher pods KubeVirt created for it."""
        pods = {}
        for pod in self.launcher_pod_list(namespace):
            owner = (pod["metadata"].get("labels") or {}).get(limit_state.CREATED_BY)
            pods.setdefault(owner, []).append(pod)
        return pods

    def launcher_pod_list(self, namespace):
        """Every virt-launcher pod of the namespace (of all, for None), in one list."""
        return self.client.list(pods_path(namespace), limit_state.LAUNCHER_SELECTOR)

    def virtual_machines(self, namespace):
        """namespace/name -> the VirtualMachines' metadata: their class label,
        and the copy of the cap that outlives a restart."""
        scope = namespaced_path(namespace, "virtualmachines") if namespace else API + "/virtualmachines"
        return dict(("%s/%s" % (vm["metadata"]["namespace"], vm["metadata"]["name"]), vm)
                    for vm in self.client.list(scope, metadata_only=True))

    @staticmethod
    def owning_vm(key, vmi, vms):
        """The VirtualMachine of a VMI (from virtual_machines()), or None."""
        owner = limit_state.owning_vm(vmi)
        return vms.get("%s/%s" % (key.split("/", 1)[0], owner)) if owner else None
