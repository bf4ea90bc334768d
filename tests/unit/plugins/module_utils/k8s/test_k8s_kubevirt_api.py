"""KubeVirt's names as the collection reads them across releases."""

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.k8s.kubevirt_api import dedicated_cpus_offered
from ansible_collections.overcommit.control.plugins.module_utils.k8s.nodes import usage as node_usage


@pytest.mark.parametrize("labels, offered", [
    # KubeVirt v1.8 and later write both labels; the newer one decides.
    ({"kubevirt.io/cpumanager": "true", "cpumanager": "true"}, True),
    ({"kubevirt.io/cpumanager": "false", "cpumanager": "true"}, False),
    # A release that writes only the newer label, and v1.7 and earlier, which write only the old one.
    ({"kubevirt.io/cpumanager": "true"}, True),
    ({"cpumanager": "true"}, True),
    ({"cpumanager": "false"}, False),
    # A node KubeVirt's handler never labelled.
    ({"kubernetes.io/hostname": "worker-07"}, None),
])
def test_dedicated_cpus_are_read_from_either_cpu_manager_label(labels, offered):
    assert dedicated_cpus_offered(labels) is offered


def test_a_node_row_says_whether_the_node_offers_dedicated_cpus():
    node = {"metadata": {"name": "n1", "labels": {"cpumanager": "true"}},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi"}}}
    assert node_usage.node_row(node, [], "overcommit.control/")["dedicated_cpus"] is True
    assert node_usage.node_row({"metadata": {"name": "n2"}}, [], "overcommit.control/")["dedicated_cpus"] is None
