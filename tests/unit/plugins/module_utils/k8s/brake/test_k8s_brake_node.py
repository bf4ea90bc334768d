# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's answer to a resize of a launcher pod (its container status and
resize conditions, as a kubelet 1.33+ reports them), and the runner's wait
for it, with a client double whose pod the "node" changes between reads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import state as limit_state
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import request as brake
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.runner import CpuLimitRunner
from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import K8sClientError

PREFIX = "overcommit.control/"


def pod(spec_limit="600m", running=None, reported=True, conditions=(), generation=2, observed=2):
    """A launcher pod whose compute container's spec asks for `spec_limit`
    and whose node reports it runs with `running`."""
    status = {"phase": "Running", "conditions": [dict(c, status="True") for c in conditions]}
    if observed is not None:
        status["observedGeneration"] = observed
    container = {"name": "compute", "state": {"running": {}}}
    if reported:
        container["resources"] = {"requests": {"cpu": "100m"}}
        if running is not None:
            container["resources"]["limits"] = {"cpu": running}
    status["containerStatuses"] = [{"name": "guest-console-log", "resources": {"limits": {"cpu": spec_limit}}},
                                   container]
    limits = {"cpu": spec_limit} if spec_limit else {}
    return {"metadata": {"name": "virt-launcher-web-1-x", "namespace": "lab", "uid": "pod-uid", "generation": generation},
            "spec": {"containers": [{"name": "compute", "resources": {"requests": {"cpu": "100m"}, "limits": limits}}]},
            "status": status}


def test_the_node_has_applied_the_limit_when_the_container_runs_with_it():
    answer = limit_state.node_answer(pod("600m", running="0.6"))
    assert answer == {"status": "applied", "cpu_limit": "0.6", "reason": None, "message": None}
    assert limit_state.node_answer(pod(None, running=None))["status"] == "applied"


def test_a_resize_the_node_has_not_applied_yet_is_pending_saying_why():
    runs_old = limit_state.node_answer(pod("600m", running="2"))
    assert runs_old["status"] == "pending" and runs_old["cpu_limit"] == "2"
    assert runs_old["message"] == "the container runs with a CPU limit of 2, not 600m"
    unseen = limit_state.node_answer(pod("600m", running="600m", generation=3, observed=2))
    assert unseen["status"] == "pending" and unseen["message"] == "the node has not seen the pod's generation 3 yet"
    deferred = limit_state.node_answer(pod("600m", running="2", conditions=[
        {"type": "PodResizePending", "reason": "Deferred", "message": "Node didn't have enough resource: cpu"}]))
    assert deferred == {"status": "pending", "cpu_limit": "2", "reason": "Deferred",
                        "message": "Node didn't have enough resource: cpu"}
    assert limit_state.node_text(deferred) == "pending: Deferred: Node didn't have enough resource: cpu"
    in_progress = limit_state.node_answer(pod("600m", running="600m", conditions=[
        {"type": "PodResizeInProgress", "reason": "Error", "message": "could not update cpu.cfs_quota_us"}]))
    assert in_progress["status"] == "pending" and in_progress["reason"] == "Error", in_progress


def test_an_infeasible_resize_is_refused_and_an_unreported_one_says_so():
    refused = limit_state.node_answer(pod("600m", running="2", conditions=[
        {"type": "PodResizePending", "reason": "Infeasible", "message": "Node didn't have enough capacity: cpu"}]))
    assert refused["status"] == "refused" and limit_state.node_said(refused) == \
        "Infeasible: Node didn't have enough capacity: cpu"
    unreported = limit_state.node_answer(pod("600m", reported=False, observed=None))
    assert unreported["status"] == "not reported" and unreported["cpu_limit"] is None
    # A condition that is not True says nothing.
    false = pod("600m", running="600m", conditions=[{"type": "PodResizePending", "reason": "Infeasible"}])
    false["status"]["conditions"][0]["status"] = "False"
    assert limit_state.node_answer(false)["status"] == "applied"


def test_wait_timeout_is_checked_naming_the_field():
    base = {"state": "throttled", "names": ["web-1"], "namespace": "lab", "label_selector": None, "cpus": "1",
            "headroom": 1.0, "floor": 0.25, "force": False, "prefix": PREFIX, "wait": True}
    assert brake.check_request(dict(base, wait_timeout=30))["wait_timeout"] == 30
    for bad in (0, -5, 3601, None):
        with pytest.raises(ValueRangeError) as error:
            brake.check_request(dict(base, wait_timeout=bad))
        assert error.value.field == "wait_timeout"


class NodeDouble(object):
    """The API as the runner's wait sees it: each list of the launcher pods
    returns the next of `answers` (the last one from then on), each a pod or
    a list of pods; Events are recorded."""

    def __init__(self, answers, dry_run=False, fail_get=False):
        self.answers = list(answers)
        self.dry_run = dry_run
        self.fail_get = fail_get
        self.gets, self.events = 0, []

    def list(self, path, label_selector=None):
        self.gets += 1
        if self.fail_get:
            raise K8sClientError("GET %s: connection refused" % path)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return answer if isinstance(answer, list) else [answer]

    def create(self, path, body):
        self.events.append((body["type"], body["reason"], body["note"]))


class Clock(object):
    def __init__(self):
        self.now = 0.0

    def sleep(self, seconds):
        self.now += seconds

    def monotonic(self):
        return self.now


def runner(client, wait=True, wait_timeout=10):
    request = brake.check_request({"state": "throttled", "names": ["web-1"], "namespace": "lab",
                                   "label_selector": None, "cpus": "600m", "headroom": 1.0, "floor": 0.25,
                                   "force": False, "prefix": PREFIX, "wait": wait, "wait_timeout": wait_timeout})
    clock = Clock()
    made = CpuLimitRunner(client, request, {}, lambda: ("2026-01-05T10:00:00Z", "2026-01-05T10:00:00.000000Z"),
                          "controller-1", sleep=clock.sleep, monotonic=clock.monotonic)
    view = {"kind": "VirtualMachineInstance", "namespace": "lab", "vmi": "web-1", "uid": "vmi-uid",
            "name": "lab/web-1"}
    result = {"name": "lab/web-1", "changed": True}
    return made, clock, view, result


def test_wait_asks_the_node_again_until_it_applied_the_limit():
    client = NodeDouble([pod("600m", running="2"), pod("600m", running="600m")])
    made, clock, view, result = runner(client)
    made.asked.append((result, view, pod("600m", running="2", generation=3, observed=2)))
    made.ask_nodes("lab")
    assert result["node"]["status"] == "applied" and not result.get("failed"), result
    assert client.gets == 2 and clock.now == 2.0 and client.events == []


def test_without_wait_the_answer_is_the_node_s_at_the_end_of_the_task():
    client = NodeDouble([pod("600m", running="600m")])
    made, clock, view, result = runner(client, wait=False)
    made.asked.append((result, view, pod("600m", running="2", generation=3, observed=2)))
    made.ask_nodes("lab")
    assert result["node"]["status"] == "pending" and not result.get("failed"), result
    assert client.gets == 0 and clock.now == 0.0


def test_a_refusal_fails_the_vm_with_a_warning_event_and_ends_its_wait():
    infeasible = pod("600m", running="2", conditions=[
        {"type": "PodResizePending", "reason": "Infeasible", "message": "Node didn't have enough capacity: cpu"}])
    client = NodeDouble([infeasible])
    made, clock, view, result = runner(client)
    made.asked.append((result, view, pod("600m", running="2", generation=3, observed=2)))
    made.ask_nodes("lab")
    assert result["failed"] and result["node"]["status"] == "refused", result
    assert result["msg"] == ("the node of pod virt-launcher-web-1-x refused the compute CPU resources: "
                             "Infeasible: Node didn't have enough capacity: cpu")
    assert result["resize_pending"] == {"reason": "Infeasible", "message": "Node didn't have enough capacity: cpu"}
    assert client.events == [("Warning", "CPULimitFailed", result["msg"])]
    assert client.gets == 1


def test_a_wait_that_runs_out_fails_the_vm_saying_what_the_node_said_last():
    deferred = pod("600m", running="2", conditions=[
        {"type": "PodResizePending", "reason": "Deferred", "message": "Node didn't have enough resource: cpu"}])
    client = NodeDouble([deferred])
    made, clock, view, result = runner(client, wait_timeout=5)
    made.asked.append((result, view, deferred))
    made.ask_nodes("lab")
    assert result["failed"] and clock.now == 5.0, result
    assert result["msg"] == ("the node of pod virt-launcher-web-1-x has not applied the compute CPU resources after 5s "
                             "(pending: Deferred: Node didn't have enough resource: cpu)")
    assert client.events[-1][:2] == ("Warning", "CPULimitFailed")


def test_a_pod_that_cannot_be_read_while_waiting_fails_that_vm_only():
    client = NodeDouble([pod("600m", running="2")], fail_get=True)
    made, clock, view, result = runner(client)
    other = {"name": "lab/web-2", "changed": True}
    made.asked.append((result, view, pod("600m", running="2")))
    made.asked.append((other, dict(view, vmi="web-2", name="lab/web-2"), pod("600m", running="600m")))
    made.ask_nodes("lab")
    assert result["failed"] and "while waiting for its node: GET" in result["msg"], result
    assert other["node"]["status"] == "applied" and not other.get("failed")


def test_a_wait_for_many_vms_lists_their_pods_once_a_round_and_a_pod_gone_fails_its_vm():
    named = [dict(pod("600m", running="2"), metadata=dict(pod()["metadata"], name="virt-launcher-web-%d-x" % index))
             for index in range(3)]
    applied = [dict(item, status=pod("600m", running="600m")["status"]) for item in named[:2]]
    client = NodeDouble([named, applied])
    made, clock, view, _result = runner(client)
    results = []
    for index, launcher in enumerate(named):
        results.append({"name": "lab/web-%d" % index, "changed": True})
        made.asked.append((results[-1], dict(view, vmi="web-%d" % index, name="lab/web-%d" % index), launcher))
    made.ask_nodes("lab")
    # Round one: all three still pending; round two: two applied, the third pod gone.
    assert client.gets == 2 and clock.now == 2.0
    assert [r["node"]["status"] for r in results[:2]] == ["applied", "applied"]
    assert not any(r.get("failed") for r in results[:2])
    assert results[2]["failed"] and results[2]["msg"] == "launcher pod virt-launcher-web-2-x is gone while waiting for its node"


def test_check_mode_asks_no_node():
    client = NodeDouble([pod("600m", running="2")], dry_run=True)
    made, clock, view, result = runner(client)
    made.asked.append((result, view, pod("600m", running="2")))
    made.ask_nodes("lab")
    assert "node" not in result and client.gets == 0
