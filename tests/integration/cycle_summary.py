"""The summary a closed-loop cycle (playbooks/closed_loop.yml) writes to its
cycle_dir, for the tests that run cycles each in a folder of their own."""

import json
import os


def summary_in(cycle_dir):
    """The one summary in `cycle_dir`, as the cycle wrote it."""
    (name,) = os.listdir(str(cycle_dir))
    with open(os.path.join(str(cycle_dir), name)) as handle:
        return json.load(handle)


def summaries_in(cycle_dir):
    """Every summary in `cycle_dir`, oldest first (a cycle's file is named by
    its time); none when the folder is not there yet."""
    if not os.path.isdir(str(cycle_dir)):
        return []
    found = []
    for name in sorted(os.listdir(str(cycle_dir))):
        with open(os.path.join(str(cycle_dir), name)) as handle:
            found.append(json.load(handle))
    return found
