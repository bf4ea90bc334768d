"""The summary a closed-loop cycle (playbooks/closed_loop.yml) writes to its
cycle_dir, for the tests that run cycles one at a time, each in a folder of
its own."""

import json
import os


def summary_in(cycle_dir):
    """The one summary in `cycle_dir`, as the cycle wrote it."""
    (name,) = os.listdir(str(cycle_dir))
    with open(os.path.join(str(cycle_dir), name)) as handle:
        return json.load(handle)
