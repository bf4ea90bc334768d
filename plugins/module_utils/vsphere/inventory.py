# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which VMs a task means, from one inventory read: by name, BIOS or
instance UUID, managed object id, folder path or cluster. Pure: no I/O.

The inventory is the plain data VsphereClient.inventory returns: per kind a
dict moid -> properties, each entity with its `parent`."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError


class SelectorError(ValueRangeError):
    """A folder or cluster that does not exist, or is ambiguous; names the field."""

    def __init__(self, field, message):
        super(SelectorError, self).__init__(field, None, message)
        self.args = ("%s: %s" % (field, message),)


def _containers(inventory):
    merged = {}
    for kind in ("folders", "datacenters", "clusters", "hosts"):
        merged.update(inventory.get(kind, {}))
    return merged


def entity_path(inventory, moid):
    """Inventory path of a folder, datacenter or cluster, as vSphere shows it:
    /DC0/vm/team-a (the root folder is not part of it)."""
    containers = _containers(inventory)
    names = []
    current = moid
    while current and current != inventory.get("root_folder") and current in containers:
        names.append(containers[current]["name"])
        current = containers[current].get("parent")
    return "/" + "/".join(reversed(names))


def ancestors(inventory, moid):
    """Ids of every folder/datacenter above an entity."""
    containers = _containers(inventory)
    seen = []
    current = inventory["vms"].get(moid, {}).get("parent") if moid in inventory.get("vms", {}) else moid
    while current and current in containers and current not in seen:
        seen.append(current)
        current = containers[current].get("parent")
    return seen


def cluster_of_host(inventory, host_id):
    """The cluster (or standalone compute resource) a host belongs to."""
    host = inventory.get("hosts", {}).get(host_id)
    return host.get("parent") if host else None


def _find_folder(inventory, path):
    wanted = "/" + path.strip("/")
    matches = [moid for moid in inventory.get("folders", {}) if entity_path(inventory, moid) == wanted]
    if not matches:
        vm_folders = sorted(entity_path(inventory, moid) for moid, folder in inventory.get("folders", {}).items()
                            if entity_path(inventory, moid).count("/") >= 2)
        raise SelectorError("folders", "no folder %s; folders are given by inventory path, e.g. %s"
                            % (wanted, ", ".join(vm_folders[:5]) or "/DC0/vm"))
    return matches[0]


def _find_cluster(inventory, name):
    clusters = inventory.get("clusters", {})
    by_path = [moid for moid in clusters if entity_path(inventory, moid) == "/" + name.strip("/")]
    if by_path:
        return by_path[0]
    by_name = [moid for moid, cluster in clusters.items() if cluster["name"] == name]
    if len(by_name) == 1:
        return by_name[0]
    if not by_name:
        raise SelectorError("clusters", "no cluster named %s (known: %s)"
                            % (name, ", ".join(sorted(c["name"] for c in clusters.values())) or "none"))
    raise SelectorError("clusters", "%s names %d clusters; give its inventory path instead (%s)"
                        % (name, len(by_name), ", ".join(sorted(entity_path(inventory, m) for m in by_name))))


def select(inventory, names=(), uuids=(), moids=(), folders=(), clusters=()):
    """The VMs meant, in the order asked, each once, templates left out:
    a list of (label, moid, error). A name, UUID or id that matches no VM,
    or a name that matches several, comes back with an error so it is
    reported; an unknown folder or cluster raises SelectorError (bad input)."""
    vms = inventory.get("vms", {})
    selected = []
    seen = set()

    def add(label, moid, error=None):
        if moid is not None and moid in seen:
            return
        if moid is not None:
            seen.add(moid)
        selected.append((label, moid, error))

    folder_ids = [_find_folder(inventory, path) for path in folders or ()]
    cluster_ids = [_find_cluster(inventory, name) for name in clusters or ()]

    live = dict((moid, vm) for moid, vm in vms.items() if not vm.get("config.template"))
    for name in names or ():
        matches = sorted(moid for moid, vm in live.items() if vm.get("name") == name)
        if len(matches) == 1:
            add(name, matches[0])
        elif not matches:
            add(name, None, "no VM named %s" % name)
        else:
            add(name, None, "%d VMs are named %s (%s): select them by uuid or moid" % (len(matches), name, ", ".join(matches)))
    for uuid in uuids or ():
        wanted = uuid.lower()
        matches = sorted(moid for moid, vm in live.items()
                         if wanted in ((vm.get("config.uuid") or "").lower(), (vm.get("config.instanceUuid") or "").lower()))
        if matches:
            add(live[matches[0]]["name"], matches[0])
        else:
            add(uuid, None, "no VM with BIOS or instance UUID %s" % uuid)
    for moid in moids or ():
        if moid in live:
            add(live[moid]["name"], moid)
        else:
            add(moid, None, "no VM with managed object id %s" % moid)
    if folder_ids or cluster_ids:
        for moid in sorted(live, key=lambda m: (live[m].get("name") or "", m)):
            vm = live[moid]
            in_folder = any(folder in ancestors(inventory, moid) for folder in folder_ids)
            in_cluster = cluster_of_host(inventory, vm.get("runtime.host")) in cluster_ids
            if in_folder or in_cluster:
                add(vm["name"], moid)
    return selected
