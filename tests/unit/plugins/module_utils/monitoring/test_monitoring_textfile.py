# -*- coding: utf-8 -*-
"""The collection's metrics as node_exporter's textfile collector reads them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.monitoring import textfile

DOMAINS = [
    {"name": "web-17", "class": "shared", "vcpus": 2, "cap_cpus": 0.5,
     "throttle": {"reason": 'INC-4211 "noisy"\nneighbour', "time": "2026-01-05T10:00:00Z", "by": "ops"},
     "usage": {"cpus_used": 0.5, "steal_cpus": 0.7, "sample_seconds": 2.0}},
    {"name": "db-1", "class": "dedicated", "vcpus": 4, "cap_cpus": None, "throttle": None,
     "usage": {"cpus_used": 3.9, "steal_cpus": 0.0, "sample_seconds": 2.0}},
    {"name": "gone", "failed": True, "msg": "domain not found"},
]


def test_every_metric_once_with_help_and_type_and_labels_escaped():
    text = textfile.render(DOMAINS, "hv-1", [{"name": "node-a", "gate": {"reason": "pressure"}}, {"name": "node-b"}])
    lines = text.splitlines()
    for metric in textfile.METRICS:
        assert lines.count("# TYPE %s gauge" % metric) == 1
    assert 'overcommit_vm_cap_cpus{host="hv-1",vm="web-17",class="shared"} 0.5' in lines
    assert 'overcommit_vm_steal_cpus{host="hv-1",vm="db-1",class="dedicated"} 0.0' in lines
    assert 'overcommit_vm_throttled{host="hv-1",vm="web-17",class="shared",reason="INC-4211 \\"noisy\\"\\nneighbour"} 1' \
        in lines
    assert 'overcommit_vm_throttled{host="hv-1",vm="db-1",class="dedicated",reason=""} 0' in lines
    assert 'overcommit_vm_throttle_start_time_seconds{host="hv-1",vm="web-17",class="shared"} 1767607200' in lines
    assert 'overcommit_node_gated{node="node-a"} 1' in lines and 'overcommit_node_gated{node="node-b"} 0' in lines
    # No cap, no cap sample; a failed domain reports nothing; the host's PSI is node_exporter's.
    assert not [line for line in lines if "db-1" in line and line.startswith("overcommit_vm_cap_cpus")]
    assert "gone" not in text and "node_pressure" not in text
    assert text.endswith("\n")


def test_nothing_to_report_is_an_empty_file():
    assert textfile.render([], "hv-1") == ""


@pytest.mark.parametrize("domains, host, field", [
    (DOMAINS, "", "host"),
    ([{"class": "shared"}], "hv-1", "domains[0]"),
    (["web-1"], "hv-1", "domains[0]"),
])
def test_input_that_is_no_info_module_result_is_refused(domains, host, field):
    with pytest.raises(ValueRangeError) as error:
        textfile.render(domains, host)
    assert error.value.field == field
