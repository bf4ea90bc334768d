# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Event-Driven Ansible source: CPU use and steal of the domains of a libvirt
host, for rulebooks that throttle (or restore) on pressure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
short_description: CPU use and steal of the domains of a libvirt host, as events
description:
  - Every O(interval) seconds, measures every running domain of the host from two domain-stats samples
    O(sample_seconds) apart (as M(overcommit.control.libvirt_cputune_info) does) and puts one event per
    domain that uses at least O(min_cpus) CPUs B(and) sees at least O(min_steal_cpus) CPUs of steal (both
    thresholds must be met; leave one at 0 to filter on the other only).
  - 'Each event is C({"libvirt_cpu": {"uri", "name", "class", "vcpus", "cap_cpus", "throttled",
    "usage": {"cpus_used", "steal_cpus"}}}).'
  - libvirt calls run off the rulebook's event loop.
options:
  uri:
    description: libvirt connection URI of the hypervisor.
    type: str
    default: qemu:///system
  interval:
    description: Seconds between rounds of measurement.
    type: float
    default: 30
  sample_seconds:
    description: Seconds between the two domain-stats samples of a round.
    type: float
    default: 2
  min_cpus:
    description: CPUs a domain must use for an event.
    type: float
    default: 0.0
  min_steal_cpus:
    description: CPUs of steal a domain must see for an event.
    type: float
    default: 0.0
  class_namespace:
    description: XML namespace of the domain metadata element that declares its class.
    type: str
    default: https://overcommit.control/xmlns/vm/1
  rounds:
    description: Rounds to run before the source ends; 0 runs forever.
    type: int
    default: 0
"""

EXAMPLES = r"""
- overcommit.control.libvirt_cpu_pressure:
    uri: qemu:///system
    interval: 10
    min_cpus: 1.5

- overcommit.control.libvirt_cpu_pressure:
    min_steal_cpus: 0.2
"""

import asyncio
import time

import os
import sys

# ansible-rulebook runs a source as a file, without the folder this collection
# is installed in on sys.path; the imports of its module_utils below need it.
COLLECTIONS_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *([os.pardir] * 7)))
if COLLECTIONS_ROOT not in sys.path:
    sys.path.append(COLLECTIONS_ROOT)

from ansible_collections.overcommit.control.plugins.module_utils.common.rounds import put_rounds
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.client import LibvirtClient
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.reader import describe_domains
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
    await put_rounds(queue, args, measure, 30)


if __name__ == "__main__":
    # Quick look from a shell: print one round.
    class PrintQueue:
        async def put(self, event):
            print(event)

    asyncio.run(main(PrintQueue(), {"rounds": 1, "sample_seconds": 1}))
