"""The Event-Driven Ansible source against the lab's real libvirtd: a busy
guest raises a pressure event, idle guests under the threshold do not."""

import asyncio

import pytest

from ansible_collections.overcommit.control.extensions.eda.plugins.event_source import libvirt_cpu_pressure

pytestmark = pytest.mark.xdist_group("libvirt")


class ListQueue:
    def __init__(self):
        self.events = []

    async def put(self, event):
        self.events.append(event)


def test_busy_guest_raises_a_pressure_event_and_idle_guests_do_not(busy_guest):
    queue = ListQueue()
    asyncio.run(libvirt_cpu_pressure.main(queue, {"rounds": 1, "min_cpus": 0.3, "sample_seconds": 2}))
    by_name = dict((event["libvirt_cpu"]["name"], event["libvirt_cpu"]) for event in queue.events)
    assert set(by_name) == {"oc-lab-busy-1"}, by_name
    busy = by_name["oc-lab-busy-1"]
    assert busy["usage"]["cpus_used"] > 0.3 and busy["class"] == "shared" and not busy["throttled"]


def test_rounds_repeat_after_the_interval(libvirt_conn):
    queue = ListQueue()
    asyncio.run(libvirt_cpu_pressure.main(queue, {"rounds": 2, "interval": 0, "sample_seconds": 0.2}))
    names = [event["libvirt_cpu"]["name"] for event in queue.events]
    assert names.count("oc-lab-idle-1") == 2
