# -*- coding: utf-8 -*-
"""The policy as a filter, fed the info modules' shapes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.overcommit.control.plugins.filter.policy import policy_decide

HOST = {"name": "hv-1", "cpus": 8, "pressure": {"cpu": {"some": {"avg10": 60.0, "avg60": 30.0}}}, "procs_running": 12}


def domain(name, used, steal, vcpus):
    # As libvirt_cputune_info returns it, with the host it runs on.
    return {"name": name, "class": "shared", "vcpus": vcpus, "cap_cpus": None, "throttle": None,
            "usage": {"cpus_used": used, "steal_cpus": steal, "sample_seconds": 2.0}, "host": "hv-1"}


def test_info_module_results_go_straight_in():
    vms = [domain("batch-1", 4.4, 3.5, 8)] + [domain("web-%d" % n, 1.1, 0.6, 2) for n in range(1, 4)]
    plan = policy_decide(vms, [HOST], now=1_700_000_000)
    assert [(a["action"], a["vm"]) for a in plan["actions"]] == [("throttle", "batch-1")]
    assert plan["actions"][0]["signals"]["procs_running"] == 12


def test_bad_input_fails_naming_the_field():
    with pytest.raises(AnsibleFilterError) as error:
        policy_decide([dict(domain("a", 1, 0, 2), **{"class": "gold"})], [HOST])
    assert "vms[0].class" in str(error.value)
    with pytest.raises(AnsibleFilterError) as error:
        policy_decide([], [HOST], parameters={"trigger_n": 9})
    assert "policy.trigger_n" in str(error.value)
