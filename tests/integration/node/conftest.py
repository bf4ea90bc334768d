"""Fixtures of the tests on the lab's real node: VMs whose virt-launcher
stand-ins its kubelet runs."""

import pytest

from standin import NodeFleet


@pytest.fixture
def fleet(lab, kube_admin):
    made = NodeFleet(kube_admin, lab)
    yield made
    made.cleanup()
