"""Fixtures of the tests on the lab's hypervisor VMs (`tests/testbed/lab up
fleet`): Debian 12 hosts with cgroup v2, reached over SSH as users reach
their hypervisors. scripts/test brings the fleet up for these tests alone,
after the others, and takes it down after them."""

import pytest

from fleet_hosts import FleetHost


@pytest.fixture
def v2_host(lab):
    """The fleet's first hypervisor VM (cgroup v2); the busy guests the test
    starts are shut off afterwards, their persistent tuning reset."""
    host = FleetHost(lab, "oc-lab-hv-1")
    yield host
    host.reset_guests()
