# -*- coding: utf-8 -*-
"""The kubernetes_nodes inventory's model: what a Node becomes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.k8s.nodes import inventory

OPTIONS = {"hypervisors_group": "hypervisors", "address_type": "InternalIP", "pool_label": "overcommit.control/class-pool",
           "esxi_host_label": "esxi-host", "prefix": "overcommit.control/"}


def node(name, labels=None, annotations=None, addresses=None, taints=None, unschedulable=False):
    return {"metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
            "spec": {"taints": taints or [], "unschedulable": unschedulable},
            "status": {"addresses": addresses or []}}


def host(obj, **options):
    return inventory.host_of(inventory.node_facts(obj, dict(OPTIONS, **options)), dict(OPTIONS, **options))


def test_a_labelled_gated_node_gets_its_variables_and_every_group():
    gate = {"reason": "pressure", "taints": ["overcommit.control/pressure"], "cordoned": False}
    name, variables, groups = host(node(
        "node-a", labels={"topology.kubernetes.io/zone": "eu-west-1a", "node-role.kubernetes.io/worker": "",
                          "node-role.kubernetes.io/kubevirt": "", "overcommit.control/class-pool": "shared",
                          "overcommit.control/esxi-host": "esx-01.lab", "overcommit.control/paused": "true"},
        annotations={"overcommit.control/gate": json.dumps(gate)},
        addresses=[{"type": "Hostname", "address": "node-a"}, {"type": "InternalIP", "address": "10.0.0.5"}],
        taints=[{"key": "overcommit.control/pressure", "effect": "NoSchedule"}]))
    assert name == "node-a"
    assert variables["kubernetes_node"] == "node-a" and variables["ansible_host"] == "10.0.0.5"
    facts = variables["overcommit_node"]
    assert (facts["gated"], facts["gate"], facts["paused"], facts["zone"], facts["pool"], facts["esxi_host"]) == (
        True, gate, True, "eu-west-1a", "shared", "esx-01.lab")
    assert facts["roles"] == ["kubevirt", "worker"]
    assert groups == ["hypervisors", "gated", "zone_eu_west_1a", "role_kubevirt", "role_worker", "pool_shared",
                      "esxi_esx_01_lab"]


def test_a_bare_node_is_open_and_only_in_the_hypervisors_group():
    name, variables, groups = host(node("node-b"))
    assert groups == ["hypervisors", "open"]
    assert "ansible_host" not in variables and variables["overcommit_node"]["gated"] is False
    # A cordon or taint someone else set is not the collection's gate.
    _name, _variables, groups = host(node("node-c", unschedulable=True,
                                          taints=[{"key": "maintenance", "effect": "NoSchedule"}]))
    assert "open" in groups


@pytest.mark.parametrize("record_text", ["{not json", json.dumps({"reason": "pressure", "schema": 99})])
def test_a_gate_record_that_cannot_be_read_still_puts_the_node_in_gated(record_text):
    _name, variables, groups = host(node("node-d", annotations={"overcommit.control/gate": record_text}))
    assert "gated" in groups and "open" not in groups
    assert variables["overcommit_node"]["gated"] is True and variables["overcommit_node"]["gate"] is None


def test_options_change_the_group_and_the_address():
    _name, variables, groups = host(node("node-d", addresses=[{"type": "ExternalIP", "address": "203.0.113.9"}]),
                                    hypervisors_group="kvm_nodes", address_type="ExternalIP")
    assert groups[0] == "kvm_nodes" and variables["ansible_host"] == "203.0.113.9"
    _name, variables, _groups = host(node("node-d", addresses=[{"type": "InternalIP", "address": "10.0.0.9"}]),
                                     address_type="")
    assert "ansible_host" not in variables


@pytest.mark.parametrize("field, value", [
    ("hypervisors_group", "hyper-visors"),
    ("hypervisors_group", ""),
    ("address_type", "PublicIP"),
    ("pool_label", ""),
    ("esxi_host_label", None),
])
def test_options_that_cannot_work_are_refused_naming_the_field(field, value):
    with pytest.raises(ValueRangeError) as refused:
        inventory.check_options(dict(OPTIONS, **{field: value}))
    assert field in str(refused.value)
