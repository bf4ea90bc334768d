"""Failing a test on a lab server that does not answer, with the tail of its
log (shared by conftest and the tests that talk to servers themselves)."""

import os

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
