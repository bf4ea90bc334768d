"""Waiting for what the lab's servers do in their own time."""

import time


def wait_for(what, predicate, seconds=60, interval=0.5):
    """predicate() until it returns something true (returned); fails saying
    `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "%s: not after %d s" % (what, seconds)
        time.sleep(interval)
