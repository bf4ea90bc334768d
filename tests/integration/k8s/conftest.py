"""Fixtures of the Kubernetes module tests: throwaway Node objects with
unique names (deleted afterwards) and a way to run a module as a given lab
identity."""

import uuid

import pytest
from kubernetes import client


RUN_LABEL = "overcommit.test/run"


@pytest.fixture
def make_nodes(kube_admin):
    """make_nodes(count, taints=None, labels=None, unschedulable=False) ->
    names of new Node objects carrying RUN_LABEL=<their run id>."""
    core = client.CoreV1Api(kube_admin)
    created = []

    def make(count, taints=None, labels=None, unschedulable=False):
        run = uuid.uuid4().hex[:8]
        names = []
        for index in range(count):
            name = "oc-it-%s-%d" % (run, index)
            core.create_node({"metadata": {"name": name, "labels": dict(labels or {}, **{RUN_LABEL: run})},
                              "spec": {"taints": taints, "unschedulable": unschedulable or None}})
            created.append(name)
            names.append(name)
        return names

    yield make
    for name in created:
        core.delete_node(name)
