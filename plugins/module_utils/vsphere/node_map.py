# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which vSphere VM, and so which ESXi host, is under each Kubernetes node.
Pure: no I/O; works on node_overcommit_info nodes and vsphere_overcommit_info
VM rows.

The kubelet reports the SMBIOS UUID of its machine as
status.nodeInfo.systemUUID. vSphere's BIOS UUID (config.uuid) is the same
value, but SMBIOS before 2.6 (older VM hardware versions) stores its first
three fields little-endian, so a guest may read them byte-swapped; both forms
are matched, as the vSphere cloud provider does (ConvertK8sUUIDtoNormal).
The vSphere cloud provider also sets spec.providerID to vsphere://<BIOS UUID>."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError

PROVIDER_PREFIX = "vsphere://"
MATCHERS = ("system_uuid", "provider_id", "name")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def check_matchers(match):
    """The mapping methods to try, in order; raises ValueRangeError for an unknown one."""
    if not match:
        raise ValueRangeError("match", match, "a non-empty list of %s" % ", ".join(MATCHERS))
    for method in match:
        if method not in MATCHERS:
            raise ValueRangeError("match", method, "one of %s" % ", ".join(MATCHERS))
    return list(dict.fromkeys(match))


def normal_uuid(value):
    """A UUID in lower case, or None when the value is not one."""
    value = (value or "").strip().lower()
    return value if _UUID.match(value) else None


def swapped_uuid(uuid):
    """The UUID with its first three fields byte-swapped (SMBIOS < 2.6 order)."""
    uuid = normal_uuid(uuid)
    if uuid is None:
        return None

    def swap(field):
        return "".join(reversed([field[i:i + 2] for i in range(0, len(field), 2)]))

    fields = uuid.split("-")
    return "-".join([swap(fields[0]), swap(fields[1]), swap(fields[2]), fields[3], fields[4]])


def provider_uuid(provider_id):
    """The BIOS UUID in a vsphere:// provider ID, or None."""
    if not provider_id or not provider_id.lower().startswith(PROVIDER_PREFIX):
        return None
    return normal_uuid(provider_id[len(PROVIDER_PREFIX):])


class _Index(object):
    def __init__(self, vms):
        self.by_uuid, self.by_name, self.by_lower_name = {}, {}, {}
        for vm in vms:
            uuid = normal_uuid(vm.get("uuid"))
            if uuid:
                self.by_uuid.setdefault(uuid, []).append(vm)
            name = vm.get("name") or ""
            self.by_name.setdefault(name, []).append(vm)
            self.by_lower_name.setdefault(name.lower(), []).append(vm)

    def uuid(self, uuid):
        found = []
        for form in (uuid, swapped_uuid(uuid)):
            for vm in self.by_uuid.get(form, []):
                if vm not in found:
                    found.append(vm)
        return found

    def name(self, node_name):
        """Exact name, else the same ignoring case, else the node name's first
        DNS label (node worker-1.example.com, VM worker-1) ignoring case."""
        for candidates in (self.by_name.get(node_name), self.by_lower_name.get(node_name.lower()),
                           self.by_lower_name.get(node_name.split(".")[0].lower())):
            if candidates:
                return candidates
        return []


def _attempt(index, node, method):
    """(matching VMs, what was looked for) for one method, or (None, None)
    when the node carries nothing that method can use."""
    if method == "system_uuid":
        uuid = normal_uuid(node.get("system_uuid"))
        return (index.uuid(uuid), "BIOS UUID %s" % uuid) if uuid else (None, None)
    if method == "provider_id":
        uuid = provider_uuid(node.get("provider_id"))
        return (index.uuid(uuid), "provider ID %s" % node.get("provider_id")) if uuid else (None, None)
    return index.name(node["name"]), "name %s" % node["name"]


def map_nodes(nodes, vms, match=MATCHERS):
    """One entry per node: {node, vm, vm_moid, vm_uuid, host, cluster,
    matched_by} or, when no method finds exactly one VM, {node, vm: None,
    reason}. A method that finds several VMs (a name two VMs share) stops
    the search: the node is reported, never guessed."""
    index = _Index(vms)
    mapped = []
    for node in nodes:
        looked_for = []
        entry = {"node": node["name"], "vm": None}
        for method in match:
            found, what = _attempt(index, node, method)
            if found is None:
                continue
            if len(found) == 1:
                vm = found[0]
                entry.update(vm=vm.get("name"), vm_moid=vm.get("moid"), vm_uuid=vm.get("uuid"), host=vm.get("host"),
                             cluster=vm.get("cluster"), matched_by=method)
                break
            if found:
                entry["reason"] = "%d VMs match the %s (%s)" % (len(found), what, ", ".join(
                    sorted(vm.get("moid") or vm.get("name") for vm in found)))
                break
            looked_for.append(what)
        if entry["vm"] is None and "reason" not in entry:
            entry["reason"] = "no powered-on VM in scope has the %s" % (" or the ".join(looked_for) or "identity")
        mapped.append(entry)
    return mapped
