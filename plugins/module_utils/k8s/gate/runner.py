# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Gate and open many nodes over one connection: a few reads (one list of
the fleet when gating), the safety check over the whole plan, then one
conditional patch per node that needs one (read again and re-planned on a
conflict), and an Event on each node gated or opened. A node that is no
longer as the caller saw it (`expected`) is left alone, also when another
writer changes it between our read and our write. One node failing is
reported and the others go on."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.common.record import clock as utc_clock
from ansible_collections.overcommit.control.plugins.module_utils.k8s import events, metadata
from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import K8sClientError
from ansible_collections.overcommit.control.plugins.module_utils.k8s.gate import plan as gate

NODES = "/api/v1/nodes"
# Up to this many nodes are read one by one; more in one list of the fleet.
FEW_NODES = 20
REPORTING_CONTROLLER = "overcommit.control"
# state -> (Event action, reason, what the note says was done)
EVENTS = {"gated": ("Gate", "NodeGated", "Closed to new VMs"), "open": ("Open", "NodeOpened", "Opened to new VMs")}


def node_path(name):
    return "%s/%s" % (NODES, name)


def event_note(state, record_fields):
    """What an Event on a gated or opened node says: what was done, by whom,
    why and under which plan."""
    note = "%s by %s" % (EVENTS[state][2], record_fields.get("by") or "unknown")
    if record_fields.get("reason"):
        note += ": %s" % record_fields["reason"]
    if record_fields.get("plan"):
        note += " (plan %s)" % record_fields["plan"]
    return note


def node_event(node, state, record_fields, time, instance, suffix):
    """The Event (events.k8s.io/v1) about a Node the task gated or opened."""
    meta = node.get("metadata") or {}
    action, reason = EVENTS[state][:2]
    regarding = {"apiVersion": "v1", "kind": "Node", "name": meta.get("name"), "uid": meta.get("uid")}
    return events.event(regarding, "Normal", reason, action, event_note(state, record_fields), time,
                        REPORTING_CONTROLLER, instance, suffix)


class AdmissionRunner(object):
    """One task. clock() -> (RFC 3339 seconds, RFC 3339 microseconds) of
    now; instance: who reports the Events (the host running the task)."""

    def __init__(self, client, request, record_fields, clock=utc_clock, instance="overcommit.control"):
        self.client = client
        self.request = request
        self.record_fields = record_fields
        self.clock = clock
        self.instance = instance

    def read(self, names, label_selector):
        """(target names in order: those named, then those the selector
        matches; name -> Node for the targets that exist; the fleet of the
        share check, or None). Gating reads the fleet (all nodes, or those of
        fleet_label_selector) and asks the selector for names only; opening
        reads just the targets."""
        gating = self.request["state"] == "gated"
        targets = list(dict.fromkeys(names or []))
        nodes, fleet = {}, None
        if label_selector:
            matched = self.list_selected("label_selector", label_selector, metadata_only=gating)
            if not matched:
                # A typo in a selector would gate or open nothing and report success.
                raise ValueRangeError("label_selector", label_selector, "a label selector that matches at least "
                                                                        "one node (it matches none)")
            for node in matched:
                if node["metadata"]["name"] not in targets:
                    targets.append(node["metadata"]["name"])
                if not gating:
                    nodes[node["metadata"]["name"]] = node
        if gating:
            fleet = self.list_selected("fleet_label_selector", self.request["fleet_label_selector"])
            nodes.update((node["metadata"]["name"], node) for node in fleet)
        missing = [name for name in targets if name not in nodes]
        if len(missing) > FEW_NODES:
            nodes.update((node["metadata"]["name"], node) for node in self.client.list(NODES))
        else:
            for name in missing:
                try:
                    nodes[name] = self.client.get(node_path(name))
                except K8sClientError as exc:
                    if exc.status != 404:
                        raise
        return targets, nodes, fleet

    def list_selected(self, field, selector, metadata_only=False):
        """The nodes `selector` (option `field`) matches; a selector the API
        cannot parse (HTTP 400) is a ValueRangeError naming the field."""
        try:
            return self.client.list(NODES, selector, metadata_only=metadata_only)
        except K8sClientError as exc:
            if selector and exc.status == 400:
                raise ValueRangeError(field, selector, "a label selector the API accepts (%s)" % exc)
            raise

    def run(self):
        """Per-node results and the fleet summary. Every node is planned
        before any is written: the share of gated nodes is checked on all the
        plans. Raises GateRefusal (before any write) or K8sClientError when
        the nodes cannot be read."""
        prefix = self.request["prefix"]
        targets, nodes, fleet_nodes = self.read(self.request["names"], self.request["label_selector"])
        plans, results = {}, {}
        for name in targets:
            if name not in nodes:
                results[name] = {"name": name, "changed": False, "failed": True, "msg": "node %s not found" % name}
                continue
            view = metadata.node_view(nodes[name], prefix)
            if view["gate_error"]:
                # A hand-edited record: writing ours would lose what it says the gate did.
                results[name] = {"name": name, "changed": False, "failed": True, "msg": view["gate_error"]}
                continue
            plans[name] = gate.plan_node(view, self.request, self.record_fields)
            why = self.changed_since_read(view)
            if why:
                results[name] = self.conflict(name, plans.pop(name), why)
        fleet = None
        if fleet_nodes is not None and self.request["state"] == "gated":
            views = [metadata.node_view(node, prefix) for node in fleet_nodes]
            fleet = gate.check_share(views, dict((name, plan["after"]) for name, plan in plans.items()),
                                     self.request)
        for name, plan in plans.items():
            results[name] = self.one(name, nodes[name], plan)
        return [results[name] for name in targets], fleet

    def changed_since_read(self, view):
        expected = self.request["expected"].get(view["name"])
        return gate.changed_since_read(view, expected) if expected is not None else None

    @staticmethod
    def conflict(name, plan, why, conflicts=0):
        result = {"name": name, "changed": False, "conflict": True, "msg": why, "before": plan["before"]}
        if conflicts:
            result["conflicts"] = conflicts
        return result

    def one(self, name, node, first_plan):
        """One node's result: its planned change written with
        compare-and-swap, planned again on the node as it is now when
        another writer came first."""
        planned = {"plan": first_plan, "why": None}

        def plan_patch(current):
            if current is not node:
                view = metadata.node_view(current, self.request["prefix"])
                planned["plan"] = gate.plan_node(view, self.request, self.record_fields)
                planned["why"] = self.changed_since_read(view)
                if planned["why"]:
                    return None
            return planned["plan"]["patch"]

        result = {"name": name, "changed": False}
        try:
            current, patch, conflicts = self.client.read_modify_write(node_path(name), plan_patch, current=node)
        except K8sClientError as exc:
            result.update(failed=True, msg=str(exc), before=planned["plan"]["before"])
            return result
        plan = planned["plan"]
        if planned["why"]:
            return self.conflict(name, plan, planned["why"], conflicts)
        result.update(changed=patch is not None, before=plan["before"], after=plan["after"], gate=plan["after"]["gate"])
        if conflicts:
            result["conflicts"] = conflicts
        if patch is not None and plan["gate_changed"]:
            body = node_event(current, self.request["state"], self.record_fields, self.clock()[1], self.instance,
                              events.unique_suffix())
            result["event"] = events.emit(self.client, body)
        return result
