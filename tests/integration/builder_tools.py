"""What the execution and decision environment tests share: the versions
requirements.txt pins, and the venv's tools run in a folder."""

import os
import subprocess
import sys

from run_module import ROOT

BIN = os.path.dirname(sys.executable)


def run(command, cwd, **env):
    """(exit code, stdout + stderr) of a tool of the venv, run in `cwd`."""
    environment = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), ANSIBLE_NOCOLOR="1")
    environment.update(env)
    completed = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True,
                               timeout=300, check=False)
    return completed.returncode, completed.stdout + completed.stderr


def pins():
    """Package name -> version pinned in requirements.txt."""
    pinned = {}
    with open(os.path.join(ROOT, "requirements.txt")) as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if "==" in line:
                name, version = line.split("==", 1)
                pinned[name.strip().lower()] = version.strip()
    return pinned
