"""The collection's event sources run by ansible-rulebook itself (Java 17,
drools), with an inventory of localhost, as users run them; and the whole
signal path on the lab: two busy guests and two spinning host processes
contend for the lab's two cores, the metrics_textfile role writes the
guests' measured steal, node_exporter serves it,
Prometheus evaluates the shipped OvercommitVMStealHigh rule to firing,
Alertmanager posts it to a rulebook's alertmanager source, and it resolves
once the guests are stopped and the textfile says so."""

import re

import os
import subprocess
import sys
import time
import urllib.request

import pytest
import yaml

import playbook_forkserver
from run_module import INVENTORY as LAB_INVENTORY, ROOT

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


def get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def wait_for(what, check, seconds, output_file=None):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if check():
            return
        time.sleep(2)
    seen = open(output_file).read()[-4000:] if output_file else ""
    pytest.fail("%s did not happen within %d s\n%s" % (what, seconds, seen), pytrace=False)


def write_textfile(tmp_path, lab):
    """The metrics_textfile role, run as users run it, into the lab's textfile folder."""
    play = tmp_path / "textfile.yml"
    play.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "roles": [
        {"role": "overcommit.control.metrics_textfile",
         "vars": {"metrics_textfile_dir": lab["OVERCOMMIT_TEXTFILE_DIR"], "metrics_textfile_sample_seconds": 2}}]}]))
    written = playbook_forkserver.run([os.path.join(BIN, "ansible-playbook"), "-i", LAB_INVENTORY, str(play)],
                                      env=environment())
    assert written.returncode == 0, written.stdout[-3000:]


@pytest.mark.serial  # two spinning processes and two busy guests fill both cores for two minutes
def test_a_shipped_alert_fires_through_alertmanager_into_a_rulebook_and_resolves(
        tmp_path, lab, libvirt_conn, busy_guest):
    """The steal rule needs its condition for 1 minute, so this test takes
    about two. Two busy guests alone just fill the lab's two cores, so two
    spinning host processes are the noisy neighbours that make them wait."""
    for key in ("OVERCOMMIT_RULEBOOK_PORT", "OVERCOMMIT_TEXTFILE_DIR", "OVERCOMMIT_NODE_EXPORTER_URL"):
        if key not in lab:
            pytest.fail("lab.env has no %s: run tests/testbed/lab up monitoring" % key, pytrace=False)
    second = libvirt_conn.lookupByName("oc-lab-busy-2")
    if not second.isActive():
        second.create()
    textfile = os.path.join(lab["OVERCOMMIT_TEXTFILE_DIR"], "overcommit.prom")
    output_file = str(tmp_path / "rulebook.out")
    alert = ("event.overcommit_alert.name == \"OvercommitVMStealHigh\" and event.overcommit_alert.vm == "
             "\"oc-lab-busy-1\" and event.overcommit_alert.status == ")
    # Each line names the alert by when it started: a resolution left over from
    # an earlier run is not this one's.
    path = rulebook(tmp_path, "overcommit alerts",
                    [{"overcommit.control.alertmanager": {"port": int(lab["OVERCOMMIT_RULEBOOK_PORT"])}}],
                    [{"name": "steal firing", "condition": alert + "\"firing\"",
                      "actions": [{"debug": {"msg": "ALERT FIRING for {{ event.overcommit_alert.vm }} on "
                                                    "{{ event.overcommit_alert.host }} since "
                                                    "{{ event.overcommit_alert.starts_at }}"}}]},
                     {"name": "steal resolved", "condition": alert + "\"resolved\"",
                      "actions": [{"debug": {"msg": "ALERT RESOLVED since {{ event.overcommit_alert.starts_at }}"}}]}])

    def firing_since():
        found = re.findall(r"ALERT FIRING for oc-lab-busy-1 on localhost since (\S+)", open(output_file).read())
        return found[0] if found else None

    with open(output_file, "w") as out:
        process = subprocess.Popen(command(path, tmp_path), env=environment(), stdout=out, stderr=subprocess.STDOUT)
    neighbours = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _neighbour in range(2)]
    try:
        time.sleep(5)  # the guests spin up and contend
        write_textfile(tmp_path, lab)
        wait_for("overcommit_vm_steal_cpus of oc-lab-busy-1 in node_exporter's /metrics",
                 lambda: 'overcommit_vm_steal_cpus{class="shared",host="localhost",vm="oc-lab-busy-1"}'
                 in get(lab["OVERCOMMIT_NODE_EXPORTER_URL"] + "/metrics"), 30)
        wait_for("the firing OvercommitVMStealHigh alert of oc-lab-busy-1 in the rulebook",
                 lambda: firing_since() is not None, 180, output_file)
        for neighbour in neighbours:
            neighbour.kill()
        for domain in (second, busy_guest):
            domain.destroy()
        # Stopped guests have no usage: the textfile no longer reports their steal.
        write_textfile(tmp_path, lab)
        wait_for("the resolution of that alert in the rulebook",
                 lambda: "ALERT RESOLVED since %s" % firing_since() in open(output_file).read(), 180, output_file)
    finally:
        for neighbour in neighbours:
            neighbour.kill()
            neighbour.wait()
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if second.isActive():
            second.destroy()
        if os.path.exists(textfile):
            os.unlink(textfile)
