"""The README's quick start, run as written: its inventory's shape, then its
check, throttle and restore commands, against the lab's real libvirtd.

The lab has one hypervisor, reached without SSH, so the README's first host
stands for it (local connection, the lab's libvirt URI) and its second is
left out; the VM the README names stands for a lab guest. Everything else -
the commands, their options and their variables - is taken from the README."""

import json
import os
import re
import shlex
import sys

import libvirt
import pytest
import yaml

import playbook_forkserver
from run_module import ROOT

pytestmark = pytest.mark.xdist_group("libvirt")

GUEST = "oc-lab-idle-4"


def quick_start():
    """(the inventory, the commands) of the README's quick start section."""
    with open(os.path.join(ROOT, "README.md")) as handle:
        readme = handle.read()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    inventory = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1).replace("\n   ", "\n"))
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        commands.append(shlex.split(block.replace("\\\n", " "), comments=True))
    return inventory, commands


def sched(domain):
    return {"live": domain.schedulerParametersFlags(libvirt.VIR_DOMAIN_AFFECT_LIVE),
            "config": domain.schedulerParametersFlags(libvirt.VIR_DOMAIN_AFFECT_CONFIG)}


def run(command, inventory_path, lab):
    argv = [os.path.join(os.path.dirname(sys.executable), command[0])]
    for word in command[1:]:
        if word == "inventory.yml":
            word = inventory_path
        elif word.startswith("{"):
            variables = json.loads(word)
            variables["domains"] = [GUEST if name == "web-17" else name for name in variables["domains"]]
            word = json.dumps(variables)
        argv.append(word)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1")
    return playbook_forkserver.run(argv, env=env)


def test_the_readme_quick_start_checks_throttles_and_restores_a_vm(lab, libvirt_conn, tmp_path):
    inventory, commands = quick_start()
    hosts = inventory["hypervisors"]["hosts"]
    assert list(inventory) == ["hypervisors"] and len(hosts) >= 1, inventory
    first = sorted(hosts)[0]
    lab_host = dict(hosts[first] or {}, ansible_connection="local", ansible_python_interpreter=sys.executable,
                    libvirt_uri=lab["OVERCOMMIT_LIBVIRT_URI"])
    path = str(tmp_path / "inventory.yml")
    with open(path, "w") as handle:
        yaml.safe_dump({"hypervisors": {"hosts": {first: lab_host}}}, handle)
    check, throttle, restore = commands
    assert "--check" in check and "--diff" in check and check[2:4] == ["inventory.yml", "overcommit.control.throttle"]
    assert throttle[3] == "overcommit.control.throttle" and restore[3] == "overcommit.control.restore"

    guest = libvirt_conn.lookupByName(GUEST)
    before = sched(guest)
    checked = run(check, path, lab)
    assert checked.returncode == 0, checked.stdout[-3000:]
    # The diff shows the tuning before and after; the summary what would be in force.
    assert "%s: would be 2 CPU, was" % GUEST in checked.stdout, checked.stdout[-3000:]
    assert '+        "global_quota": 200000' in checked.stdout, checked.stdout[-3000:]
    assert sched(guest) == before
    try:
        throttled = run(throttle, path, lab)
        assert throttled.returncode == 0 and "%s: 2 CPU, was" % GUEST in throttled.stdout, throttled.stdout[-3000:]
        assert sched(guest)["live"]["global_quota"] == 2 * sched(guest)["live"]["global_period"]
    finally:
        restored = run(restore, path, lab)
    assert restored.returncode == 0 and "%s: restored" % GUEST in restored.stdout, restored.stdout[-3000:]
    assert sched(guest) == before
