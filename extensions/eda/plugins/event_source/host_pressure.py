# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Event-Driven Ansible source: the CPU pressure of the host it runs on,
for rulebooks that run a control cycle when a host is short of CPU."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
short_description: CPU pressure (PSI), load and run queue of the host the rulebook runs on, as events
description:
  - Every O(interval) seconds, reads the host's pressure stall information (C(/proc/pressure/cpu), memory and
    io), load, run queue and CPUs online, as M(overcommit.control.host_pressure_info) reports them, and puts
    one event when the CPU pressure C(some) avg10 is at least O(min_cpu_some_avg10) B(and) its avg60 is at
    least O(min_cpu_some_avg60) (both must be met; leave one at 0 to filter on the other only, both for an
    event every round).
  - 'Each event is C({"host_pressure": {"host", "cpus", "procs_running", "procs_blocked", "load",
    "pressure": {"cpu": {"some": {"avg10", "avg60", "avg300", "total_seconds"}, "full": {...}}, "memory", "io"}}}).'
  - Alerts and events are triggers, not truth; the cycle a rulebook runs measures again before it acts.
  - On a host whose kernel keeps no PSI the source ends with an error that says so.
options:
  interval:
    description: Seconds between rounds.
    type: float
    default: 10
  min_cpu_some_avg10:
    description: CPU pressure C(some) avg10, in percent, at or above which a round puts an event.
    type: float
    default: 0.0
  min_cpu_some_avg60:
    description: CPU pressure C(some) avg60, in percent, at or above which a round puts an event.
    type: float
    default: 0.0
  host:
    description: The value of the event's C(host); the machine's name when not set.
    type: str
  root:
    description: The file system root /proc and /sys are read under, for a rulebook in a container that mounts
      the host's at another path (for example C(/host)).
    type: str
    default: /
  rounds:
    description: Rounds to run before the source ends; 0 runs forever.
    type: int
    default: 0
"""

EXAMPLES = r"""
- overcommit.control.host_pressure:
    interval: 10
    min_cpu_some_avg60: 20

- overcommit.control.host_pressure:
    root: /host
    min_cpu_some_avg10: 40
"""

import asyncio
import socket

import os
import sys

# ansible-rulebook runs a source as a file, without the folder this collection
# is installed in on sys.path; the imports of its module_utils below need it.
COLLECTIONS_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *([os.pardir] * 7)))
if COLLECTIONS_ROOT not in sys.path:
    sys.path.append(COLLECTIONS_ROOT)

from ansible_collections.overcommit.control.plugins.module_utils.common.rounds import put_rounds
from ansible_collections.overcommit.control.plugins.module_utils.host.procfs import ProcFS
from ansible_collections.overcommit.control.plugins.module_utils.host.signals import host_signals


def measure(args):
    """One round: the event, or none when the host is under the thresholds."""
    signals = host_signals(ProcFS(args.get("root", "/")))
    some = signals["pressure"]["cpu"]["some"]
    if some.get("avg10", 0.0) < float(args.get("min_cpu_some_avg10", 0.0)) or \
            some.get("avg60", 0.0) < float(args.get("min_cpu_some_avg60", 0.0)):
        return []
    return [{"host_pressure": {
        "host": args.get("host") or socket.gethostname(), "cpus": signals["cpus"],
        "procs_running": signals["procs_running"], "procs_blocked": signals["procs_blocked"],
        "load": signals["load"], "pressure": signals["pressure"]}}]


async def main(queue, args):
    await put_rounds(queue, args, measure, 10)


if __name__ == "__main__":
    # Quick look from a shell: print one round.
    class PrintQueue:
        async def put(self, event):
            print(event)

    asyncio.run(main(PrintQueue(), {"rounds": 1}))
