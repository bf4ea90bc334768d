"""Runs one module of the collection for real, as a one-task playbook with
ansible-playbook against the lab inventory, and returns its result.
ansible-playbook starts from a fork server (playbook_forkserver) and is
bounded in time."""

import json
import os
import subprocess
import sys
import tempfile

import yaml

import playbook_forkserver

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INVENTORY = os.path.join(ROOT, "playbooks", "inventories", "lab")


def run_module(module, args, host="localhost", check=False, diff=False, env=None, inventory=INVENTORY):
    """The module's result dict for `host` (a failed task returns its result
    too: look at result["failed"])."""
    name = module if "." in module else "overcommit.control." + module
    return run_task({"name": "run", name: args}, host, check, diff, env, inventory)


def run_role(role, variables, entry_point="main", host="localhost", check=False, env=None):
    """The result of the first task of one of the collection's roles,
    imported with `variables` as role variables: the check of the entry
    point's argument spec (a failed check returns its result)."""
    task = {"name": "run", "ansible.builtin.import_role": {"name": "overcommit.control." + role},
            "vars": variables}
    if entry_point != "main":
        task["ansible.builtin.import_role"]["tasks_from"] = entry_point
    return run_task(task, host, check=check, env=env)


def inventory_options(inventory):
    """-i for the inventory, or for each of a list of them (the lab's and
    its fleet's, which together make one inventory)."""
    return [option for path in ([inventory] if isinstance(inventory, str) else inventory) for option in ("-i", path)]


def run_task(task, host="localhost", check=False, diff=False, env=None, inventory=INVENTORY):
    """The result of the first task of a one-play playbook running `task` on `host` of `inventory`."""
    play = [{"hosts": host, "gather_facts": False, "tasks": [task]}]
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as handle:
        yaml.safe_dump(play, handle)
        playbook = handle.name
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook")] + inventory_options(inventory) + [playbook]
    if check:
        command.append("--check")
    if diff:
        command.append("--diff")
    run_env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_NOCOLOR="1",
                   ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"))
    run_env.update(env or {})
    try:
        completed = playbook_forkserver.run(command, env=run_env)
    finally:
        os.unlink(playbook)
    try:
        output = json.loads(completed.stdout)
        return output["plays"][0]["tasks"][0]["hosts"][host]
    except (ValueError, KeyError, IndexError):
        raise AssertionError("ansible-playbook gave no result (rc %d):\n%s\n%s" % (
            completed.returncode, completed.stdout[-3000:], completed.stderr[-3000:]))


def _playbook_command(playbook, extra_vars, env, inventory, options):
    """The command line and environment of one of the collection's playbooks,
    as an operator runs it (default output, no -v)."""
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook")] + inventory_options(inventory) + [
        os.path.join(ROOT, "playbooks", playbook), "-e", json.dumps(extra_vars)] + list(options)
    run_env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1")
    run_env.update(env or {})
    return command, run_env


def run_playbook(playbook, extra_vars, env=None, timeout=playbook_forkserver.DEFAULT_TIMEOUT, inventory=INVENTORY,
                 options=()):
    """ansible-playbook of one of the collection's playbooks on the lab
    inventory (or `inventory`), with its command-line `options` (--check,
    --diff); waits for it."""
    command, run_env = _playbook_command(playbook, extra_vars, env, inventory, options)
    return playbook_forkserver.run(command, env=run_env, timeout=timeout)


def start_playbook(playbook, extra_vars, env=None, inventory=INVENTORY):
    """The same as run_playbook, started and not waited for (several at
    once, as rulebooks start cycles): a Popen whose stdout holds the output."""
    command, run_env = _playbook_command(playbook, extra_vars, env, inventory, ())
    return subprocess.Popen(command, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True)
