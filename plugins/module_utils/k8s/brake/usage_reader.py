# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading what the control policy needs of running KubeVirt VMs (usage.py
says what): the brake's reader for the VMIs, their VirtualMachines and
launcher pods, and Prometheus for their usage."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import state as limit_state
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.reader import KubevirtReader
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.usage import usage_by_vmi, usage_queries, vm_entry


class VmCpuReader(object):
    """One read of many VMIs over one Kubernetes connection, with their
    usage from one Prometheus (None: no usage)."""

    def __init__(self, client, prometheus, request):
        self.client = client
        self.prometheus = prometheus
        self.request = request

    def usage(self, namespace):
        """[{namespace/name: usage}] at each of the request's times."""
        queries = usage_queries(namespace, self.request["window"])
        return [usage_by_vmi(dict((key, self.prometheus.query(expr, at)) for key, expr in queries.items()))
                for at in self.request["times"]]

    def read(self, namespace, names, label_selector):
        keys = self.request["keys"]
        # The brake's own selection of VMIs, their VirtualMachines and launcher pods.
        reader = KubevirtReader(self.client)
        targets, vmis = reader.select(namespace, names, label_selector)
        vms = reader.virtual_machines(namespace) if targets else {}
        pods = reader.launcher_pods(namespace) if vmis else {}
        rounds = self.usage(namespace) if self.prometheus is not None and vmis else None
        out = []
        for key in targets:
            if key not in vmis:
                out.append({"name": key, "failed": True, "msg": "VMI %s not found" % key})
                continue
            vm = reader.owning_vm(key, vmis[key], vms)
            view = limit_state.vmi_view(vmis[key], keys, vm)
            try:
                pod = limit_state.launcher_pod(view, pods.get(view["uid"]) or [])
            except limit_state.LimitRefusal:
                pod = None
            usage_rounds = None
            if rounds is not None:
                empty = {"cpus_used": None, "steal_cpus": None}
                usage_rounds = [dict(r.get(key) or empty) for r in rounds]
            out.append(vm_entry(view, vmis[key], pod, keys, usage_rounds, self.request["window"]))
        return out
