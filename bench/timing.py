# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How every benchmark here times a variant: one ansible-playbook run on the
lab inventory, from its start to its exit, so the module and the baselines
all pay Ansible's start-up."""

import os
import subprocess
import sys
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INVENTORY = os.path.join(ROOT, "playbooks", "inventories", "lab")


def write_play(workdir, task, hosts="localhost"):
    """A one-task playbook in workdir; returns its path."""
    path = os.path.join(workdir, "play.yml")
    with open(path, "w") as handle:
        yaml.safe_dump([{"hosts": hosts, "gather_facts": False, "tasks": [task]}], handle)
    return path


def timed_playbook(path, env=None):
    """Seconds one ansible-playbook run of `path` took; the benchmark stops
    with its output when it fails. env: variables added to this process's."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1",
               **(env or {}))
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY, path]
    started = time.perf_counter()
    completed = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        sys.exit("%s failed:\n%s\n%s" % (path, completed.stdout[-3000:], completed.stderr[-3000:]))
    return elapsed
