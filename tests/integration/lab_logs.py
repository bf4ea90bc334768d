"""Failing a test on a lab server that does not answer, with the tail of its
log (shared by conftest and the tests that talk to servers themselves), and
running the lab's own script."""

import glob
import os
import subprocess

import pytest

LAB_HOME = os.environ.get("OVERCOMMIT_LAB_HOME", os.path.expanduser("~/.cache/overcommit-lab"))


def fail_with_log(server, error, lab_home=LAB_HOME):
    log_path = os.path.join(lab_home, "logs", server + ".log")
    try:
        with open(log_path, errors="replace") as handle:
            tail = "".join(handle.readlines()[-30:])
    except OSError:
        tail = "(no log at %s)" % log_path
    pytest.fail("%s is not usable: %s\n--- last lines of %s ---\n%s" % (server, error, log_path, tail), pytrace=False)


LAB_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "testbed", "lab")


def lab_command(*args):
    """Runs tests/testbed/lab with `args` (the tests of the lab's own up and
    down); its output, failing the test with it when the script fails."""
    done = subprocess.run([LAB_SCRIPT] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    return done.stdout


def lab_processes(binaries):
    """(pid, binary) of every running process of the lab's binaries named."""
    wanted = dict((os.path.realpath(os.path.join(LAB_HOME, "bin", name)), name) for name in binaries)
    found = []
    for proc in glob.glob("/proc/[0-9]*"):
        try:
            exe = os.path.realpath(os.readlink(os.path.join(proc, "exe")))
        except OSError:
            continue
        if exe in wanted:
            found.append((int(os.path.basename(proc)), wanted[exe]))
    return found
