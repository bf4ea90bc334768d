"""policy_simulate and playbooks/simulate.yml run by ansible-playbook, as
users run them: on the controller, no server involved."""

import json
import os
import sys

import pytest

import playbook_forkserver
from run_module import ROOT, run_module

pytestmark = pytest.mark.isolated

PLAYBOOK = os.path.join(ROOT, "playbooks", "simulate.yml")


def playbook(*extra):
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), PLAYBOOK] + list(extra)
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"))
    return playbook_forkserver.run(command, env=env)


def test_the_playbook_writes_both_reports_and_prints_the_table(tmp_path):
    completed = playbook("-e", "scenario=noisy_neighbour,dedicated_full_load", "-e", "seed=3", "-e",
                         "report_dir=%s" % tmp_path)
    assert completed.returncode == 0, completed.stdout[-3000:]
    simulation = json.loads((tmp_path / "simulation.json").read_text())
    assert set(simulation["policies"]) == {"none", "naive", "crane_step", "overcommit"}
    assert simulation["policies"]["overcommit"]["dedicated_touched"] == 0
    assert simulation["policies"]["naive"]["dedicated_touched"] == 1
    assert set(simulation["scenarios"]) == {"noisy_neighbour", "dedicated_full_load"}
    page = (tmp_path / "simulation.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") >= 10
    assert "containment_p95_intervals" in completed.stdout and "(target <= 2)" in completed.stdout
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]  # no temporary file left


def test_a_trace_of_ones_own_is_replayed_and_can_be_exported_first(tmp_path):
    exported = run_module("policy_simulate", {"scenario": ["role_swap"], "report_dir": str(tmp_path / "a"),
                                              "write_trace": True, "policies": ["overcommit"]})
    assert exported["changed"] and os.path.exists(exported["files"]["role_swap.csv"])
    replayed = run_module("policy_simulate", {"trace": exported["files"]["role_swap.csv"],
                                              "trace_hosts": exported["files"]["role_swap_hosts.csv"],
                                              "report_dir": str(tmp_path / "b"), "policies": ["overcommit"]})
    assert not replayed.get("failed"), replayed.get("msg")
    ours, again = exported["policies"]["overcommit"], replayed["policies"]["overcommit"]
    # The CSV keeps 4 significant digits: the replay sees the same culprits and acts alike.
    assert again["culprit_precision"] == ours["culprit_precision"]
    assert abs(again["throttled_cpu_seconds"] - ours["throttled_cpu_seconds"]) < 0.02 * ours["throttled_cpu_seconds"]


def test_a_malformed_trace_fails_with_its_line_and_writes_nothing(tmp_path):
    trace, hosts = tmp_path / "t.csv", tmp_path / "h.csv"
    trace.write_text("time,host,vm,class,vcpus,demand_cpus\n0,hv-1,a,shared,2,1\n0,hv-1,b,gold,2,1\n")
    hosts.write_text("host,cpus\nhv-1,8\n")
    result = run_module("policy_simulate", {"trace": str(trace), "trace_hosts": str(hosts),
                                            "report_dir": str(tmp_path / "out")})
    assert result["failed"] and "line 3: class='gold'" in result["msg"] and result["field"].endswith("class")
    assert "Traceback" not in json.dumps(result) and not (tmp_path / "out").exists()


def test_check_mode_simulates_and_writes_nothing(tmp_path):
    result = run_module("policy_simulate", {"scenario": ["noisy_neighbour"], "report_dir": str(tmp_path / "out"),
                                            "policies": ["none", "overcommit"]}, check=True)
    assert not result["changed"] and result["policies"]["overcommit"]["containment_p95_intervals"] <= 2
    assert not (tmp_path / "out").exists()


def test_bad_options_are_refused_naming_the_field(tmp_path):
    result = run_module("policy_simulate", {"scenario": ["noisy"], "report_dir": str(tmp_path)})
    assert result["failed"] and "scenario='noisy'" in result["msg"] and "noisy_neighbour" in result["msg"]
    result = run_module("policy_simulate", {"scenario": ["all"], "report_dir": str(tmp_path),
                                            "policy": {"trigger_n": 5}})
    assert result["failed"] and "policy.trigger_n" in result["msg"]
    completed = playbook("-e", "scenario=all")
    assert completed.returncode != 0 and "simulate.yml needs report_dir" in completed.stdout
