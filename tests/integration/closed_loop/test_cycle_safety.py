"""One cycle of the closed loop (playbooks/closed_loop.yml) run by
ansible-playbook on the lab's real libvirtd, where it would act: the kill
switch (on the inventory, on the domain) and dry_run change nothing and say
why, and two cycles started at the same time change a VM once.

The cycle that would act is a relax: oc-lab-idle-4 (4 vCPUs, idle) carries
a cap an approved plan set (so the policy owns it), the host is calm and
the policy's calm and cooldown periods are set to 0, so the policy raises
the cap one step. No busy guest is needed."""

import json
import os
import subprocess
import sys

import libvirt
import pytest

from domain_records import policy_states_removed
from run_module import INVENTORY, ROOT, run_module, run_playbook

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("libvirt")]

HOST = "lab-hypervisor"
VM = "oc-lab-idle-4"
KEY = "%s/%s" % (HOST, VM)
POLICY = {"relax_calm_seconds": 0, "cooldown_seconds": 0, "pressure_relax": 100.0}
LIVE = libvirt.VIR_DOMAIN_AFFECT_LIVE
CONFIG = libvirt.VIR_DOMAIN_AFFECT_CONFIG


@pytest.fixture
def capped(libvirt_conn):
    """idle-4 capped to 1 CPU by an approved plan; afterwards restored, its
    state and pause removed."""
    domain = libvirt_conn.lookupByName(VM)

    def clean():
        run_module("libvirt_cputune", {"domains": [VM], "state": "restored"}, host=HOST)
        run_module("libvirt_policy_state", {"states": {VM: None}, "domains": [VM], "paused": False}, host=HOST)
    clean()
    result = run_module("libvirt_cputune", {"domains": [VM], "cpus": 1, "reason": "contain: test",
                                            "plan_id": "plan-20261201T000000Z-0000000000"}, host=HOST)
    assert result["changed"], result
    with policy_states_removed(libvirt_conn):
        yield domain
    clean()


def tuning(domain):
    return domain.schedulerParametersFlags(LIVE), domain.schedulerParametersFlags(CONFIG)


def cycle(tmp_path, **extra):
    cycle_dir = tmp_path / ("cycles-%d" % len(os.listdir(str(tmp_path))))
    cycle_dir.mkdir()
    completed = run_playbook("closed_loop.yml", dict({"samples": 1, "interval": 1, "policy": POLICY,
                                                      "cycle_dir": str(cycle_dir)}, **extra))
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    (summary,) = [json.load(open(str(cycle_dir / name))) for name in os.listdir(str(cycle_dir))]
    return summary, completed.stdout


def test_a_cycle_relaxes_the_policys_cap_one_step_and_stores_its_state(tmp_path, capped):
    summary, output = cycle(tmp_path)
    assert [(a["action"], a["object"], a["cpus"]) for a in summary["actions"]] == [("relax", KEY, 1.4)], summary
    assert summary["outcome"]["applied"] == [KEY]
    assert "applied: %s: relax to 1.4 CPU, was 1 CPU (relax)" % KEY in output
    info = run_module("libvirt_cputune_info", {"domains": [VM]}, host=HOST)["domains"][0]
    assert info["cap_cpus"] == pytest.approx(1.4) and info["throttle"]["plan"] == summary["cycle"]
    assert info["policy"]["cap"] == pytest.approx(1.4) and info["policy"]["direction"] == "loosen"


def test_with_the_kill_switch_on_the_inventory_a_cycle_changes_nothing_and_says_why(tmp_path, capped):
    before = tuning(capped)
    summary, output = cycle(tmp_path, overcommit_paused=True)
    assert summary["actions"] == [] and [h["object"] for h in summary["held"]] == [KEY], summary
    assert "held by the kill switch: %s: kill switch: host %s is paused" % (KEY, HOST) in output
    assert tuning(capped) == before


def test_with_the_kill_switch_on_the_domain_a_cycle_changes_nothing_and_says_why(tmp_path, capped):
    paused = run_module("libvirt_policy_state", {"domains": [VM], "paused": True, "reason": "maintenance"},
                        host=HOST)
    assert paused["changed"], paused
    before = tuning(capped)
    summary, output = cycle(tmp_path)
    assert summary["actions"] == [] and [h["object"] for h in summary["held"]] == [KEY], summary
    assert "held by the kill switch: %s: kill switch: %s is paused" % (KEY, KEY) in output
    assert tuning(capped) == before


def test_a_dry_run_changes_nothing_and_says_what_it_would_do(tmp_path, capped):
    before = tuning(capped)
    summary, output = cycle(tmp_path, mode="dry_run")
    assert summary["mode"] == "dry_run" and [a["action"] for a in summary["actions"]] == ["relax"]
    assert "dry run, nothing applied: %s: relax to 1.4 CPU, was 1 CPU" % KEY in output
    assert tuning(capped) == before
    info = run_module("libvirt_cputune_info", {"domains": [VM]}, host=HOST)["domains"][0]
    assert info["policy"] is None


def test_two_cycles_started_at_the_same_time_change_the_vm_once(tmp_path, capped):
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY,
               os.path.join(ROOT, "playbooks", "closed_loop.yml")]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1")
    runs = []
    for index in range(2):
        cycle_dir = tmp_path / ("cycles-%d" % index)
        cycle_dir.mkdir()
        extra = json.dumps({"samples": 1, "interval": 1, "policy": POLICY, "cycle_dir": str(cycle_dir)})
        runs.append((cycle_dir, subprocess.Popen(command + ["-e", extra], env=env, stdout=subprocess.PIPE,
                                                 stderr=subprocess.STDOUT, text=True)))
    summaries = []
    for cycle_dir, process in runs:
        output = process.communicate(timeout=300)[0]
        assert process.returncode == 0, output[-4000:]
        (name,) = os.listdir(str(cycle_dir))
        summaries.append(json.load(open(str(cycle_dir / name))))
    # Both decided the same step from the same cap; one applied it, the other found the
    # VM changed since it read it (or already at the step it wanted) and left it alone.
    assert all([a["action"] for a in s["actions"]] == ["relax"] for s in summaries), summaries
    applied = [s for s in summaries if KEY in s["outcome"]["applied"]]
    assert len(applied) == 1, [s["outcome"] for s in summaries]
    other = [s for s in summaries if s is not applied[0]][0]
    assert KEY in other["outcome"]["conflict"] + other["outcome"]["refused"] + other["outcome"]["done"], other
    info = run_module("libvirt_cputune_info", {"domains": [VM]}, host=HOST)["domains"][0]
    assert info["cap_cpus"] == pytest.approx(1.4) and info["throttle"]["plan"] == applied[0]["cycle"]
    assert info["policy"]["cap"] == pytest.approx(1.4)
