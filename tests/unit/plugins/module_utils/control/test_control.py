# -*- coding: utf-8 -*-
"""Stage 2's pure control code: what the info modules measured as the
policy's input and as what a plan sees of each object (observe), and the
policy replayed over the measured rounds into a plan (recommend)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.common.record import unix_time
from ansible_collections.overcommit.control.plugins.module_utils.control import observe
from ansible_collections.overcommit.control.plugins.module_utils.control import recommend
from ansible_collections.overcommit.control.plugins.module_utils.domain import observed
from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import DEFAULT_FLOOR_FRACTION

NOW = 1_700_000_000
TIMES = [NOW - 20, NOW - 10, NOW]


def domain(name, used, steal, vcpus=2, klass="shared", cap=None, record=None, active=True, **extra):
    # As libvirt_cputune_info returns it.
    entry = {"name": name, "active": active, "vcpus": vcpus, "class": klass, "cap_cpus": cap, "throttle": record}
    if active:
        entry["usage"] = {"cpus_used": used, "steal_cpus": steal, "sample_seconds": 5.0}
    entry.update(extra)
    return entry


def replay(measured, nodes, times, params=None, kubevirt=None):
    return recommend.replay(observe.rounds(measured, nodes, kubevirt), times, params)


def vm_input(reading, **options):
    """A libvirt domain's record on hv-1, as the policy takes it."""
    return observe.vm_input(observed.observed_vm("libvirt", "hv-1", reading), **options)


def pressure(avg10, avg60, cpus=2):
    # As host_pressure_info returns it.
    return {"changed": False, "cpus": cpus, "procs_running": 5,
            "pressure": {"cpu": {"some": {"avg10": avg10, "avg60": avg60}}}}


def contended_domains():
    """A 2-CPU host like the lab's: a 1-vCPU shared VM and two 2-vCPU
    burstable VMs spin, a dedicated 2-vCPU VM pinned to both CPUs idles; the
    shared VMs may run on both CPUs too (the shared pool is the two CPUs)."""
    both = {"cpus_allowed": [0, 1]}
    return [domain("noisy", 0.67, 0.33, vcpus=1, **both),
            domain("victim-1", 0.67, 0.33, klass="burstable", **both),
            domain("victim-2", 0.66, 0.34, klass="burstable", **both),
            domain("db", 0.01, 0.0, klass="dedicated", **both)]


def measured(rounds=3, avg10=50.0, avg60=40.0, node="worker-1", domains=contended_domains, **extra):
    host = {"vm_rounds": [{"changed": False, "item": i, "domains": domains()} for i in range(rounds)],
            "pressure_rounds": [dict(pressure(avg10, avg60), item=i) for i in range(rounds)],
            "vm_window": [TIMES[0] - 5, TIMES[-1]], "node": node, "paused": False}
    host.update(extra)
    return host


def k8s_nodes(count=4, gated=()):
    # As node_overcommit_info returns them.
    return [{"name": "worker-%d" % n, "taints": [], "unschedulable": False,
             "gate": {"time": "2023-11-14T20:00:00Z", "plan": None} if "worker-%d" % n in gated else None}
            for n in range(1, count + 1)]


# ---------------------------------------------------------------- observe: what a plan sees

def test_a_domain_is_seen_as_its_cap_and_the_time_of_its_throttle_record():
    record = {"reason": "r", "time": "2023-11-14T22:00:00Z", "by": "ops", "cpus": 0.5, "plan": None}
    assert plans.seen_of_domain(domain("a", 1, 0, cap=0.5, record=record)) == \
        {"cap_cpus": 0.5, "throttle_time": "2023-11-14T22:00:00Z"}
    assert plans.seen_of_domain(domain("a", 1, 0)) == {"cap_cpus": None, "throttle_time": None}


def test_a_node_is_seen_as_its_gate_sorted_taints_and_cordon():
    node = {"name": "worker-1", "unschedulable": True,
            "taints": [{"key": "zeta", "value": None, "effect": "NoSchedule"},
                       {"key": "overcommit.control/gated", "value": "true", "effect": "NoSchedule"},
                       {"key": "alpha", "value": "", "effect": "PreferNoSchedule"}],
            "gate": {"reason": "pressure", "time": "2023-11-14T21:00:00Z", "by": "loop", "plan": "plan-x"}}
    assert plans.seen_of_node(node) == {
        "gated": True, "gate_time": "2023-11-14T21:00:00Z", "cordoned": True,
        "taints": ["alpha:PreferNoSchedule", "overcommit.control/gated=true:NoSchedule", "zeta:NoSchedule"]}
    assert plans.seen_of_node({"name": "worker-2", "gate": None}) == \
        {"gated": False, "gate_time": None, "taints": [], "cordoned": False}
    assert plans.applied_plan(node) == "plan-x"
    assert plans.applied_plan({"gate": None, "throttle": None}) is None
    assert plans.applied_plan(domain("a", 1, 0, cap=1, record={"plan": "plan-y"})) == "plan-y"


def test_unix_time_reads_the_records_rfc3339_or_gives_none():
    assert unix_time("2023-11-14T22:13:20Z") == NOW
    assert unix_time("yesterday") is None
    assert unix_time(None) is None
    assert unix_time(12) is None


# ---------------------------------------------------------------- observe: the policy's input

def test_only_a_cap_a_plan_set_is_the_policys_own_state():
    planned = domain("a", 1, 0, cap=0.5, record={"time": "2023-11-14T22:13:20Z", "plan": "plan-1", "cpus": 0.5})
    assert observed.vm_state(planned) == {"cap": 0.5, "rule": "contain", "capped_at": NOW, "changed_at": NOW}
    # A throttle by hand (no plan in its record) is someone else's.
    by_hand = domain("a", 1, 0, cap=0.5, record={"time": "2023-11-14T22:13:20Z", "plan": None, "cpus": 0.5})
    assert observed.vm_state(by_hand) == {}
    # A plan's record whose cap is gone, or no record at all.
    assert observed.vm_state(domain("a", 1, 0, cap=None, record={"plan": "plan-1"})) == {}
    assert observed.vm_state(domain("a", 1, 0)) == {}
    # A record without a readable time: the cap, without since when.
    assert observed.vm_state(domain("a", 1, 0, cap=0.5, record={"time": "?", "plan": "plan-1"})) == \
        {"cap": 0.5, "rule": "contain"}
    # A weight a plan demoted, with no cap: the record's previous weight is what it was.
    weighted = domain("a", 1, 0, record={"time": "2023-11-14T22:13:20Z", "plan": "plan-1", "owns": ["cpu_shares"],
                                         "previous": {"live": {"cpu_shares": 1024}}}, live={"cpu_shares": 293})
    assert observed.vm_state(weighted) == {"weight": 293, "weight_was": 1024, "rule": "contain", "capped_at": NOW,
                                           "changed_at": NOW}
    # Shares a hand throttle set are someone else's.
    assert observed.vm_state(dict(weighted, throttle=dict(weighted["throttle"], plan=None))) == {}


def test_the_pools_load_is_read_from_its_own_cpus_not_the_whole_host():
    """CPU 0 runs flat out outside the pool (the loop, the host's own work);
    the pool is CPU 1, half busy: the pool's load is 0.5, not the host's 1.5."""
    def read(busy0, idle0, busy1, idle1):
        return {"cpus": 2, "cpu_time": {"busy_seconds": busy0 + busy1, "idle_seconds": idle0 + idle1},
                "cpu_time_per_cpu": {"0": {"busy_seconds": busy0, "idle_seconds": idle0},
                                     "1": {"busy_seconds": busy1, "idle_seconds": idle1}}}
    before, after = read(100.0, 0.0, 50.0, 50.0), read(110.0, 0.0, 55.0, 55.0)
    assert observe.cpus_used(before, after) == 1.5
    assert observe.pool_cpus_used(before, after, {1}) == 0.5
    assert observe.pool_cpus_used(before, after, {1, 7}) is None  # a CPU not read: no figure
    assert observe.pool_cpus_used({}, after, {1}) is None
    host = observe.host_input("hv-1", after, previous=before, pool={1})
    assert (host["cpus_used"], host["pool_cpus_used"], host["shared_cpus"]) == (1.5, 0.5, 1)


def test_the_effect_of_a_gate_is_read_from_the_taints_it_set():
    def node(effect=None, cordoned=False, gated=True):
        taints = [{"key": "example.com/other", "effect": "NoSchedule"}]
        if effect:
            taints.append({"key": "overcommit.io/gated", "effect": effect})
        gate = {"taints": ["overcommit.io/gated"] if effect else [], "cordoned": cordoned} if gated else None
        return {"name": "worker-1", "taints": taints, "gate": gate}
    assert observe.gate_effect(node("PreferNoSchedule")) == "PreferNoSchedule"
    assert observe.gate_effect(node("NoSchedule")) == "NoSchedule"
    # A cordon closes the node whatever the taints say; another owner's NoSchedule is not the gate's.
    assert observe.gate_effect(node("PreferNoSchedule", cordoned=True)) == "NoSchedule"
    assert observe.gate_effect(node(gated=False)) is None
    assert observe.host_input("hv-1", pressure(1, 1), node("PreferNoSchedule"))["node"]["effect"] == "PreferNoSchedule"


def test_the_shared_pool_is_read_from_the_cpusets_less_the_isolated_cpus():
    domains = [domain("web", 1, 0, cpus_allowed=[0, 1, 2, 3]), domain("batch", 1, 0, cpus_allowed=[2, 3, 4, 5]),
               domain("rt", 2, 0, klass="dedicated", cpus_allowed=[6, 7]),
               domain("db", 1, 0, klass="dedicated", cpus_allowed=[5]),
               domain("off", None, None, active=False, cpus_allowed=[8])]
    pool = observe.shared_pool_cpus(observed.observed_vms("libvirt", "hv-1", domains), isolated=[0])
    assert pool == {1, 2, 3, 4, 5}
    assert observe.host_input("hv-1", dict(pressure(1, 1, cpus=8)), pool=pool)["shared_cpus"] == 5
    # A dedicated VM whose cores are its own is out of the pool; one pinned inside it is in.
    assert vm_input(domains[2], pool=pool)["in_shared_pool"] is False
    assert vm_input(domains[3], pool=pool)["in_shared_pool"] is True
    # An older reader says nothing of cpusets: no pool is claimed.
    assert observe.shared_pool_cpus([observed.observed_vm("libvirt", "hv-1", domain("web", 1, 0))]) is None


def test_a_vm_is_weighted_as_its_host_schedules_it():
    # libvirt's live cpu_shares (the default 1024 whatever the vCPUs, or what an operator set).
    assert vm_input(domain("a", 1, 0, vcpus=4, live={"cpu_shares": 1024}))["weight"] == 1024
    assert vm_input(domain("a", 1, 0, live={"cpu_shares": 256}))["weight"] == 256
    # A KubeVirt launcher's CPU request, in the shares the kubelet gives it.
    assert observe.vm_input(observed.observed_vm("kubevirt", "node-a", domain("ns/vm", 1, 0, cpu_request=0.25)))["weight"] == 256
    # Unknown (shut-off definition, no live tuning): no weight, the policy weights by vCPUs.
    assert "weight" not in vm_input(domain("a", 1, 0, live=None))
    assert "weight" not in vm_input(domain("a", 1, 0, live={"cpu_shares": 0}))


def test_a_burstable_vm_without_a_baseline_gets_the_floor_share_of_its_vcpus():
    vm = vm_input(domain("b", 1, 0, vcpus=4, klass="burstable"))
    assert vm["baseline_cpus"] == 4 * DEFAULT_FLOOR_FRACTION
    assert vm["host"] == "hv-1" and vm["policy"] == {}
    assert vm_input(domain("b", 1, 0, vcpus=4, klass="burstable", baseline_cpus=1.5))["baseline_cpus"] == 1.5
    assert "baseline_cpus" not in vm_input(domain("s", 1, 0))
    # A state kept on the object is kept, and completed by a plan's cap it does not know of.
    kept = domain("c", 1, 0, cap=0.5, record={"plan": "plan-1"}, policy={"hist": "11"})
    assert vm_input(kept)["policy"] == {"hist": "11", "cap": 0.5, "rule": "contain"}


def test_rounds_skip_hosts_not_measured_or_whose_rounds_all_failed_saying_why():
    failed = measured(rounds=2)
    failed["vm_rounds"][0] = {"failed": True, "msg": "libvirtd away"}
    failed["pressure_rounds"][1] = {"failed": True, "msg": "no PSI"}
    out = observe.rounds({"hv-1": measured(node=None), "hv-2": None, "hv-3": failed}, k8s_nodes())
    assert out["skipped"] == [
        {"host": "hv-2", "reason": "not measured (unreachable, or its play failed)"},
        {"host": "hv-3", "reason": "no round measured both its VMs and its pressure (the CPU pressure "
                                   "(host_pressure_info): no PSI; the VMs (libvirt_cputune_info): libvirtd away)"}]
    assert [len(hosts) for _position, hosts, _vms in out["rounds"]] == [1, 1, 1]
    assert set(out["seen"]) == {"hv-1/noisy", "hv-1/victim-1", "hv-1/victim-2", "hv-1/db"}


def test_a_read_registered_with_failed_when_false_is_still_a_failed_read():
    # failed_when: false registers failed=False; the module's message and the
    # missing result are what is left of the failure.
    unread = measured(rounds=2)
    unread["vm_rounds"] = [{"changed": False, "failed": False, "failed_when_result": False,
                            "msg": "cannot connect to qemu:///system"}] * 2
    out = observe.rounds({"hv-1": measured(node=None), "hv-3": unread})
    assert out["skipped"] == [{"host": "hv-3", "reason": "no round measured both its VMs and its pressure (the VMs "
                                                         "(libvirt_cputune_info): cannot connect to qemu:///system)"}]
    # The same for the KubeVirt read.
    out = observe.rounds({"hv-1": measured(node=None)}, kubevirt={"failed": False, "msg": "Prometheus: refused"})
    assert out["skipped"] == [{"host": "kubevirt", "reason": "the KubeVirt VMs could not be read: Prometheus: refused"}]


def test_only_a_last_round_that_failed_says_why_nothing_is_planned_for_its_host():
    late = measured(rounds=2)
    late["vm_rounds"][1] = {"failed": False, "msg": "libvirtd restarting"}
    out = observe.rounds({"hv-1": late, "hv-2": measured(rounds=2, node=None)})
    assert out["skipped"] == [{"host": "hv-1", "reason": "its last round (2) could not be read: nothing is planned "
                                                         "for it (the VMs (libvirt_cputune_info): libvirtd restarting)"}]


def test_a_vm_of_the_last_round_left_out_is_noted_with_why_and_its_host_stays_measured():
    def with_two_left_out():
        restarted = domain("restarted", 0, 0)
        del restarted["usage"]  # a counter went back between the samples
        return contended_domains() + [restarted, {"name": "gone", "failed": True, "msg": "domain not found"}]
    out = observe.rounds({"hv-1": measured(domains=with_two_left_out, node=None)})
    assert out["skipped"] == []
    assert out["left_out"] == [
        {"object": "hv-1/restarted", "rule": "measure",
         "note": "its CPU use could not be measured in the last round (round 3: it started or stopped between the "
                 "two samples, or a counter went back); nothing is planned for it"},
        {"object": "hv-1/gone", "rule": "measure",
         "note": "could not be read in the last round (round 3): domain not found; nothing is planned for it"}]
    made = recommend.recommend({"hv-1": measured(domains=with_two_left_out, node=None)}, None, TIMES, TIMES[-1])
    assert made["unmeasured"]["fail"] is False
    assert [n["object"] for n in made["notes"] if n["rule"] == "measure"] == ["hv-1/restarted", "hv-1/gone"]
    # Read and measured, nothing is noted.
    assert observe.rounds({"hv-1": measured(node=None)})["left_out"] == []


def test_a_node_named_by_a_host_but_not_in_kubernetes_is_noted_and_not_gated():
    out = observe.rounds({"hv-1": measured(node="worker-9")}, k8s_nodes(2))
    assert out["skipped"] == [{"host": "hv-1", "reason": "node worker-9 not found in Kubernetes: not gated"}]
    assert len(out["rounds"]) == 3  # its VMs are still decided
    assert all("node" not in host for _p, hosts, _v in out["rounds"] for host in hosts)
    assert "node/worker-9" not in out["seen"]


def test_rounds_give_the_policy_its_input_and_the_fleet_counts():
    def domains():
        return contended_domains() + [domain("off", None, None, active=False)]

    out = observe.rounds({"hv-1": measured(domains=domains, paused=True)}, k8s_nodes(4, gated=("worker-3",)))
    assert out["fleet"] == {"nodes": 4, "gated": 1}
    position, hosts, vms = out["rounds"][-1]
    assert position == 2
    [host] = hosts
    assert dict((k, host[k]) for k in ("name", "cpus", "pressure", "procs_running", "paused", "node")) == {
        "name": "hv-1", "cpus": 2, "pressure": {"cpu": {"some": {"avg10": 50.0, "avg60": 40.0}}},
        "procs_running": 5, "paused": True, "node": {"name": "worker-1", "gated": False, "effect": None, "policy": {}}}
    # A domain not running is not decided on, but the plan sees it.
    assert [vm["name"] for vm in vms] == ["noisy", "victim-1", "victim-2", "db"]
    assert out["seen"]["hv-1/off"] == {"cap_cpus": None, "throttle_time": None}
    assert out["seen"]["node/worker-1"] == {"gated": False, "gate_time": None, "taints": [], "cordoned": False}
    assert observe.rounds({}, None) == {"rounds": [], "seen": {}, "skipped": [], "fleet": {"nodes": 0, "gated": 0},
                                        "left_out": []}


def test_a_host_with_one_failed_round_still_gets_its_actions_in_the_plan():
    flaky = measured()
    flaky["vm_rounds"][0] = {"failed": True, "msg": "libvirtd away"}
    made = recommend.recommend({"hv-1": measured(node=None), "hv-2": dict(flaky, node=None)}, None, TIMES, NOW)
    assert sorted(a["object"] for a in made["actions"]) == ["hv-1/noisy", "hv-2/noisy"]
    assert made["skipped"] == []


def test_a_host_whose_last_round_failed_is_named_as_not_planned():
    flaky = measured()
    flaky["vm_rounds"][-1] = {"failed": True, "msg": "libvirtd away"}
    made = recommend.recommend({"hv-1": measured(node=None), "hv-2": dict(flaky, node=None)}, None, TIMES, NOW)
    assert [a["object"] for a in made["actions"]] == ["hv-1/noisy"]
    assert made["skipped"] == [{"host": "hv-2", "reason": "its last round (3) could not be read: nothing is planned "
                                                          "for it (the VMs (libvirt_cputune_info): libvirtd away)"}]
    # Any host not measured fails the run unless the operator allows a share of them.
    assert made["unmeasured"]["fail"] and made["unmeasured"]["count"] == 1 and made["unmeasured"]["hosts"] == 2
    assert "hv-2: its last round (3)" in made["unmeasured"]["msg"]
    allowed = recommend.recommend({"hv-1": measured(node=None), "hv-2": dict(flaky, node=None)}, None, TIMES, NOW,
                                  max_unmeasured_share=0.5)
    assert not allowed["unmeasured"]["fail"] and allowed["unmeasured"]["msg"] == ""
    assert not recommend.recommend({"hv-1": measured(node=None)}, None, TIMES, NOW)["unmeasured"]["fail"]


@pytest.mark.parametrize("share", [-0.1, 1.5, "half", None])
def test_a_share_of_unmeasured_hosts_outside_0_to_1_is_refused_naming_it(share):
    with pytest.raises(ValueRangeError) as error:
        recommend.recommend({"hv-1": measured(node=None)}, None, TIMES, NOW, max_unmeasured_share=share)
    assert "max_unmeasured_share=" in str(error.value)


# ---------------------------------------------------------------- recommend: the replay

def test_the_replay_throttles_only_the_shared_culprit_and_gates_the_pressured_node():
    result = replay({"hv-1": measured()}, k8s_nodes(4), TIMES)
    plan = result["last"]
    assert [(a["action"], a["object"], a["rule"]) for a in plan["actions"]] == [
        ("gate", "node/worker-1", "gate_pressure"), ("throttle", "hv-1/noisy", "contain")]
    throttle = plan["actions"][1]
    assert throttle["cpus"] == 0.25 and throttle["previous_cpus"] is None  # down to its floor
    # Its entitlement is its vCPU's share of the shared pool the cpusets say (both CPUs), 2 x 1/5.
    assert "2.5x its entitlement of 0.40" in throttle["reason"]
    assert throttle["signals"]["shared_cpus"] == 2
    assert plan["deferred"] == []
    assert [r["round"] for r in result["history"]] == [1, 2, 3]
    assert [r["time"] for r in result["history"]] == TIMES
    # The round's proposed cap is not applied: the next round sees it uncapped
    # and proposes the same, without taking the unapplied cap for someone else's change.
    assert all([a["object"] for a in r["actions"]] == ["node/worker-1", "hv-1/noisy"] for r in result["history"])
    assert not [n for n in plan["notes"] if n["rule"] == "foreign_change"]
    assert result["seen"]["hv-1/noisy"] == {"cap_cpus": None, "throttle_time": None}


def test_a_rounds_proposed_cap_does_not_leak_into_the_next_rounds_state():
    result = replay({"hv-1": measured()}, k8s_nodes(4), TIMES)
    # Carried: measured state only (trigger history, credits), never the cap.
    for round_ in result["history"]:
        assert {"action": "throttle", "object": "hv-1/noisy", "cpus": 0.25, "rule": "contain"} in round_["actions"]
    assert all(n["rule"] != "foreign_change" for n in result["last"]["notes"])


def test_the_gate_is_deferred_when_the_fleet_has_no_slot_for_it():
    # Severe pressure: a hard gate, which the fleet share bounds (a soft one closes nothing).
    plan = replay({"hv-1": measured(avg10=90.0, avg60=60.0, node="worker-1")}, k8s_nodes(1), TIMES)["last"]
    assert [a["object"] for a in plan["actions"]] == ["hv-1/noisy"]
    assert [(d["object"], d["deferred"]) for d in plan["deferred"]] == [
        ("node/worker-1", "max_gated_share=0.25 allows 0 of 1 nodes gated at once and 0 are")]
    # A node already gated elsewhere takes the one slot of four.
    plan = replay({"hv-1": measured(avg10=90.0, avg60=60.0)}, k8s_nodes(4, gated=("worker-4",)), TIMES)["last"]
    assert [d["object"] for d in plan["deferred"]] == ["node/worker-1"]


def test_a_calm_host_gets_no_action():
    def calm():
        return [domain("a", 0.3, 0.0), domain("b", 0.2, 0.0)]

    result = replay({"hv-1": measured(avg10=1.0, avg60=1.0, domains=calm)}, k8s_nodes(4), TIMES)
    assert result["last"]["actions"] == [] and all(r["actions"] == [] for r in result["history"])


def test_nothing_measured_makes_an_empty_plan():
    made = recommend.recommend({"hv-1": None}, None, [NOW], NOW)
    assert made["actions"] == [] and made["rounds"] == []
    assert made["summary"] == ["not measured: hv-1: not measured (unreachable, or its play failed)"]


# ---------------------------------------------------------------- recommend: the artefact

def test_recommend_makes_the_plan_artefact():
    made = recommend.recommend({"hv-1": measured(), "hv-2": None}, k8s_nodes(4), TIMES, NOW, ttl_seconds=900)
    assert made["id"].startswith("plan-20231114T221320Z-")
    assert made["created"] == "2023-11-14T22:13:20Z" and made["expires"] == "2023-11-14T22:28:20Z"
    assert made["expires_unix"] == made["created_unix"] + 900 == NOW + 900
    assert [a["object"] for a in made["actions"]] == ["node/worker-1", "hv-1/noisy"]
    assert made["actions"][0]["expected"] == {"gated": False, "gate_time": None, "taints": [], "cordoned": False}
    assert made["actions"][1]["expected"] == {"cap_cpus": None, "throttle_time": None}
    assert made["summary"][0].startswith("node/worker-1: gate node (PreferNoSchedule) (gate_pressure: CPU pressure 40.0 % (avg60)")
    assert made["summary"][1].startswith("hv-1/noisy: throttle to 0.25 CPU, was unlimited (contain: ")
    assert made["summary"][-1] == "not measured: hv-2: not measured (unreachable, or its play failed)"
    assert len(made["summary"]) == 3
    assert [r["round"] for r in made["rounds"]] == [1, 2, 3]
    assert made["skipped"] == [{"host": "hv-2", "reason": "not measured (unreachable, or its play failed)"}]
    assert made["parameters"]["max_gated_share"] == 0.25 and made["parameters"]["trigger_n"] == 2
    json.dumps(made)
    # Same input, same plan.
    assert recommend.recommend({"hv-1": measured(), "hv-2": None}, k8s_nodes(4), TIMES, NOW,
                               ttl_seconds=900)["id"] == made["id"]


def test_recommend_takes_policy_parameters():
    made = recommend.recommend({"hv-1": measured()}, k8s_nodes(1), TIMES, NOW, params={"max_gated_share": 1.0})
    assert [a["object"] for a in made["actions"]] == ["node/worker-1", "hv-1/noisy"]
    assert made["parameters"]["max_gated_share"] == 1.0


@pytest.mark.parametrize("args, kwargs, field", [
    (("not a dict", None, TIMES, NOW), {}, "measured"),
    (({"hv-1": "rounds"}, None, TIMES, NOW), {}, "measured.hv-1"),
    (({"hv-1": {"vm_rounds": "r1,r2", "pressure_rounds": []}}, None, TIMES, NOW), {}, "measured.hv-1"),
    (({"hv-1": None}, None, [NOW], NOW), {"ttl_seconds": 0}, "ttl_seconds"),
    (({"hv-1": measured()}, None, TIMES[:2], NOW), {}, "times"),
    (({"hv-1": measured()}, None, TIMES, NOW), {"params": {"trigger_n": 9}}, "policy.trigger_n"),
    (({"hv-1": measured()}, None, TIMES, NOW), {"params": {"nope": 1}}, "policy.nope"),
    (({"hv-1": measured(domains=lambda: [domain("a", 1, 0, klass="gold")])}, None, TIMES, NOW), {},
     "vms[0].class"),
    (({"hv-1": measured(domains=lambda: [domain("a", 1, 0, klass="burstable", vcpus=1, baseline_cpus=2)])},
      None, TIMES, NOW), {}, "vms[0].baseline_cpus"),
])
def test_bad_input_is_refused_naming_the_field(args, kwargs, field):
    with pytest.raises(ValueRangeError) as error:
        recommend.recommend(*args, **kwargs)
    assert error.value.field == field
    assert str(error.value).startswith(field + "=")


# ---------------------------------------------------------------- recommend: state across rounds and runs

def calm_capped_domains(policy_state):
    """A 2-CPU host where the policy's own cap on an idle 1-vCPU VM is all
    that is left of an earlier containment."""
    def domains():
        record = {"time": "2023-11-14T22:00:00Z", "plan": "plan-earlier", "cpus": 0.95}
        return [domain("noisy", 0.0, 0.0, vcpus=1, cap=0.95, record=record, policy=policy_state),
                domain("other", 0.2, 0.0)]
    return domains


def test_a_restore_proposed_in_an_early_round_is_proposed_again_in_the_last():
    """A round's proposed restore clears the calm it was decided on in its
    own state; the next round must still see that calm, or a cycle of
    several rounds never restores."""
    stored = {"cap": 0.95, "rule": "contain", "capped_at": NOW - 600, "changed_at": NOW - 300,
              "direction": "loosen", "calm_since": NOW - 120}
    params = {"relax_calm_seconds": 5, "cooldown_seconds": 5, "relax_step_share": 0.3, "pressure_relax": 100.0}
    result = replay({"hv-1": measured(domains=calm_capped_domains(stored), node=None)}, None, TIMES, params)
    assert [[a["action"] for a in r["actions"]] for r in result["history"]] == [["restore"]] * 3
    assert result["last"]["state"]["vms"]["hv-1/noisy"] == {"restored_at": NOW}


def test_the_plans_state_is_what_each_object_ends_the_run_with():
    """A victim whose trigger history grew in the early rounds is stored
    even when the last round changed nothing of it."""
    result = replay({"hv-1": measured(node=None)}, None, TIMES)
    states = result["last"]["state"]["vms"]
    assert states["hv-1/victim-1"]["hist"] == "111" and states["hv-1/victim-2"]["hist"] == "111"
    assert states["hv-1/noisy"]["cap"] == 0.25 and states["hv-1/noisy"]["rule"] == "contain"
    assert "hv-1/db" not in states


def test_a_cap_an_approved_plan_set_after_the_last_cycle_is_the_policys_own():
    record = {"time": "2023-11-14T22:00:00Z", "plan": "plan-approved", "cpus": 0.5}
    capped = domain("web", 0.1, 0.0, vcpus=1, cap=0.5, record=record, policy={"hist": "10"})
    policy_state = vm_input(capped)["policy"]
    assert policy_state["cap"] == 0.5 and policy_state["rule"] == "contain" and policy_state["hist"] == "10"
    by_hand = domain("web", 0.1, 0.0, vcpus=1, cap=0.5, record=dict(record, plan=None), policy={"hist": "10"})
    assert vm_input(by_hand)["policy"] == {"hist": "10"}
    stored = {"cap": 0.75, "rule": "contain", "direction": "loosen"}
    assert vm_input(domain("web", 0.1, 0.0, vcpus=1, cap=0.75, record=record, policy=stored))[
        "policy"] == stored


def test_a_hosts_node_is_missing_only_when_the_nodes_were_read():
    assert observe.rounds({"hv-1": measured(node="worker-9")}, None)["skipped"] == []
    assert observe.rounds({"hv-1": measured(node="worker-9")}, k8s_nodes(2))["skipped"] == [
        {"host": "hv-1", "reason": "node worker-9 not found in Kubernetes: not gated"}]


def test_a_round_where_one_domain_could_not_be_read_still_decides_about_the_others():
    # libvirt_cputune_info fails the task when a domain fails (a guest restarting) but returns the others.
    def with_one_unreadable():
        return contended_domains() + [{"name": "restarting", "failed": True, "msg": "Failed to create v2 cgroup"}]
    host = measured(domains=with_one_unreadable)
    for vms in host["vm_rounds"]:
        vms.update(failed=True, msg="1 of 5 failed: restarting: Failed to create v2 cgroup")
    result = replay({"hv-1": host}, k8s_nodes(4), TIMES)
    assert ("throttle", "hv-1/noisy") in [(a["action"], a["object"]) for a in result["last"]["actions"]]
    assert "hv-1/restarting" not in result["seen"]
    # A round where nothing could be read decides nothing.
    empty = measured()
    for vms in empty["vm_rounds"]:
        vms.update(failed=True, domains=[])
    assert observe.rounds({"hv-1": empty})["rounds"] == []


# ---------------------------------------------------------------- moves in a plan

MOVE = {"action": "move", "object": "hv-1/big", "vm": "big", "host": "hv-1", "wanted_cpus": 7.9, "to": "hv-2",
        "why": "victims still wait with every culprit at its floor, 3 cycles in a row",
        "reason": "victims still wait with every culprit at its floor, 3 cycles in a row; hv-2 has 12.00 CPUs idle "
                  "for the 7.90 it wants"}


def test_with_moves_opted_in_a_proposed_move_with_a_target_becomes_a_migrate_action():
    throttle = {"action": "throttle", "object": "hv-1/mid", "vm": "mid", "host": "hv-1", "cpus": 1.0, "rule": "contain",
                "reason": "w-1 waits"}
    nowhere = dict(MOVE, object="hv-1/app-1", vm="app-1", to=None, reason="overloaded; no other host")
    on_kubevirt = dict(MOVE, object="lab/web-1", vm="lab/web-1")
    no_node = dict(MOVE, object="lab/web-2", vm="lab/web-2", to="hv-3")
    policy_plan = {"actions": [throttle], "proposals": [MOVE, nowhere, on_kubevirt, no_node]}
    made = recommend.moves_as_actions(policy_plan, {"hv-1/big": "libvirt", "hv-1/app-1": "libvirt",
                                                    "lab/web-1": "kubevirt", "lab/web-2": "kubevirt"},
                                      {"hv-1": "worker-1", "hv-2": "worker-2", "hv-3": None})
    move = {"action": "migrate", "object": "hv-1/big", "vm": "big", "host": "hv-1", "to": "hv-2", "rule": "placement",
            "reason": MOVE["reason"], "wanted_cpus": 7.9}
    # A KubeVirt VM moves to the node on its target host.
    assert made["actions"] == [throttle, move, dict(move, object="lab/web-1", vm="lab/web-1", platform="kubevirt",
                                                    to_node="worker-2")]
    # A move with no target host, or to a host with no node for a KubeVirt VM, stays a proposal.
    assert made["proposals"] == [nowhere, no_node]
    artefact = plans.make(made, {"hv-1/mid": {"cap_cpus": None, "throttle_time": None},
                                 "hv-1/big": {"cap_cpus": 2.0, "throttle_time": "2023-11-14T22:00:00Z"},
                                 "lab/web-1": {"cap_cpus": None, "throttle_time": None}}, NOW)
    assert plans.summary(artefact)[1].startswith("hv-1/big: move live to hv-2, with its records (placement: victims")
    assert plans.summary(artefact)[2].startswith("lab/web-1: move live to hv-2 (node worker-2), with its records")


def test_without_moves_opted_in_the_plan_has_no_migrate_action_and_a_bad_choice_is_refused_naming_it():
    made = recommend.recommend({"hv-1": measured()}, k8s_nodes(4), TIMES, NOW)
    assert all(a["action"] != "migrate" for a in made["actions"])
    with pytest.raises(ValueRangeError) as refused:
        recommend.recommend({"hv-1": measured()}, k8s_nodes(4), TIMES, NOW, migrate="yes")
    assert refused.value.field == "migrate"
