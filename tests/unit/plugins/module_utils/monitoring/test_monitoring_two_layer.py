# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Two-layer overcommit: pod sums, node-to-VM mapping, watermarks, compound
bet and the gates esxi_guard plans. Pure functions, no server."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import overcommit
from ansible_collections.overcommit.control.plugins.module_utils.k8s.nodes import usage as node_usage
from ansible_collections.overcommit.control.plugins.module_utils.vsphere import esxi_guard, node_map

GI = 2 ** 30
MI = 2 ** 20
TAINT = "overcommit.control/esxi-pressure"


def container(requests=None, limits=None, restart_policy=None):
    entry = {"name": "c", "resources": {}}
    if requests:
        entry["resources"]["requests"] = requests
    if limits:
        entry["resources"]["limits"] = limits
    if restart_policy:
        entry["restartPolicy"] = restart_policy
    return entry


def pod(containers, init=None, overhead=None, pod_resources=None, phase="Running"):
    spec = {"containers": containers, "initContainers": init or []}
    if overhead:
        spec["overhead"] = overhead
    if pod_resources:
        spec["resources"] = pod_resources
    return {"metadata": {"name": "p"}, "spec": spec, "status": {"phase": phase}}


# --- pod sums as the scheduler makes them -------------------------------------

def test_sidecars_add_and_init_containers_are_a_floor():
    p = pod([container({"cpu": "1500m", "memory": "768Mi"}, {"cpu": "3", "memory": "1536Mi"})],
            init=[container({"cpu": "500m", "memory": "256Mi"}, {"cpu": "1"}, restart_policy="Always"),
                  container({"cpu": "3", "memory": "64Mi"})])
    requests, _unset = node_usage.pod_amounts(p, "requests")
    # app 1.5 + sidecar 0.5 = 2 CPUs, but the init container runs beside the sidecar: 0.5 + 3 = 3.5
    assert requests == {"cpu": 3.5, "memory": 1024 * MI}
    limits, unset = node_usage.pod_amounts(p, "limits")
    assert limits == {"cpu": 4.0, "memory": 1536 * MI}
    assert unset == []


def test_overhead_adds_and_pod_level_resources_replace_the_containers():
    p = pod([container({"cpu": "1"}), container({"cpu": "1"})], overhead={"cpu": "250m", "memory": "160Mi"},
            pod_resources={"limits": {"cpu": "1"}})
    assert node_usage.pod_amounts(p, "requests")[0] == {"cpu": 2.25, "memory": 160 * MI}
    limits, unset = node_usage.pod_amounts(p, "limits")
    assert limits == {"cpu": 1.25, "memory": 160 * MI}
    assert unset == ["memory"]


def test_node_row_counts_running_pods_against_allocatable():
    node = {"metadata": {"name": "n1", "labels": {"a": "b"}},
            "spec": {"providerID": "vsphere://4212f0a4-6a0e-2b9c-7f1d-3c1e8f0b9a11"},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi"}, "nodeInfo": {"systemUUID": ""}}}
    pods = [pod([container({"cpu": "2", "memory": "2Gi"}, {"cpu": "4", "memory": "4Gi"})]),
            pod([container({"cpu": "1"})]),
            pod([container({"cpu": "8"}, {"cpu": "8"})], phase="Succeeded")]
    row = node_usage.node_row(node, pods, "overcommit.control/")
    assert row["pods"] == 2
    assert row["system_uuid"] is None and row["provider_id"].startswith("vsphere://")
    assert row["cpu"] == {"allocatable": 8.0, "requests": 3.0, "limits": 4.0, "requests_ratio": 0.375,
                          "limits_ratio": 0.5, "pods_without_limit": 1}
    assert row["memory"]["limits_ratio"] == 0.25 and row["memory"]["pods_without_limit"] == 1


# --- watermarks and the compound bet ------------------------------------------

def test_compound_is_the_product_of_both_bets():
    assert overcommit.compound_figures({"cpu": 2.5, "memory": 1.25}, {"cpu": 3.0, "memory": 1.2}) == \
        {"cpu": 7.5, "memory": 1.5}
    assert overcommit.compound_figures({"cpu": 2.5, "memory": None}, {"cpu": 3.0, "memory": 1.2})["memory"] is None


def test_watermarks_are_checked_before_use():
    assert overcommit.check_watermarks({"cpu_ready_pct": 5, "balloon_mb": None}) == {"cpu_ready_pct": 5.0}
    with pytest.raises(ValueRangeError, match="watermarks.ready"):
        overcommit.check_watermarks({"ready": 5})
    with pytest.raises(ValueRangeError, match="watermarks.balloon_mb=-1"):
        overcommit.check_watermarks({"balloon_mb": -1})
    with pytest.raises(ValueRangeError, match="reopen_fraction=0"):
        overcommit.check_watermarks({}, 0)


def test_a_host_over_any_watermark_is_gated_and_no_data_is_not_pressure():
    marks = {"cpu_ready_pct": 5.0, "balloon_mb": 0.0, "vcpu_per_core": 4.0}
    decision = overcommit.watermark_decision({"cpu_ready_pct": 7.5, "balloon_mb": 12, "vcpu_per_core": 3}, marks)
    assert decision["gated"] and [c["name"] for c in decision["crossed"]] == ["cpu_ready_pct", "balloon_mb"]
    assert overcommit.describe_crossed(decision["crossed"]) == "cpu_ready_pct 7.5 > 5; balloon_mb 12 > 0"
    assert not overcommit.watermark_decision({"cpu_ready_pct": None, "balloon_mb": None, "vcpu_per_core": 4}, marks)["gated"]


def test_hysteresis_holds_a_gated_host_until_it_is_well_under():
    marks = {"vcpu_per_core": 4.0}
    assert not overcommit.watermark_decision({"vcpu_per_core": 3.8}, marks, gated_now=False, reopen_fraction=0.9)["gated"]
    held = overcommit.watermark_decision({"vcpu_per_core": 3.8}, marks, gated_now=True, reopen_fraction=0.9)
    assert held["gated"] and held["held"] and held["crossed"][0]["watermark"] == 3.6
    assert not overcommit.watermark_decision({"vcpu_per_core": 3.5}, marks, gated_now=True, reopen_fraction=0.9)["gated"]


# --- nodes to VMs --------------------------------------------------------------

VMS = [{"name": "worker-1", "moid": "vm-1", "uuid": "4212f0a4-6a0e-2b9c-7f1d-3c1e8f0b9a11", "host": "esx-1"},
       {"name": "worker-2", "moid": "vm-2", "uuid": "4212d2aa-08c3-51f0-9f44-0d6a4c7e2b3c", "host": "esx-2"},
       {"name": "twin", "moid": "vm-3", "uuid": "11111111-2222-3333-4444-555555555555", "host": "esx-1"},
       {"name": "twin", "moid": "vm-4", "uuid": "11111111-2222-3333-4444-666666666666", "host": "esx-2"}]


def test_uuid_byte_swap_as_the_vsphere_cloud_provider_does_it():
    assert node_map.swapped_uuid("56492e42-22ad-3911-6d72-59cc8f26bc90") == "422e4956-ad22-1139-6d72-59cc8f26bc90"
    assert node_map.normal_uuid("not-a-uuid") is None


def test_nodes_map_by_system_uuid_either_order_provider_id_or_name():
    nodes = [{"name": "a", "system_uuid": "A4F01242-0E6A-9C2B-7F1D-3C1E8F0B9A11"},
             {"name": "b", "provider_id": "vsphere://4212d2aa-08c3-51f0-9f44-0d6a4c7e2b3c"},
             {"name": "Worker-1.example.com"},
             {"name": "twin"},
             {"name": "lost", "system_uuid": "99999999-2222-3333-4444-555555555555"}]
    mapped = node_map.map_nodes(nodes, VMS)
    assert [(m["node"], m["vm"], m.get("matched_by")) for m in mapped] == [
        ("a", "worker-1", "system_uuid"), ("b", "worker-2", "provider_id"),
        ("Worker-1.example.com", "worker-1", "name"), ("twin", None, None), ("lost", None, None)]
    assert "2 VMs match the name twin (vm-3, vm-4)" == mapped[3]["reason"]
    assert "BIOS UUID 99999999-2222-3333-4444-555555555555 or the name lost" in mapped[4]["reason"]
    assert node_map.map_nodes([{"name": "worker-1"}], VMS, ["system_uuid"])[0]["vm"] is None
    with pytest.raises(ValueRangeError, match="match"):
        node_map.check_matchers(["mac"])


# --- the gates esxi_guard plans ----------------------------------------------

def k8s_node(name, uuid, taints=(), gate=None, unschedulable=False):
    ratio = {"allocatable": 8.0, "requests": 4.0, "limits": 16.0, "requests_ratio": 0.5, "limits_ratio": 2.0,
             "pods_without_limit": 0}
    return {"name": name, "system_uuid": uuid, "provider_id": None, "labels": {}, "taints": list(taints),
            "unschedulable": unschedulable, "gate": gate, "pods": 3, "cpu": dict(ratio), "memory": dict(ratio)}


def vsphere_report(h1_vcpu_per_core, h2_vcpu_per_core):
    def host(name, ratio):
        return {"name": name, "cluster": "c1", "cpu": {"vcpu_per_core": ratio, "vcpu_per_thread": ratio / 2},
                "memory": {"ratio": 0.5}, "pressure": {"vm_cpu_ready_pct_per_vcpu_max": 1.0, "balloon_mb": 0,
                                                       "swapped_mb": 0}}
    return {"hosts": [host("esx-1", h1_vcpu_per_core), host("esx-2", h2_vcpu_per_core)],
            "vms": [dict(vm, vcpus=4, cpu_ready_pct={"avg_per_vcpu": 0.5}) for vm in VMS[:2]]}


def test_report_gates_the_nodes_of_a_host_over_its_watermark_with_the_compound_bet():
    nodes = [k8s_node("a", VMS[0]["uuid"]), k8s_node("b", VMS[1]["uuid"]), k8s_node("c", None)]
    report = esxi_guard.report(nodes, vsphere_report(3.0, 1.0), {"vcpu_per_core": 2.0, "balloon_mb": 0}, TAINT)
    rows = dict((row["node"], row) for row in report["nodes"])
    assert rows["a"]["gate"]["action"] == "gate" and rows["b"]["gate"]["action"] == "open"
    assert rows["a"]["compound"] == {"cpu": 6.0, "memory": 1.0}
    assert report["unmatched"] == ["c"]
    assert "esx-1" in rows["a"]["summary"] and "vcpu_per_core 3 > 2" in rows["a"]["summary"]
    plan = esxi_guard.gate_plan(report["nodes"], TAINT, "overcommit.control/esxi-host")
    assert plan[0] == {"host": "esx-1", "action": "gate", "state": "gated", "names": ["a"],
                       "labels": {"overcommit.control/esxi-host": "esx-1"}, "cordon": False,
                       "taints": [{"key": TAINT, "value": "esx-1", "effect": "NoSchedule"}],
                       "reason": "ESXi host esx-1 over its watermark: vcpu_per_core 3 > 2"}
    assert plan[1]["state"] == "open" and plan[1]["names"] == ["b"]


def test_only_nodes_the_guard_alone_closed_are_opened():
    ours = [{"key": TAINT, "value": "esx-1", "effect": "NoSchedule"}]
    assert esxi_guard.node_action(k8s_node("a", None, ours, {"taints": [TAINT]}), False, TAINT) == "open"
    both = {"taints": [TAINT, "overcommit.control/pressure"]}
    assert esxi_guard.node_action(k8s_node("a", None, ours, both), False, TAINT) == "keep"
    cordoned = {"taints": [TAINT], "cordoned": True}
    assert esxi_guard.node_action(k8s_node("a", None, ours, cordoned), False, TAINT) == "keep"
    someone_else = {"taints": ["overcommit.control/pressure"]}
    assert esxi_guard.node_action(k8s_node("a", None, [], someone_else), False, TAINT) == "keep"
    assert esxi_guard.node_action(k8s_node("a", None, [], someone_else), True, TAINT) == "gate"


def test_keep_reasserts_the_gate_and_its_cordon_without_a_taint():
    gate = {"taints": ["overcommit.control/pressure"], "cordoned": True}
    nodes = [k8s_node("a", VMS[0]["uuid"], gate=gate, unschedulable=True)]
    report = esxi_guard.report(nodes, vsphere_report(1.0, 1.0), {"vcpu_per_core": 2.0}, TAINT)
    plan = esxi_guard.gate_plan(report["nodes"], TAINT, "overcommit.control/esxi-host")
    assert plan == [{"host": "esx-1", "action": "keep", "state": "gated", "names": ["a"], "taints": [],
                     "labels": {"overcommit.control/esxi-host": "esx-1"}, "cordon": True, "reason": None}]


def test_host_names_become_label_values():
    assert esxi_guard.label_value("esx-07.example.com") == "esx-07.example.com"
    assert esxi_guard.label_value("fe80::1") == "fe80-1"
    assert len(esxi_guard.label_value("h" * 80)) == 63
