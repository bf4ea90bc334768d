# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeVirt objects over the client: the KubeVirt CR's overcommit model and
the resource templates of many VirtualMachines, each written with a
resourceVersion-guarded patch and re-planned on a conflict."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import PER_OBJECT, ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import K8sClientError
from ansible_collections.overcommit.control.plugins.module_utils.k8s.kubevirt_api import API, namespaced_path
from ansible_collections.overcommit.control.plugins.module_utils.k8s.static import (
    instancetypes, config as kubevirt_config, vm_instancetype)
from ansible_collections.overcommit.control.plugins.module_utils.k8s.static import vm_resources


def find_kubevirt(client, namespace=None, name=None):
    """The KubeVirt CR: the one named, else the only one in the namespace
    (or the cluster)."""
    if namespace and name:
        try:
            return client.get(namespaced_path(namespace, "kubevirts", name))
        except K8sClientError as exc:
            if exc.status == 404:
                raise K8sClientError("no KubeVirt CR %s/%s" % (namespace, name), status=404)
            raise
    found = client.list(namespaced_path(namespace, "kubevirts") if namespace else API + "/kubevirts")
    if name:
        found = [kv for kv in found if kv["metadata"]["name"] == name]
    if len(found) != 1:
        where = "namespace %s" % namespace if namespace else "the cluster"
        raise K8sClientError("expected one KubeVirt CR in %s, found %d%s: set namespace and name" % (
            where, len(found), "" if not found else " (%s)" % ", ".join(
                "%s/%s" % (kv["metadata"]["namespace"], kv["metadata"]["name"]) for kv in found)), status=404)
    return found[0]


def configure(client, namespace, name, wanted):
    """Sets the wanted settings on the KubeVirt CR; returns the result."""
    kubevirt = find_kubevirt(client, namespace, name)
    meta = kubevirt["metadata"]
    path = namespaced_path(meta["namespace"], "kubevirts", meta["name"])
    planned = {}

    def plan_patch(current):
        planned.update(kubevirt_config.plan(current, wanted))
        return planned["patch"]

    _current, patch, conflicts = client.read_modify_write(path, plan_patch, current=kubevirt)
    result = {"changed": patch is not None, "kubevirt": {"namespace": meta["namespace"], "name": meta["name"]},
              "before": planned["before"], "after": planned["after"],
              "effective": kubevirt_config.effective(planned["after"])}
    if conflicts:
        result["conflicts"] = conflicts
    return result


def _select_vms(client, namespace, names, label_selector):
    """(wanted names in order, as namespace/name; namespace/name -> VM)."""
    scope = namespaced_path(namespace, "virtualmachines") if namespace else API + "/virtualmachines"
    vms = dict(("%s/%s" % (vm["metadata"]["namespace"], vm["metadata"]["name"]), vm)
               for vm in client.list(scope, label_selector))
    if label_selector and not vms:
        # A typo in a selector would change or audit nothing and report success.
        raise ValueRangeError("label_selector", label_selector, "a label selector that matches at least one VM "
                                                                "(it matches none in %s)" % (namespace or "any namespace"))
    wanted = ["%s/%s" % (namespace, name) for name in dict.fromkeys(names or [])]
    if label_selector or not names:
        wanted.extend(key for key in sorted(vms) if key not in wanted)
    return wanted, vms


def _vmis(client, namespace):
    scope = namespaced_path(namespace, "virtualmachineinstances") if namespace else API + "/virtualmachineinstances"
    return dict(("%s/%s" % (vmi["metadata"]["namespace"], vmi["metadata"]["name"]), vmi)
                for vmi in client.list(scope))


class VmResourcesRunner(object):
    """One task: enforce a resource template on many VMs, move them onto an
    instancetype, or audit them. Instancetypes, preferences and the revisions
    of them VMs keep are read once each."""

    def __init__(self, client, request):
        self.client = client
        self.request = request
        self.read = {}

    def run(self):
        """Per-VM results, in order. A VM not found, refused or failing is
        reported on its own; the others go on."""
        namespace = self.request["namespace"]
        wanted, vms = _select_vms(self.client, namespace, self.request["names"], self.request["label_selector"])
        vmis = _vmis(self.client, namespace)
        return [self.one(key, vms.get(key), vmis.get(key)) for key in wanted]

    def one(self, key, vm, vmi):
        """One VM's result: audited, or its template enforced."""
        if vm is None:
            return {"name": key, "changed": False, "failed": True, "msg": "VM %s not found" % key}
        if self.request["mode"] == "audit":
            return self.audit(key, vm, vmi)
        return self.enforce(key, vm, vmi)

    def source(self, namespace, ref, kind):
        """The instancetype or preference `ref` names, as the VM in
        `namespace` gets it (its kept revision first); refused when missing."""
        where = vm_instancetype.source_path(namespace, ref, kind)
        if where not in self.read:
            try:
                self.read[where] = vm_instancetype.object_of(self.client.get(where))
            except K8sClientError as exc:
                if exc.status != 404:
                    raise
                self.read[where] = None
        if self.read[where] is None:
            raise vm_resources.VmRefusal("%s %s not found%s" % (ref.get("kind") or kind, ref["name"], (
                " (revision %s)" % ref["revisionName"]) if ref.get("revisionName") else ""))
        return self.read[where]

    def offers(self, namespace, vm):
        """What the VM's instancetype gives it now, and the one it moves onto."""
        found = {"current": None, "target": None}
        ref = vm_instancetype.ref_of(vm, "instancetype")
        if ref:
            found["current"] = vm_instancetype.offer(
                self.source(namespace, ref, instancetypes.CLUSTER_INSTANCETYPE), self.request["class_label"])
        if self.request["instancetype"]:
            found["target"] = vm_instancetype.offer(
                self.source(namespace, self.request["instancetype"], None), self.request["class_label"])
        if self.request["preference"]:
            self.source(namespace, self.request["preference"], None)
        return found

    def audit(self, key, vm, vmi):
        namespace = key.split("/", 1)[0]
        result = {"name": key, "changed": False}
        try:
            facts = vm_resources.vm_facts(vm, vmi, self.request["class_label"])
            offers = self.offers(namespace, vm)
            if offers["current"]:
                facts = vm_instancetype.facts_on(facts, offers["current"])
                result["instancetype"] = vm_resources.current_view(vm, facts, offers["current"])
        except PER_OBJECT as exc:
            return dict(result, failed=True, msg="unreadable resources: %s" % exc)
        findings = vm_resources.audit(facts)
        result.update({"class": vm_resources.effective_class(facts)[0], "running": facts["running"],
                       "findings": findings, "risky": bool(findings)})
        if self.request["instancetype"]:
            # What the VM would become: the plan of the move, nothing written.
            try:
                planned = vm_resources.plan(vm, vmi, self.request, offers)
                result["move"] = {"changed": planned["patch"] is not None, "before": planned["before"],
                                  "after": planned["after"], "restart_required": planned["restart_required"],
                                  "restart_reasons": planned["restart_reasons"],
                                  "removed_fields": planned["removed_fields"]}
            except PER_OBJECT as exc:
                result["move"] = {"refused": True, "msg": str(exc)}
        return result

    def enforce(self, key, vm, vmi):
        namespace, name = key.split("/", 1)
        planned = {}

        def plan_patch(current):
            offers = self.offers(namespace, current) if self.request["instancetype"] else None
            planned.update(vm_resources.plan(current, vmi, self.request, offers))
            return planned["patch"]

        result = {"name": key, "changed": False}
        try:
            _current, patch, conflicts = self.client.read_modify_write(
                namespaced_path(namespace, "virtualmachines", name), plan_patch, current=vm)
        except PER_OBJECT as exc:
            field = getattr(exc, "field", None)
            result.update(failed=True, msg=str(exc), **({"field": field} if field else {}))
            self.effective(result, namespace, vm)
            return result
        result.update(changed=patch is not None, before=planned["before"], after=planned["after"],
                      launcher_overhead=planned["overhead"], running=planned["facts"]["running"],
                      restart_required=planned["restart_required"] and patch is not None,
                      restart_reasons=planned["restart_reasons"] if patch is not None else [],
                      restart_required_condition=planned["facts"]["restart_required_condition"])
        if "removed_fields" in planned:
            result["removed_fields"] = planned["removed_fields"] if patch is not None else []
        if conflicts:
            result["conflicts"] = conflicts
        return result

    def effective(self, result, namespace, vm):
        """A refused VM on an instancetype: what it has from it, for the result."""
        if not vm_instancetype.ref_of(vm, "instancetype"):
            return
        try:
            current = self.offers(namespace, vm)["current"]
            facts = vm_resources.vm_facts(vm, None, self.request["class_label"])
        except PER_OBJECT:
            return
        result["effective"] = vm_resources.current_view(vm, facts, current)
