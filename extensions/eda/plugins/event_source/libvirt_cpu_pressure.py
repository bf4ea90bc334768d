# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Event-Driven Ansible source: CPU use and steal of the domains of a libvirt
host, for rulebooks that throttle (or restore) on pressure.

Every `interval` seconds it measures every running domain from two
domain-stats samples `sample_seconds` apart (as libvirt_cputune_info does) and
puts one event per domain using at least `min_cpus` CPUs or seeing at least
`min_steal_cpus` CPUs of steal:

    {"libvirt_cpu": {"uri": ..., "name": ..., "class": ..., "vcpus": ...,
                     "cap_cpus": ..., "throttled": bool, "usage": {"cpus_used": ..., "steal_cpus": ...}}}

Arguments: uri (default qemu:///system), interval (30), sample_seconds (2),
min_cpus (0.0), min_steal_cpus (0.0), class_namespace, rounds (0 = forever).

    sources:
      - overcommit.control.libvirt_cpu_pressure:
          uri: qemu:///system
          min_cpus: 1.5
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import asyncio
import time

from ansible_collections.overcommit.control.plugins.module_utils.libvirt.client import LibvirtClient
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.cputune import describe_domains
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.domain_xml import CLASS_NAMESPACE


def measure(args):
    """One round: the events of every domain over the thresholds."""
    uri = args.get("uri", "qemu:///system")
    client = LibvirtClient(uri)
    try:
        domains = describe_domains(client, [], [], args.get("class_namespace", CLASS_NAMESPACE),
                                   float(args.get("sample_seconds", 2)), time.sleep)
    finally:
        client.close()
    events = []
    for domain in domains:
        usage = domain.get("usage")
        if not usage:
            continue
        if (usage["cpus_used"] >= float(args.get("min_cpus", 0.0))
                and usage["steal_cpus"] >= float(args.get("min_steal_cpus", 0.0))):
            events.append({"libvirt_cpu": {
                "uri": uri, "name": domain["name"], "class": domain["class"], "vcpus": domain["vcpus"],
                "cap_cpus": domain["cap_cpus"], "throttled": domain["throttle"] is not None, "usage": usage}})
    return events


async def main(queue, args):
    rounds = int(args.get("rounds", 0))
    interval = float(args.get("interval", 30))
    loop = asyncio.get_running_loop()
    done = 0
    while not rounds or done < rounds:
        # libvirt calls block: keep them off the rulebook's event loop.
        for event in await loop.run_in_executor(None, measure, args):
            await queue.put(event)
        done += 1
        if not rounds or done < rounds:
            await asyncio.sleep(interval)


if __name__ == "__main__":
    # Quick look from a shell: print one round of events.
    class PrintQueue:
        async def put(self, event):
            print(event)

    asyncio.run(main(PrintQueue(), {"rounds": 1, "sample_seconds": 1}))
