# -*- coding: utf-8 -*-
"""The simulator: its host model, trace reading, scenarios, metrics, and
the policy's targets on the generated scenarios."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.simulate import engine, host_model, metrics, run, scenarios
from ansible_collections.overcommit.control.plugins.module_utils.simulate import files
from ansible_collections.overcommit.control.plugins.module_utils.simulate import trace as traces

HEADER = "time,host,vm,class,vcpus,demand_cpus,culprit\n"


# -------------------------------------------------------------- host model

def test_share_out_is_max_min_fair_by_weight():
    assert host_model.share_out(8, [1, 2, 3], [1, 1, 1]) == [1, 2, 3]  # it all fits
    assert host_model.share_out(6, [1, 8, 8], [1, 1, 1]) == pytest.approx([1, 2.5, 2.5])
    # vCPU weights: 8 vCPUs get four times what 2 vCPUs get when both want more.
    assert host_model.share_out(5, [2, 8], [2, 8]) == pytest.approx([1, 4])


def test_the_host_model_honours_caps_and_keeps_dedicated_cores_apart():
    model = host_model.HostModel("hv", 8, 10)
    vms = [(8, False, 8), (2, False, 2), (4, True, 4)]
    used, steal, contention = model.run(vms, [8, 2, 4], [None, None, None])
    assert used[2] == 4 and steal[2] == 0  # pinned: its own cores
    assert sum(used[:2]) == pytest.approx(4) and contention[1] > 0
    used, steal, contention = model.run(vms, [8, 2, 4], [2.0, None, None])
    assert used == pytest.approx([2, 2, 4]) and steal[0] == pytest.approx(6) and contention[0] == 0
    assert model.avg10 > 0


def test_the_host_model_shares_by_the_cpu_weights_it_is_given():
    # libvirt's default: every domain the same weight whatever its vCPUs.
    model = host_model.HostModel("hv", 4, 10)
    used, _steal, _contention = model.run([(4, False, 1024), (2, False, 1024)], [4, 2], [None, None])
    assert used == pytest.approx([2, 2])
    used, _steal, _contention = model.run([(4, False, 4), (2, False, 2)], [4, 2], [None, None])
    assert used == pytest.approx([8 / 3.0, 4 / 3.0])


def test_a_vm_whose_vcpus_sleep_waits_once_the_others_fill_the_last_cpu():
    model = host_model.HostModel("hv", 4, 10, queue_delay=1.0)
    light, spinner, half = (1, False, 1), (1, False, 1), (2, False, 1)
    # Three spinners on four CPUs leave the last one free: nobody waits.
    _used, steal, _contention = model.run([light] + [spinner] * 3, [0.5, 1, 1, 1], [None] * 4)
    assert steal == pytest.approx([0, 0, 0, 0])
    # A fourth consumer of half a CPU: the others fill half of the last CPU for the light VM.
    used, steal, contention = model.run([light] + [spinner] * 3 + [half], [0.5, 1, 1, 1, 0.5], [None] * 5)
    assert used == pytest.approx([0.5, 1, 1, 1, 0.5])
    assert steal[0] == pytest.approx(1.0 * 0.5 * 0.5) and steal[1:4] == pytest.approx([0, 0, 0])  # spinners never sleep
    assert contention == pytest.approx(steal)  # a wait no cap of its own explains: the metrics' victims
    # A cap's wait is its steal already; with queue_delay 0 the model is the fluid share-out.
    _used, steal, _contention = model.run([light] + [spinner] * 4, [0.5, 1, 1, 1, 1], [0.3, None, None, None, None])
    assert steal[0] == pytest.approx(0.2)
    fluid = host_model.HostModel("hv", 4, 10, queue_delay=0.0)
    assert fluid.run([light] + [spinner] * 3 + [half], [0.5, 1, 1, 1, 0.5], [None] * 5)[1] == pytest.approx([0] * 5)


def test_pressure_some_lets_random_waits_overlap():
    assert host_model.pressure_some(0.0) == 0
    assert host_model.pressure_some(1.0) == pytest.approx(63.2, abs=0.1)
    assert 99 < host_model.pressure_some(5.0) < 100


def test_the_shipped_queue_delay_is_the_fit_of_the_recorded_lab_run_and_beats_the_fluid_model():
    """bench/recorded/host_queueing_lab.json is what bench/host_queueing.py
    measured on the lab (a light guest beside 0 to 3 spinning guests): the
    value shipped is its least-squares fit, and the model with it is several
    times closer to the measured delays than the fluid share-out."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "bench", "recorded", "host_queueing_lab.json")
    with open(path) as handle:
        recorded = json.load(handle)
    cpus, points = recorded["cpus"], recorded["points"]
    assert round(host_model.fit_queue_delay(cpus, points), 2) == host_model.QUEUE_DELAY

    def rms(queue_delay):
        errors = [host_model.lab_point(cpus, point, queue_delay)[0] - point["delay"] for point in points]
        return (sum(error * error for error in errors) / len(errors)) ** 0.5
    assert rms(host_model.QUEUE_DELAY) * 3 < rms(0.0), (rms(host_model.QUEUE_DELAY), rms(0.0))


def test_the_shipped_weight_exponents_are_the_fit_of_the_recorded_weight_sweep_and_beat_no_weights():
    """bench/recorded/weight_sweep_lab.json is what bench/weight_sweep.py
    measured on the lab (a light guest beside two spinners at several
    cpu_shares, KVM guests): the exponents shipped are its least-squares fit,
    and the model with them is several times closer to the measured wait
    ratios than a queue that ignores weights."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "bench", "recorded", "weight_sweep_lab.json")
    with open(path) as handle:
        recorded = json.load(handle)
    cpus, points = recorded["cpus"], recorded["points"]
    assert host_model.fit_weight_exponents(cpus, points) == host_model.WEIGHT_EXPONENTS
    weighted = [p for p in points if any(s != p["light_shares"] for s in p["spinner_shares"])]
    assert len(weighted) >= 6

    def rms(exponents):
        errors = [host_model.wait_ratio(p["used"], host_model.weighted_lab_point(cpus, p, exponents=exponents)[0])
                  - host_model.wait_ratio(p["used"], p["delay"]) for p in weighted]
        return (sum(error * error for error in errors) / len(errors)) ** 0.5
    assert rms(host_model.WEIGHT_EXPONENTS) * 3 < rms((0.0, 0.0)), (rms(host_model.WEIGHT_EXPONENTS), rms((0.0, 0.0)))


def test_a_waking_vm_keeps_its_wait_beside_equal_or_higher_weights_and_loses_it_beside_lower_ones():
    assert host_model.preemption_share([(1.0, 1024), (1.0, 1024)], 1024) == 1.0
    assert host_model.preemption_share([(1.0, 4096)], 1024) == 1.0
    one = host_model.preemption_share([(1.0, 64), (1.0, 1024)], 1024)
    both = host_model.preemption_share([(1.0, 64), (1.0, 64)], 1024)
    assert both < one < 1.0
    # A neighbour that is seldom busy is seldom there to be preempted.
    assert one < host_model.preemption_share([(0.2, 64), (1.0, 1024)], 1024) < 1.0


# -------------------------------------------------------------- traces

def write(tmp_path, text, hosts="host,cpus\nhv-1,8\n"):
    trace, hosts_file = tmp_path / "trace.csv", tmp_path / "hosts.csv"
    trace.write_text(text)
    hosts_file.write_text(hosts)
    return str(trace), str(hosts_file)


def test_a_trace_round_trips_through_csv(tmp_path):
    generated = scenarios.generate("noisy_neighbour", 3)
    path, hosts = str(tmp_path / "t.csv"), str(tmp_path / "h.csv")
    files.write_rows(traces.trace_rows(generated), path)
    files.write_rows(traces.host_rows(generated), hosts)
    read = files.read_trace(path, files.read_hosts(hosts))
    assert read.count == generated.count and read.interval == 10 and set(read.vms) == set(generated.vms)
    key = "hv-1/batch-1"
    assert list(read.culprit[key]) == list(generated.culprit[key])
    assert read.demand[key][100] == pytest.approx(generated.demand[key][100], rel=1e-3)


@pytest.mark.parametrize("text, where, reason", [
    ("time,host,vm,class,vcpus\n0,hv-1,a,shared,2\n", "line 1", "demand_cpus is missing"),
    (HEADER + "0,hv-1,a,shared,2,-1,0\n", "line 2: demand_cpus", "0..2"),
    (HEADER + "0,hv-1,a,shared,2,3,0\n", "line 2: demand_cpus", "0..2"),
    (HEADER + "0,hv-1,a,shared,2,2.11,0\n", "line 2: demand_cpus", "5 % above them"),
    ("time,host,vm,class,vcpus,demand_cpus,weight\n0,hv-1,a,shared,2,1,0\n", "line 2: weight", "above 0"),
    ("time,host,vm,class,vcpus,demand_cpus,weight\n0,hv-1,a,shared,2,1,1024\n10,hv-1,a,shared,2,1,512\n",
     "line 3: vm", "the same class, vcpus and weight"),
    (HEADER + "0,hv-1,a,gold,2,1,0\n", "line 2: class", "dedicated, shared, burstable"),
    (HEADER + "0,hv-1,a,shared,2,1,0\n10,hv-1,a,shared,2,1,0\n5,hv-1,a,shared,2,1,0\n", "line 4: time",
     "may not go backwards"),
    (HEADER + "0,hv-1,a,shared,2,1,0\n10,hv-1,a,shared,2,1,0\n30,hv-1,a,shared,2,1,0\n", "line 4: time", "regular"),
    (HEADER + "0,hv-2,a,shared,2,1,0\n", "line 2: host", "hosts file"),
    (HEADER + "0,hv-1,a,shared,2,1,2\n", "line 2: culprit", "0 or 1"),
    (HEADER + "0,hv-1,a,shared,2,1,0\n0,hv-1,a,shared,2,1,0\n", "line 3: vm", "one row per VM and interval"),
    (HEADER + "0,hv-1,a,shared,2,1,0\n10,hv-1,a,shared,4,1,0\n", "line 3: vm", "the same class, vcpus"),
    (HEADER + "0,hv-1,a,shared,2,lots,0\n", "line 2: demand_cpus", "a number"),
    (HEADER + "0,hv-1,a,shared,2,nan,0\n", "line 2: demand_cpus", "finite"),
    (HEADER, "trace.csv: rows", "at least one row"),
])
def test_a_malformed_trace_is_refused_with_the_line_and_the_reason(tmp_path, text, where, reason):
    path, hosts = write(tmp_path, text)
    with pytest.raises(ValueRangeError) as error:
        files.read_trace(path, files.read_hosts(hosts))
    assert where in str(error.value) and reason in str(error.value)


def test_demand_a_little_above_the_vcpus_is_rate_jitter_clamped_and_counted(tmp_path):
    path, hosts = write(tmp_path, HEADER + "0,hv-1,a,shared,2,2.08,0\n0,hv-1,b,shared,2,1,0\n"
                        "10,hv-1,a,shared,2,2.0,0\n10,hv-1,b,shared,2,2.1,0\n")
    trace = files.read_trace(path, files.read_hosts(hosts))
    assert list(trace.demand["hv-1/a"]) == [2.0, 2.0] and list(trace.demand["hv-1/b"]) == [1.0, 2.0]
    assert trace.clamped == 2


def test_a_weighted_trace_round_trips_and_weights_the_host_model(tmp_path):
    path, hosts = write(tmp_path, "time,host,vm,class,vcpus,demand_cpus,weight\n"
                        "0,hv-1,big,shared,8,8,1024\n0,hv-1,small,shared,2,2,1024\n", hosts="host,cpus\nhv-1,4\n")
    trace = files.read_trace(path, files.read_hosts(hosts))
    assert trace.vms["hv-1/big"]["weight"] == 1024
    again = str(tmp_path / "again.csv")
    files.write_rows(traces.trace_rows(trace), again)
    assert files.read_trace(again, files.read_hosts(hosts)).vms["hv-1/small"]["weight"] == 1024
    series = engine.simulate(trace, ["none"])["series"]["policies"]["none"]["used"]
    # Equal weights: the 2-vCPU VM gets its 2 CPUs beside the 8-vCPU one (by vCPUs it would get 0.8).
    assert series["small"][0] == pytest.approx(2.0) and series["big"][0] == pytest.approx(2.0)


def test_a_demoted_weight_first_cuts_a_light_vms_wait_more_than_the_quota_alone_and_withholds_less():
    """The lab's case in the model: on 2 CPUs a light VM wanting 0.3 CPU
    beside two spinners, all at libvirt's default weight. No control leaves
    it waiting; the policy demotes both spinners' weights first, then caps
    them while it still waits. Against the same policy with the weight rung
    off (weight_cycles 0: quota only), the light VM waits less and less CPU
    is withheld (the weight fitted on the lab, bench/weight_sweep.py)."""
    trace = traces.Trace("weights", 10, {"hv-1": 2})
    light = trace.add_vm("hv-1", "light", "shared", 1, weight=1024)
    spinners = [trace.add_vm("hv-1", "spin-%d" % n, "shared", 1, weight=1024) for n in (1, 2)]
    trace.grow(60)
    trace.has_ground_truth = True
    for index in range(60):
        trace.demand[light][index] = 0.3
        for key in spinners:
            trace.demand[key][index] = 1.0
            trace.culprit[key][index] = 1
    result = engine.simulate(trace, ["none", "overcommit"])
    none, ours = result["policies"]["none"], result["policies"]["overcommit"]
    quota_only = engine.simulate(trace, ["overcommit"], params={"weight_cycles": 0})["policies"]["overcommit"]
    assert none["victim_steal_cpu_seconds"] > 100
    assert ours["actions"]["weight"] == 2 and "weight" not in quota_only["actions"], (ours, quota_only)
    assert ours["victim_steal_cpu_seconds"] < quota_only["victim_steal_cpu_seconds"] / 2, (ours, quota_only)
    assert ours["victim_steal_cpu_seconds"] < none["victim_steal_cpu_seconds"] / 3, (ours, none)
    assert ours["throttled_cpu_seconds"] < quota_only["throttled_cpu_seconds"], (ours, quota_only)
    # The weights came first: the first cycle set weights alone, the caps followed.
    caps = result["series"]["policies"]["overcommit"]["cap"]["spin-1"]
    assert caps[0] is None and caps[-1] is not None, caps[:3]


@pytest.mark.parametrize("hosts, reason", [
    ("host\nhv-1\n", "host,cpus"),
    ("host,cpus\nhv-1,0\n", "above 0"),
    ("host,cpus\nhv-1,8\nhv-1,4\n", "each host once"),
    ("host,cpus\n", "at least one host"),
])
def test_a_malformed_hosts_file_is_refused(tmp_path, hosts, reason):
    _path, hosts_path = write(tmp_path, HEADER, hosts)
    with pytest.raises(ValueRangeError) as error:
        files.read_hosts(hosts_path)
    assert reason in str(error.value)


def test_a_binary_file_is_refused_not_a_traceback(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ValueRangeError) as error:
        files.read_trace(str(path), {"hv-1": 8})
    assert "UTF-8" in str(error.value)


# -------------------------------------------------------------- scenarios and metrics

def test_scenarios_are_deterministic_per_seed():
    one, again, other = (scenarios.generate("role_swap", seed) for seed in (4, 4, 5))
    key = "hv-1/web-1"
    assert list(one.demand[key]) == list(again.demand[key]) and list(one.demand[key]) != list(other.demand[key])


def test_unknown_scenario_and_policy_are_refused_by_name(tmp_path):
    with pytest.raises(ValueRangeError) as error:
        run.check_request({"scenario": ["noisy"], "report_dir": str(tmp_path)})
    assert error.value.field == "scenario"
    with pytest.raises(ValueRangeError) as error:
        run.check_request({"scenario": ["all"], "report_dir": str(tmp_path), "policies": ["smart"]})
    assert error.value.field == "policies"
    with pytest.raises(ValueRangeError) as error:
        run.check_request({"report_dir": str(tmp_path)})
    assert error.value.field == "scenario"
    trace, hosts = write(tmp_path, HEADER + "0,hv-1,a,shared,2,1,0\n")
    with pytest.raises(ValueRangeError) as error:
        run.check_request({"trace": trace, "trace_hosts": hosts, "report_dir": str(tmp_path), "write_trace": True})
    assert error.value.field == "write_trace"


def test_paths_that_are_not_what_they_should_be_are_refused_by_field(tmp_path):
    trace, hosts = write(tmp_path, HEADER + "0,hv-1,a,shared,2,1,0\n")
    request = run.check_request({"trace": trace, "trace_hosts": str(tmp_path / "none.csv"),
                                 "report_dir": str(tmp_path)})
    with pytest.raises(ValueRangeError) as error:
        files.check_paths(request)
    assert error.value.field == "trace_hosts" and "a readable file" in str(error.value)
    with pytest.raises(ValueRangeError) as error:
        files.check_paths(run.check_request({"trace": trace, "trace_hosts": hosts, "report_dir": trace}))
    assert error.value.field == "report_dir" and "this is a file" in str(error.value)
    files.check_paths(run.check_request({"trace": trace, "trace_hosts": hosts, "report_dir": str(tmp_path / "new")}))


def test_all_stands_for_every_small_scenario_beside_others(tmp_path):
    request = run.check_request({"scenario": ["fleet", "all"], "report_dir": str(tmp_path)})
    assert request["scenarios"] == list(scenarios.SMALL) + ["fleet"]


def test_percentiles_are_nearest_rank():
    assert metrics.percentile([1, 2, 3, 4, 100], 0.5) == 3
    assert metrics.percentile([1] * 95 + [9] * 5, 0.95) == 1
    assert metrics.percentile([1] * 94 + [9] * 6, 0.95) == 9
    assert metrics.percentile([], 0.95) is None


def test_no_control_leaves_victims_waiting_and_ours_contains_them():
    result = engine.simulate(scenarios.generate("noisy_neighbour", 1), ["none", "overcommit"])
    none, ours = result["policies"]["none"], result["policies"]["overcommit"]
    # The neighbour is noisy for 30 minutes: 180 intervals of waiting victims without control.
    assert none["containment_p95_intervals"] >= 150 and none["throttled_cpu_seconds"] == 0
    assert ours["containment_p95_intervals"] <= 2 and ours["culprit_precision"] == 1
    assert ours["victim_steal_cpu_seconds"] < none["victim_steal_cpu_seconds"] / 10


def test_the_naive_script_touches_the_dedicated_vm_and_ours_does_not():
    result = engine.simulate(scenarios.generate("dedicated_full_load", 1), ["naive", "overcommit"])
    assert result["policies"]["naive"]["dedicated_touched"] == 1
    assert result["policies"]["overcommit"]["dedicated_touched"] == 0


# Targets the policy misses, per generated scenario, each with its reason from
# the code in docs/policy.md ("Targets and what is not met"), in a paragraph
# that names both.
KNOWN_MISSES = {
    "noisy_neighbour": {"idle_cpu_while_throttled"},
    "several_culprits": {"containment_p95_intervals", "idle_cpu_while_throttled"},
    "role_swap": {"containment_p95_intervals", "idle_cpu_while_throttled"},
    "dedicated_full_load": {"containment_p95_intervals"},
    "fleet": {"containment_p95_intervals", "culprit_precision", "culprit_recall", "gate_toggles_per_node_hour",
              "reversals_per_vm_per_10min"},
}
# Metrics on which ours is worse than another policy, each with its reason in
# docs/policy.md (the same section): the price of not flapping.
KNOWN_TRADES = {"naive": {"idle_cpu_while_throttled"}}


def unmet_targets(verdict):
    return set(name for name, judged in verdict["targets"].items() if judged["met"] is False)


def documented_misses():
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "docs", "policy.md")) as handle:
        return handle.read().split("Targets and what is not met")[1].split("## Speed")[0]


def assert_documented_misses(scenario, unmet):
    """The scenario misses only its known targets, each named with the
    scenario in one paragraph of docs/policy.md."""
    assert unmet <= KNOWN_MISSES.get(scenario, set()), (scenario, unmet)
    paragraphs = documented_misses().split("\n- ")
    for metric in unmet:
        assert [p for p in paragraphs if "`%s`" % metric in p and "`%s`" % scenario in p], (scenario, metric)


def test_the_fleet_generator_on_ten_hosts_misses_only_the_documented_targets():
    """The fleet scenario's generator (mixed host sizes, culprits by their own
    history) on 10 of its 50 hosts, to fit the test suite; bench/policy.py
    --scenarios replays all 50 (docs/policy.md)."""
    trace = scenarios.fleet(1, hosts=10)
    result = engine.simulate(trace, ["overcommit"], plot_points=1)
    verdict = metrics.verdict(result["policies"], "overcommit", [])
    assert_documented_misses("fleet", unmet_targets(verdict))
    assert verdict["targets"]["dedicated_touched"]["met"]


def test_on_the_generated_scenarios_our_policy_meets_its_targets_and_beats_the_others(tmp_path):
    """One run over every scenario but the 1,000-VM fleet (bench/policy.py
    replays that one): pooled, each target is met but those docs/policy.md
    says are missed and why, and against the naive script and the
    Crane-style step policy ours is better on containment, precision and
    reversals, and worse on nothing, and misses no target they meet, but
    for the trades docs/policy.md explains."""
    simulation, _replayed = run.simulate(run.check_request({"scenario": ["all"], "report_dir": str(tmp_path)}))
    assert unmet_targets(simulation["verdict"]) <= set().union(*KNOWN_MISSES.values())
    for name, scenario in simulation["scenarios"].items():
        assert_documented_misses(name, unmet_targets(scenario["verdict"]))
    for name in set().union(*KNOWN_TRADES.values()):
        assert "`%s`" % name in documented_misses(), name
    assert simulation["verdict"]["targets"]["credit_error"]["value"] <= 0.01
    for other in ("naive", "crane_step"):
        versus = simulation["verdict"]["versus"][other]
        assert {"containment_p95_intervals", "culprit_precision", "reversals_per_vm_per_10min"} <= set(versus["better"])
        trades = KNOWN_TRADES.get(other, set())
        assert set(versus["worse"]) <= trades and set(versus["missed_where_it_meets"]) <= trades, versus
        assert versus["wins"] == (not versus["worse"])
    diurnal = simulation["scenarios"]["diurnal"]["policies"]["overcommit"]
    assert diurnal["throttled_cpu_seconds"] == 0 and diurnal["actions"].get("gate")  # gates, never throttles
    json.dumps(simulation)
