# -*- coding: utf-8 -*-
"""domain/observed.py: one record per observed VM, the same whichever
platform read it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import observed

RECORD_KEYS = {"key", "platform", "host", "node", "name", "class", "vcpus", "weight", "usage", "wait", "policy",
               "record", "cap_cpus", "min_cap_cpus", "baseline_cpus", "started_at", "cpus_allowed", "active", "paused",
               "seen", "plan", "unreadable"}


def libvirt_domain(**extra):
    # As libvirt_cputune_info returns it.
    domain = {"name": "web", "active": True, "vcpus": 2, "class": "shared", "cap_cpus": 0.5,
              "live": {"cpu_shares": 512}, "usage": {"cpus_used": 0.3, "steal_cpus": 0.1},
              "throttle": {"plan": "plan-1", "time": "2026-01-05T10:00:00Z", "cpus": 0.5}, "started_at": 100.0}
    domain.update(extra)
    return domain


def kubevirt_vm(**extra):
    # As kubevirt_vm_cpu_info returns it.
    vm = {"name": "tenants/web", "node": "worker-1", "active": True, "vcpus": 2, "class": "shared",
          "cap_cpus": 1.0, "cpu_request": 0.25, "usage_rounds": [{"cpus_used": 0.9, "steal_cpus": 0.1}],
          "throttle": {"plan": "plan-1", "time": "2026-01-05T10:00:00Z"}}
    vm.update(extra)
    return vm


def test_both_platforms_give_the_same_record():
    libvirt = observed.observed_vm("libvirt", "hv-1", libvirt_domain())
    kubevirt = observed.observed_vm("kubevirt", "hv-1", kubevirt_vm(), {"cpus_used": 0.9, "steal_cpus": 0.1})
    assert set(libvirt) == set(kubevirt) == RECORD_KEYS
    assert (libvirt["key"], kubevirt["key"]) == ("hv-1/web", "kubevirt/tenants/web")
    # The weight as the host's scheduler gives it: libvirt's shares, a launcher's request in shares.
    assert (libvirt["weight"], kubevirt["weight"]) == (512, 256.0)
    # Kubernetes refuses a limit under the request: the least cap is the request.
    assert (libvirt["min_cap_cpus"], kubevirt["min_cap_cpus"]) == (None, 0.25)
    assert (libvirt["wait"], kubevirt["wait"]) == (0.25, 0.1)
    # A cap the plan set is the policy's own on both.
    assert libvirt["policy"]["cap"] == 0.5 and kubevirt["policy"]["cap"] == 1.0
    assert libvirt["seen"] == {"cap_cpus": 0.5, "throttle_time": "2026-01-05T10:00:00Z"}
    assert libvirt["plan"] == kubevirt["plan"] == "plan-1"
    assert libvirt["unreadable"] is None


def test_an_unreadable_vm_says_why_and_a_reading_without_a_name_is_refused():
    failed = observed.observed_vm("libvirt", "hv-1", {"name": "db", "failed": True, "msg": "domain is restarting"})
    assert failed["unreadable"] == "domain is restarting" and failed["wait"] is None and failed["policy"] == {}
    with pytest.raises(ValueRangeError) as caught:
        observed.observed_vm("kubevirt", None, {"node": "worker-1"})
    assert "kubevirt VM" in str(caught.value)


def test_the_wait_needs_both_readings_and_some_demand():
    assert observed.wait_ratio({"cpus_used": 0.0, "steal_cpus": 0.0}) is None
    assert observed.wait_ratio({"cpus_used": 0.5}) is None
    assert observed.wait_ratio({"cpus_used": 0.5, "steal_cpus": 0.5}) == 0.5


def test_an_action_is_on_the_platform_and_host_that_read_its_vm():
    on_hv1 = {"vm": "web", "host": "hv-1", "object": "hv-1/web"}
    on_kubevirt = {"vm": "tenants/web", "platform": "kubevirt", "host": "hv-1", "object": "kubevirt/tenants/web"}
    assert observed.acts_on(on_hv1, "libvirt", "hv-1")
    assert not observed.acts_on(on_hv1, "libvirt", "hv-2")
    assert not observed.acts_on(on_hv1, "kubevirt")
    # A KubeVirt VM is one object whichever node runs it.
    assert observed.acts_on(on_kubevirt, "kubevirt") and not observed.acts_on(on_kubevirt, "libvirt", "hv-1")
    assert not observed.acts_on({"node": "worker-1", "object": "node/worker-1"}, "libvirt", "hv-1")
