"""Benchmark: an incident throttle and its restore by VM name across the
lab's fleet of three hypervisors, two of them reached over SSH.

Side by side, in one run, alternating, each as one ansible-playbook run over
the same inventory (the lab's and its fleet's: lab-hypervisor locally,
oc-lab-hv-1 and oc-lab-hv-2 over SSH as ocadmin):
  playbooks  the collection's throttle.yml and restore.yml with the names
             (each host caps the names it has; restore gives back exactly
             what the throttle replaced)
  loop       the per-host loop users run today: on every host, list the
             domains with virsh, then one `virsh schedinfo` command task per
             name the host has (restore sets the quota back to unlimited)

Each variant throttles (one playbook) and restores (a second one); the caps
are read back on every host after each, outside the timing. Prints the
seconds of each variant (median and spread of the repeats) and their ratio.

usage: bench/fleet_incident.py [--repeat 3]
Needs the lab and its fleet (tests/testbed/lab up, tests/testbed/lab up
fleet) and the lab's venv; uses the idle guests each host runs.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

from timing import INVENTORY, ROOT

# One idle guest per host, each defined on its host only.
GUESTS = {"lab-hypervisor": "oc-lab-idle-1", "oc-lab-hv-1": "oc-hv1-idle-1", "oc-lab-hv-2": "oc-hv2-idle-1"}
CAP_CPUS = 0.5
PERIOD = 100000


def lab_env():
    """The lab's connection details (tests/testbed/lab writes them)."""
    path = os.path.join(os.environ.get("OVERCOMMIT_LAB_HOME", os.path.expanduser("~/.cache/overcommit-lab")), "lab.env")
    env = {}
    with open(path) as handle:
        for line in handle:
            if line.startswith("export ") and "=" in line:
                key, value = line[len("export "):].strip().split("=", 1)
                env[key] = value
    if not os.path.exists(env.get("OVERCOMMIT_FLEET_INVENTORY", "")):
        sys.exit("the lab's fleet is not up: run tests/testbed/lab up fleet")
    return env


def run(inventories, playbook, extra_vars=None):
    """Seconds one ansible-playbook run took, and its output; stops the
    benchmark with the output when it fails."""
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook")]
    for inventory in inventories:
        command += ["-i", inventory]
    command.append(playbook)
    if extra_vars is not None:
        command += ["-e", json.dumps(extra_vars)]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1")
    started = time.perf_counter()
    completed = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        sys.exit("%s failed:\n%s\n%s" % (playbook, completed.stdout[-3000:], completed.stderr[-3000:]))
    return elapsed, completed.stdout


def loop_playbook(workdir, settings, name):
    """The users' per-host loop: the host's domains listed, then one virsh
    command per name it has."""
    path = os.path.join(workdir, name + ".yml")
    virsh = "virsh -c {{ libvirt_uri | default('qemu:///system') }}"
    with open(path, "w") as handle:
        yaml.safe_dump([{"name": name, "hosts": "hypervisors", "gather_facts": False, "tasks": [
            {"name": "List the host's domains", "ansible.builtin.command": virsh + " list --all --name",
             "register": "listed", "changed_when": False},
            {"name": "Set each one's CPU quota", "ansible.builtin.command": virsh + " schedinfo {{ item }} "
             "--live --config " + settings, "loop": sorted(GUESTS.values()),
             "when": "item in listed.stdout_lines", "changed_when": True}]}], handle)
    return path


def read_quotas(inventories, workdir):
    """{guest: its live global_quota}, read on every host."""
    path = os.path.join(workdir, "read.yml")
    with open(path, "w") as handle:
        yaml.safe_dump([{"name": "read", "hosts": "hypervisors", "gather_facts": False, "tasks": [
            {"name": "Read the guest's quota", "ansible.builtin.command":
             "virsh -c {{ libvirt_uri | default('qemu:///system') }} schedinfo {{ guests[inventory_hostname] }} --live",
             "register": "schedinfo", "changed_when": False},
            {"name": "Say it", "ansible.builtin.debug": {
                "msg": "QUOTA {{ inventory_hostname }} {{ (schedinfo.stdout_lines | select('match', 'global_quota')"
                       " | first).split(':')[1] | trim }}"}}]}], handle)
    output = run(inventories, path, {"guests": GUESTS})[1]
    quotas = {}
    for host, guest in GUESTS.items():
        marker = "QUOTA %s " % host
        found = [line.split(marker, 1)[1].split('"')[0].split("\\")[0] for line in output.splitlines() if marker in line]
        quotas[guest] = int(found[0]) if found else None
    return quotas


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    env = lab_env()
    inventories = [INVENTORY, env["OVERCOMMIT_FLEET_INVENTORY"]]
    names = sorted(GUESTS.values())
    capped = int(CAP_CPUS * PERIOD)
    seconds = {"playbooks": [], "loop": []}
    with tempfile.TemporaryDirectory() as workdir:
        unlimited = read_quotas(inventories, workdir)
        if any(quota is None or 0 < quota < PERIOD * 64 for quota in unlimited.values()):
            sys.exit("every guest must run uncapped on its host first: %s" % unlimited)
        loop_throttle = loop_playbook(workdir, "global_period=%d global_quota=%d" % (PERIOD, capped), "throttle")
        loop_restore = loop_playbook(workdir, "global_quota=-1", "restore")
        throttle = os.path.join(ROOT, "playbooks", "throttle.yml")
        restore = os.path.join(ROOT, "playbooks", "restore.yml")
        for _repeat in range(options.repeat):
            for variant in ("playbooks", "loop"):
                if variant == "playbooks":
                    took = run(inventories, throttle, {"domains": names, "cpus": CAP_CPUS, "reason": "bench"})[0]
                else:
                    took = run(inventories, loop_throttle)[0]
                throttled = read_quotas(inventories, workdir)
                if set(throttled.values()) != {capped}:
                    sys.exit("%s did not cap every guest: %s" % (variant, throttled))
                if variant == "playbooks":
                    took += run(inventories, restore, {"domains": names})[0]
                else:
                    took += run(inventories, loop_restore)[0]
                restored = read_quotas(inventories, workdir)
                if restored != unlimited:
                    sys.exit("%s did not give every guest back its quota: %s, was %s" % (variant, restored, unlimited))
                seconds[variant].append(took)
    print("throttle + restore of %d VMs by name on %d hosts (2 over SSH), %d repeats, seconds:"
          % (len(names), len(GUESTS), options.repeat))
    for variant, runs in seconds.items():
        spread = "%.1f..%.1f" % (min(runs), max(runs))
        print("  %-10s median %6.1f  (%s)" % (variant, statistics.median(runs), spread))
    print("  ratio playbooks / loop: %.2f" % (statistics.median(seconds["playbooks"]) / statistics.median(seconds["loop"])))


if __name__ == "__main__":
    main()
