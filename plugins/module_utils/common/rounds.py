# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The loop of the collection's polling event sources: measure, put the
events, wait, `rounds` times or forever."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import asyncio

# The arguments of a source that put_rounds reads for it.
ARGUMENTS = ("rounds", "interval")


async def put_rounds(queue, args, measure, default_interval):
    """Every `interval` seconds, the events measure(args) returns (a list)
    go on the queue. measure blocks (libvirt calls, file reads): it runs off
    the rulebook's event loop."""
    rounds = int(args.get("rounds", 0))
    interval = float(args.get("interval", default_interval))
    loop = asyncio.get_running_loop()
    done = 0
    while not rounds or done < rounds:
        for event in await loop.run_in_executor(None, measure, args):
            await queue.put(event)
        done += 1
        if not rounds or done < rounds:
            await asyncio.sleep(interval)
