# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Selecting VMs from one inventory read: names, UUIDs, ids, folders, clusters."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.vsphere import inventory as inv


def vm(name, parent, host, uuid=None, template=False):
    return {"name": name, "parent": parent, "runtime.host": host, "config.uuid": uuid,
            "config.instanceUuid": "i-" + name, "config.template": template}


INVENTORY = {
    "root_folder": "group-d1",
    "folders": {"group-d1": {"name": "Datacenters", "parent": None},
                "group-v3": {"name": "vm", "parent": "datacenter-2"},
                "group-v9": {"name": "k8s", "parent": "group-v3"},
                "group-v10": {"name": "workers", "parent": "group-v9"},
                "group-h4": {"name": "host", "parent": "datacenter-2"}},
    "datacenters": {"datacenter-2": {"name": "DC1", "parent": "group-d1"}},
    "clusters": {"domain-c7": {"name": "C1", "parent": "group-h4"}, "domain-c8": {"name": "C2", "parent": "group-h4"}},
    "hosts": {"host-1": {"name": "esx1", "parent": "domain-c7"}, "host-2": {"name": "esx2", "parent": "domain-c8"}},
    "vms": {"vm-1": vm("a", "group-v3", "host-1", "U-1"),
            "vm-2": vm("b", "group-v9", "host-2"),
            "vm-3": vm("c", "group-v10", "host-1"),
            "vm-4": vm("dup", "group-v3", "host-1"),
            "vm-5": vm("dup", "group-v9", "host-2"),
            "vm-6": vm("tmpl", "group-v9", "host-2", template=True)},
}


def test_names_uuids_and_ids_select_each_vm_once_in_order():
    selected = inv.select(INVENTORY, names=["b", "a"], uuids=["u-1", "i-c"], moids=["vm-2"])
    assert selected == [("b", "vm-2", None), ("a", "vm-1", None), ("c", "vm-3", None)]


def test_unknown_and_ambiguous_names_are_reported_not_dropped():
    selected = inv.select(INVENTORY, names=["dup", "ghost", "tmpl"], moids=["vm-99"])
    assert [(label, moid) for label, moid, _error in selected] == [("dup", None), ("ghost", None), ("tmpl", None),
                                                                   ("vm-99", None)]
    assert "vm-4, vm-5" in selected[0][2]


def test_a_folder_selects_its_subfolders_too():
    selected = inv.select(INVENTORY, folders=["/DC1/vm/k8s"])
    assert sorted(moid for _label, moid, _error in selected) == ["vm-2", "vm-3", "vm-5"]


def test_a_cluster_selects_the_vms_of_its_hosts():
    selected = inv.select(INVENTORY, clusters=["C1"])
    assert sorted(moid for _label, moid, _error in selected) == ["vm-1", "vm-3", "vm-4"]
    assert inv.select(INVENTORY, clusters=["/DC1/host/C2"])[0][1] in ("vm-2", "vm-5")


def test_unknown_folder_or_cluster_is_bad_input():
    with pytest.raises(inv.SelectorError) as caught:
        inv.select(INVENTORY, folders=["/DC1/vm/nope"])
    assert caught.value.field == "folders" and "/DC1/vm/k8s" in str(caught.value)
    with pytest.raises(inv.SelectorError) as caught:
        inv.select(INVENTORY, clusters=["C9"])
    assert caught.value.field == "clusters" and "C1, C2" in str(caught.value)


def test_entity_path_leaves_out_the_root_folder():
    assert inv.entity_path(INVENTORY, "group-v10") == "/DC1/vm/k8s/workers"
