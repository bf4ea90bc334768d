"""Fixtures of the tests on the lab's real KubeVirt (`tests/testbed/lab up
kubevirt`; scripts/test brings it up for these tests alone, after the
others, which still use stand-ins for KubeVirt's components)."""

import pytest

from real_kubevirt import RealKubeVirt


def pytest_collection_modifyitems(items):
    # They measure QEMU's CPU on the machine's two cores: one at a time.
    for item in items:
        if "/integration/kubevirt/" in str(item.fspath):
            item.add_marker(pytest.mark.kubevirt)
            item.add_marker(pytest.mark.serial)


@pytest.fixture
def kubevirt(lab, kube_admin):
    made = RealKubeVirt(kube_admin, lab)
    yield made
    made.cleanup()
