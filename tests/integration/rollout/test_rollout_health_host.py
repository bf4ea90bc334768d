"""Where a unit's health check measures host pressure: the role rollout_wave
on a unit that runs on the control node (localhost in the lab inventory),
with nothing to change, so that only the health check runs. With
rollout_wave_health_host the pressure reading is delegated to that host
(the lab's hypervisor, lab-hypervisor); without it, it is the unit's own.

The lab is one machine, so both readings come from the same /proc: what is
judged is where Ansible ran the reading, as its output says it."""

import os
import re
import sys

import pytest
import yaml

import playbook_forkserver
from run_module import INVENTORY, ROOT

pytestmark = pytest.mark.isolated

READING = "TASK [overcommit.control.rollout_wave : Measure the host's pressure after the wave]"


def run_wave(tmp_path, **variables):
    play = tmp_path / "wave.yml"
    play.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "roles": [{
        "role": "overcommit.control.rollout_wave",
        "vars": dict({"rollout_wave_health": {"max_failed": 0, "max_cpu_pressure": 100}}, **variables)}]}]))
    return playbook_forkserver.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY, str(play)],
        env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1"))


def wave(tmp_path, **variables):
    """The hosts the pressure reading ran on, as Ansible printed them."""
    completed = run_wave(tmp_path, **variables)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-2000:]
    reading = completed.stdout.split(READING, 1)[1].split("TASK [", 1)[0]
    return re.findall(r"^ok: \[([^\]]+)\]", reading, re.M)


def test_the_pressure_is_read_on_the_health_host_when_one_is_named(tmp_path):
    assert wave(tmp_path, rollout_wave_health_host="lab-hypervisor") == ["localhost -> lab-hypervisor"]


def test_the_pressure_is_read_on_the_units_own_host_when_none_is_named(tmp_path):
    assert wave(tmp_path) == ["localhost"]


def test_a_health_host_the_inventory_does_not_hold_is_refused_before_the_wave(tmp_path):
    # The wave would first set this KubeVirt CR (which does not exist): its task must not be reached.
    completed = run_wave(tmp_path, rollout_wave_health_host="hv-nowhere",
                         rollout_wave_kubevirt_config={"namespace": "lab", "name": "oc-none", "memory_overcommit": 150})
    assert completed.returncode != 0
    assert "rollout_wave_health_host=hv-nowhere is not a host of the inventory" in completed.stdout, completed.stdout[-3000:]
    assert "Set the KubeVirt CR's overcommit model" not in completed.stdout, completed.stdout[-3000:]
    assert "Traceback" not in completed.stdout + completed.stderr
