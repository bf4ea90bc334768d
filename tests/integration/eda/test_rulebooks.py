"""The collection's polling event sources run by ansible-rulebook itself
(Java 17, drools), with an inventory of localhost, as users run them. The
alertmanager source is run by the shipped alert rulebook on the whole signal
path, a shipped alert firing and then resolved
(tests/integration/closed_loop/test_closed_loop.py), and against a
real Alertmanager with credentials and TLS (test_alertmanager_source_auth.py)."""

import os
import subprocess
import sys
import time

import pytest
import yaml

from run_module import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("libvirt")]

BIN = os.path.dirname(sys.executable)
INVENTORY = {"all": {"hosts": {"localhost": {"ansible_connection": "local"}}}}


def rulebook(tmp_path, name, sources, rules):
    path = tmp_path / (name + ".yml")
    path.write_text(yaml.safe_dump([{"name": name, "hosts": "all", "sources": sources, "rules": rules}]))
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(INVENTORY))
    return str(path)


def command(path, tmp_path):
    return [os.path.join(BIN, "ansible-rulebook"), "-i", str(tmp_path / "inventory.yml"), "-r", path, "--print-events"]


def environment():
    # ansible-rulebook calls ansible-galaxy, which is in the venv.
    return dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""),
                ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1")


def run_rulebook(path, tmp_path, timeout=120):
    completed = subprocess.run(command(path, tmp_path), env=environment(), capture_output=True, text=True,
                               timeout=timeout, check=False)
    return completed.returncode, completed.stdout + completed.stderr


def test_host_pressure_events_reach_a_rule(tmp_path):
    source = {"overcommit.control.host_pressure": {"rounds": 1, "interval": 0, "host": "lab-host"}}
    rule = {"name": "pressure seen",
            "condition": "event.host_pressure.host == \"lab-host\" and event.host_pressure.cpus > 0",
            "actions": [{"debug": {"msg": "RULE FIRED cpus={{ event.host_pressure.cpus }}"}}, {"shutdown": {"delay": 0}}]}
    path = rulebook(tmp_path, "host pressure", [source], [rule])
    code, output = run_rulebook(path, tmp_path)
    assert code == 0, output[-3000:]
    assert "RULE FIRED cpus=%d" % os.cpu_count() in output and "'avg10'" in output


def test_libvirt_cpu_pressure_events_name_the_busy_guest(tmp_path, busy_guest):
    time.sleep(2)
    path = rulebook(tmp_path, "libvirt pressure",
                    [{"overcommit.control.libvirt_cpu_pressure": {"rounds": 1, "sample_seconds": 2, "min_cpus": 0.3}}],
                    [{"name": "busy guest", "condition": "event.libvirt_cpu.name == \"oc-lab-busy-1\"",
                      "actions": [{"debug": {"msg": "BUSY {{ event.libvirt_cpu.name }}"}}, {"shutdown": {"delay": 0}}]}])
    code, output = run_rulebook(path, tmp_path)
    assert code == 0, output[-3000:]
    assert "BUSY oc-lab-busy-1" in output and "oc-lab-idle-1" not in output
