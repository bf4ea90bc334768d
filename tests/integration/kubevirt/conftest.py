"""Fixtures of the tests on the lab's real KubeVirt (`tests/testbed/lab up
kubevirt`; scripts/test brings it up for these tests alone, after the
others, which still use stand-ins for KubeVirt's components)."""

import pytest
from kubernetes import client

from kubevirt_fleet import PREFIX
from real_kubevirt import RealKubeVirt


@pytest.fixture
def kubevirt(lab, kube_admin):
    made = RealKubeVirt(kube_admin, lab)
    yield made
    made.cleanup()


@pytest.fixture
def lab_node_kept(kube_admin, lab):
    """The lab node's name; its annotations and taints as they were are put
    back after the test (a cycle or a plan may store its state on the node,
    or gate it)."""
    core = client.CoreV1Api(kube_admin)
    name = lab["OVERCOMMIT_LAB_NODE"]
    node = core.read_node(name)
    before = dict(node.metadata.annotations or {})
    taints = core.api_client.sanitize_for_serialization(node.spec.taints or [])
    yield name
    after = core.read_node(name).metadata.annotations or {}
    added = dict((key, None) for key in after if key.startswith(PREFIX) and key not in before)
    core.patch_node(name, {"metadata": {"annotations": dict(added, **dict((k, v) for k, v in before.items()
                                                                          if k.startswith(PREFIX)))},
                           "spec": {"taints": taints}})
