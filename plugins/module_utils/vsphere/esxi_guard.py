# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two-layer view of Kubernetes nodes that are ESXi VMs, and the gate
each node should have. Pure: no I/O; works on node_overcommit_info and
vsphere_overcommit_info results, and plans node_admission calls.

Which node may be opened: only one closed by this guard alone. A node whose
gate record also lists another owner's taint, or says the gate cordoned it
(this guard never cordons), was closed for another reason as well; the guard
leaves its gate as it is (only its labels change), since opening through
node_admission removes every taint the record lists."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.overcommit.control.plugins.module_utils.domain import overcommit
from ansible_collections.overcommit.control.plugins.module_utils.vsphere import node_map

GATE, OPEN, KEEP = "gate", "open", "keep"
_LABEL_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


def label_value(text):
    """A host name as a label value: at most 63 characters of [A-Za-z0-9_.-],
    starting and ending alphanumeric (an FQDN fits as it is)."""
    value = _LABEL_CHARS.sub("-", text or "")[:63]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", value)


def host_figures(host):
    """The figures of a vsphere_overcommit_info host row that watermarks apply to."""
    pressure, cpu, memory = host.get("pressure") or {}, host.get("cpu") or {}, host.get("memory") or {}
    return {"cpu_ready_pct": pressure.get("vm_cpu_ready_pct_per_vcpu_max"), "balloon_mb": pressure.get("balloon_mb"),
            "swapped_mb": pressure.get("swapped_mb"), "vcpu_per_core": cpu.get("vcpu_per_core"),
            "memory_ratio": memory.get("ratio")}


def _ours(node, taint_key):
    return any(taint["key"] == taint_key for taint in node.get("taints") or [])


def node_action(node, gated, taint_key):
    """gate, open or keep for one node, given whether its host wants it gated."""
    if gated:
        return GATE
    record = node.get("gate")
    if record is None:
        return OPEN
    others = [key for key in record.get("taints") or [] if key != taint_key]
    if _ours(node, taint_key) and not others and not record.get("cordoned"):
        return OPEN
    return KEEP


def _kubernetes(node):
    return {"pods": node.get("pods"), "cpu": node.get("cpu"), "memory": node.get("memory")}


def _esxi(host, vm):
    figures = host_figures(host)
    vm = vm or {}
    figures.update(
        vcpu_per_thread=(host.get("cpu") or {}).get("vcpu_per_thread"),
        vm_vcpus=vm.get("vcpus"),
        vm_cpu_ready_pct=(vm.get("cpu_ready_pct") or {}).get("avg_per_vcpu"),
        vm_balloon_mb=(vm.get("balloon") or {}).get("max_mb"),
        vm_swapped_mb=(vm.get("swapped") or {}).get("max_mb"))
    return figures


def _figure_text(value, unit=""):
    return "n/a" if value is None else "%g%s" % (value, unit)


def summary_line(row):
    """One line per node for people."""
    if row.get("vm") is None:
        return "%s: no ESXi VM found (%s)" % (row["node"], row.get("reason"))
    k8s, esxi, both, gate = row["kubernetes"], row["esxi"], row["compound"], row["gate"]
    state = {GATE: "gated", OPEN: "open", KEEP: "left as it is (closed for another reason)"}[gate["action"]]
    if gate["crossed"]:
        state += " (%s%s)" % ("held: " if gate["held"] else "", overcommit.describe_crossed(gate["crossed"]))
    return ("%s on %s (VM %s) | k8s cpu requests %s limits %s of allocatable, memory requests %s limits %s | "
            "esxi vCPU:core %s, memory %s, ready %s, balloon %s, swap %s | compound cpu %s memory %s | %s"
            % (row["node"], row["host"], row["vm"], _figure_text(k8s["cpu"]["requests_ratio"]),
               _figure_text(k8s["cpu"]["limits_ratio"]), _figure_text(k8s["memory"]["requests_ratio"]),
               _figure_text(k8s["memory"]["limits_ratio"]), _figure_text(esxi["vcpu_per_core"]), _figure_text(esxi["memory_ratio"]),
               _figure_text(esxi["cpu_ready_pct"], " %"), _figure_text(esxi["balloon_mb"], " MB"),
               _figure_text(esxi["swapped_mb"], " MB"), _figure_text(both["cpu"]), _figure_text(both["memory"]), state))


def report(nodes, vsphere, watermarks, taint_key, match=node_map.MATCHERS, reopen_fraction=1.0, gate=True):
    """{nodes: one row per node, hosts: one row per host in the vSphere
    report, unmatched: names of nodes without a VM}.

    nodes: node_overcommit_info nodes; vsphere: a vsphere_overcommit_info
    result; taint_key: the full key of the guard's taint. With gate=False
    no host is held over its watermark: no node is gated, and the nodes the
    guard alone closed are opened."""
    watermarks = overcommit.check_watermarks(watermarks, reopen_fraction)
    match = node_map.check_matchers(match)
    hosts = dict((host["name"], host) for host in vsphere.get("hosts") or [])
    vms = dict((vm.get("moid"), vm) for vm in vsphere.get("vms") or [])
    mapping = node_map.map_nodes(nodes, vsphere.get("vms") or [], match)
    by_name = dict((node["name"], node) for node in nodes)
    decisions = {}
    for name, host in hosts.items():
        on_host = [by_name[entry["node"]] for entry in mapping if entry.get("host") == name]
        decisions[name] = overcommit.watermark_decision(
            host_figures(host), watermarks, any(_ours(node, taint_key) for node in on_host), reopen_fraction)
    rows = []
    for entry in mapping:
        node = by_name[entry["node"]]
        row = dict(entry)
        if entry["vm"] is None or entry["host"] not in hosts:
            row.update(vm=None, reason=entry.get("reason") or "the VM's host %s is not in scope" % entry.get("host"))
            row["summary"] = summary_line(row)
            rows.append(row)
            continue
        host, decision = hosts[entry["host"]], decisions[entry["host"]]
        gated = gate and decision["gated"]
        action = node_action(node, gated, taint_key)
        record = node.get("gate") or {}
        row.update(
            kubernetes=_kubernetes(node),
            esxi=_esxi(host, vms.get(entry["vm_moid"])),
            gate={"action": action, "over_watermark": decision["gated"], "crossed": decision["crossed"],
                  "held": decision["held"], "gated_now": _ours(node, taint_key),
                  "cordoned_by_gate": bool(record.get("cordoned")) and bool(node.get("unschedulable"))})
        row["compound"] = overcommit.compound_figures(
            {"cpu": node["cpu"]["limits_ratio"], "memory": node["memory"]["limits_ratio"]},
            {"cpu": row["esxi"]["vcpu_per_core"], "memory": row["esxi"]["memory_ratio"]})
        row["summary"] = summary_line(row)
        rows.append(row)
    host_rows = []
    for name in sorted(hosts):
        decision = decisions[name]
        host_rows.append({"name": name, "cluster": hosts[name].get("cluster"), "figures": host_figures(hosts[name]),
                          "over_watermark": decision["gated"], "held": decision["held"],
                          "crossed": decision["crossed"],
                          "nodes": [row["node"] for row in rows if row.get("vm") and row["host"] == name]})
    return {"nodes": rows, "hosts": host_rows, "unmatched": [row["node"] for row in rows if row.get("vm") is None]}


def gate_reason(host, decision_row):
    text = overcommit.describe_crossed(decision_row["crossed"])
    if decision_row["held"]:
        return "ESXi host %s not yet back under its reopen level: %s" % (host, text)
    return "ESXi host %s over its watermark: %s" % (host, text)


def gate_plan(report_rows, taint_key, host_label):
    """The node_admission calls that apply a report, one per host, action and
    cordon: [{host, action, state, names, labels, taints, cordon, reason}].
    Every matched node gets host_label=<its host>; gate adds the guard's
    taint (value: the host); open removes it; keep re-asserts the gate the
    node has (no taint given), which changes only labels."""
    calls = {}
    order = []
    for row in report_rows:
        if row.get("vm") is None:
            continue
        gate = row["gate"]
        action = gate["action"]
        cordon = gate["cordoned_by_gate"] if action in (GATE, KEEP) else False
        key = (row["host"], action, cordon)
        if key not in calls:
            order.append(key)
            host_value = label_value(row["host"])
            call = {"host": row["host"], "action": action, "names": [], "labels": {host_label: host_value},
                    "cordon": cordon, "reason": None}
            if action == GATE:
                call.update(state="gated", taints=[{"key": taint_key, "value": host_value, "effect": "NoSchedule"}],
                            reason=gate_reason(row["host"], gate))
            elif action == OPEN:
                call.update(state="open", taints=[{"key": taint_key, "effect": "NoSchedule"}])
            else:
                call.update(state="gated", taints=[])
            calls[key] = call
        calls[key]["names"].append(row["node"])
    return [calls[key] for key in order]
