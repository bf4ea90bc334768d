# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory the collection's playbooks expect, from Kubernetes Nodes:
one host per node with the variables the roles read, and the groups a
rollout in waves or an incident targets. Pure: the inventory plugin
kubernetes_nodes reads the nodes and adds what this returns."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.k8s.metadata import node_view

ZONE_LABEL = "topology.kubernetes.io/zone"
ROLE_LABEL_PREFIX = "node-role.kubernetes.io/"
ADDRESS_TYPES = ("InternalIP", "ExternalIP", "Hostname", "InternalDNS", "ExternalDNS")


def group_name(*parts):
    """A group name Ansible takes: letters, digits and underscores."""
    return re.sub(r"[^A-Za-z0-9_]", "_", "_".join(str(part) for part in parts if part not in (None, "")))


def check_options(options):
    """Refuses options that cannot work, naming the field (ValueRangeError)."""
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", options.get("hypervisors_group") or ""):
        raise ValueRangeError("hypervisors_group", options.get("hypervisors_group"),
                              "a group name (letters, digits, underscores)")
    address = options.get("address_type")
    if address and address not in ADDRESS_TYPES:
        raise ValueRangeError("address_type", address, "one of %s, or empty" % ", ".join(ADDRESS_TYPES))
    for field in ("pool_label", "esxi_host_label"):
        if not options.get(field):
            raise ValueRangeError(field, options.get(field), "a label key")


def node_facts(node, options):
    """What the inventory keeps of one Node (the API's JSON): its name, the
    address to reach it by and the overcommit view of it. Also what is
    cached between runs."""
    meta, status = node.get("metadata") or {}, node.get("status") or {}
    view = node_view(node, options["prefix"])
    labels = dict(meta.get("labels") or {})
    address = None
    for entry in status.get("addresses") or []:
        if entry.get("type") == options.get("address_type") and entry.get("address"):
            address = entry["address"]
            break
    return {"name": view["name"], "address": address, "labels": labels, "taints": view["taints"],
            "unschedulable": view["unschedulable"], "gate": view["gate"], "gate_error": view["gate_error"],
            "paused": view["paused"]}


def host_of(facts, options):
    """(inventory host name, its variables, its groups) for one node's facts."""
    labels = facts["labels"]
    esxi_label = options["prefix"] + options["esxi_host_label"]
    # node_admission keeps its record on a node only while it is gated; one
    # it cannot read (a newer record schema, a hand edit) still says gated.
    gated = facts["gate"] is not None or bool(facts.get("gate_error"))
    node = {"labels": labels, "taints": facts["taints"], "unschedulable": facts["unschedulable"],
            "gated": gated, "gate": facts["gate"], "paused": facts["paused"], "zone": labels.get(ZONE_LABEL),
            "roles": sorted(key[len(ROLE_LABEL_PREFIX):] for key in labels
                            if key.startswith(ROLE_LABEL_PREFIX) and key[len(ROLE_LABEL_PREFIX):]),
            "pool": labels.get(options["pool_label"]), "esxi_host": labels.get(esxi_label)}
    variables = {"kubernetes_node": facts["name"], "overcommit_node": node}
    if facts["address"]:
        variables["ansible_host"] = facts["address"]
    groups = [options["hypervisors_group"], "gated" if gated else "open"]
    if node["zone"]:
        groups.append(group_name("zone", node["zone"]))
    groups += [group_name("role", role) for role in node["roles"]]
    if node["pool"]:
        groups.append(group_name("pool", node["pool"]))
    if node["esxi_host"]:
        groups.append(group_name("esxi", node["esxi_host"]))
    return facts["name"], variables, groups
