# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubevirt_vm_migrate's runner: reads every VMI and the namespace's
migration objects once, judges each move (request.py), then asks KubeVirt
for the moves it may make, one VirtualMachineInstanceMigration each."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import K8sClientError
from ansible_collections.overcommit.control.plugins.module_utils.k8s.kubevirt_api import namespaced_path
from ansible_collections.overcommit.control.plugins.module_utils.k8s.migrate import request as migrate

MIGRATIONS = "virtualmachineinstancemigrations"


class VmiMigrateRunner(object):
    def __init__(self, client, request):
        self.client = client
        self.request = request
        self.namespace = request["namespace"]

    def run(self):
        self.migrations = self.client.list(namespaced_path(self.namespace, MIGRATIONS))
        self.node_found = not self.request["target_node"] or self.node_exists(self.request["target_node"])
        return fleet.each(self.request["names"], self.one)

    def node_exists(self, node):
        try:
            self.client.get("/api/v1/nodes/%s" % node)
        except K8sClientError as exc:
            if exc.status != 404:
                raise
            return False
        return True

    def one(self, name, result):
        try:
            vmi = self.client.get(namespaced_path(self.namespace, "virtualmachineinstances", name))
        except K8sClientError as exc:
            if exc.status != 404:
                raise
            outcome = "skipped" if self.request["missing"] == "ignore" else "failed"
            result.update(changed=False, msg="VMI %s/%s not found" % (self.namespace, name), **{outcome: True})
            return
        result.update(changed=False, node=(vmi.get("status") or {}).get("nodeName"),
                      target_node=self.request["target_node"])
        verdict, why = migrate.judge(vmi, self.migrations, self.request["target_node"], self.node_found)
        if verdict == "refuse":
            result.update(failed=True, refused=True, msg=why)
        elif verdict == "already":
            result.update(already=True, msg=why)
        else:
            # In check mode the client sends it as a server-side dry run: validated, not stored.
            created = self.client.create(namespaced_path(self.namespace, MIGRATIONS),
                                         migrate.migration_body(self.namespace, name, self.request))
            result.update(changed=True, migration=created["metadata"].get("name"))
