import json

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import request as brake
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import state as limit_state
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import plan as limit_plan
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.usage import running_since

PREFIX = "overcommit.control/"
FIELDS = {"reason": "INC-1", "by": "ops", "time": "2026-01-05T10:00:00Z"}


def request(**params):
    base = {"state": "throttled", "names": ["web-1"], "namespace": "lab", "label_selector": None, "cpus": "1",
            "headroom": 1.0, "floor": 0.25, "force": False, "prefix": PREFIX}
    base.update(params)
    return brake.check_request(base)


def vmi(cores=4, annotations=None, labels=None, phase="Running", pods=("pod-uid-1",), dedicated=False, **cpu):
    spec_cpu = dict(cpu, cores=cores)
    if dedicated:
        spec_cpu["dedicatedCpuPlacement"] = True
    return {"metadata": {"name": "web-1", "namespace": "lab", "uid": "vmi-uid", "resourceVersion": "7",
                         "annotations": annotations or {}, "labels": labels or {}},
            "spec": {"domain": {"cpu": spec_cpu}},
            "status": {"phase": phase, "nodeName": "node-a", "activePods": dict((p, "node-a") for p in pods)}}


def pod(uid="pod-uid-1", requests=None, limits=None, phase="Running", node="node-a", qos=None, others=()):
    resources = {"requests": requests if requests is not None else {"cpu": "400m", "memory": "1Gi"}}
    if limits:
        resources["limits"] = limits
    status = {"phase": phase}
    if qos:
        status["qosClass"] = qos
    return {"metadata": {"name": "virt-launcher-web-1-" + uid[-1], "uid": uid, "resourceVersion": "3"},
            "spec": {"nodeName": node, "containers": [{"name": "compute", "resources": resources}] + list(others)},
            "status": status}


def virtual_machine(annotations=None, labels=None):
    """A VirtualMachine's metadata, as a metadata-only list returns it."""
    return {"metadata": {"name": "web-1", "namespace": "lab", "uid": "vm-uid", "resourceVersion": "5",
                         "annotations": annotations or {}, "labels": labels or {}}}


def view(obj, req=None):
    return limit_state.vmi_view(obj, (req or request())["keys"])


def test_options_are_checked_naming_the_field():
    for params, field in (({"cpus": "2 cpus"}, "cpus"), ({"cpus": "0.0001"}, "cpus"), ({"cpus": None}, "cpus"),
                          ({"state": "restored", "cpus": "1"}, "cpus"), ({"headroom": -0.5}, "headroom"),
                          ({"floor": 1.5}, "floor"), ({"prefix": "no-slash"}, "prefix"),
                          ({"names": [], "label_selector": None}, "names"), ({"namespace": None}, "namespace")):
        with pytest.raises(ValueRangeError) as error:
            request(**params)
        assert error.value.field == field, params
    assert request(cpus="1500m")["cpus"] == 1.5
    assert request(state="reconciled", names=[], cpus=None)["cpus"] is None


def test_qos_class_follows_kubernetes_rules():
    assert limit_state.qos_class({"containers": [{"name": "c"}]}) == limit_state.BEST_EFFORT
    assert limit_state.qos_class({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                                                                "requests": {"cpu": "1", "memory": "1Gi"}}}]}) == \
        limit_state.GUARANTEED
    # Every container needs both limits; requests must equal them in sum.
    assert limit_state.qos_class({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
                                                 {"resources": {"limits": {"cpu": "1"}}}]}) == limit_state.BURSTABLE
    assert limit_state.qos_class({"containers": [{"resources": {"limits": {"cpu": "2", "memory": "1Gi"},
                                                                "requests": {"cpu": "1", "memory": "1Gi"}}}]}) == \
        limit_state.BURSTABLE
    # Other resources do not count; pod-level resources win over containers.
    assert limit_state.qos_class({"containers": [{"resources": {"requests": {"ephemeral-storage": "1Gi"}}}]}) == \
        limit_state.BEST_EFFORT
    assert limit_state.qos_class({"resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                                                "requests": {"cpu": "1", "memory": "1Gi"}},
                                 "containers": [{"resources": {"requests": {"cpu": "100m"}}}]}) == limit_state.GUARANTEED


def test_the_running_launcher_on_the_vmis_node_is_chosen():
    source = pod(uid="pod-uid-1", node="node-a")
    target = pod(uid="pod-uid-2", node="node-b")
    old = pod(uid="pod-uid-0")
    migrating = view(vmi(pods=("pod-uid-1", "pod-uid-2")))
    assert limit_state.launcher_pod(migrating, [target, old, source]) is source
    with pytest.raises(limit_state.LimitRefusal, match="no running virt-launcher pod"):
        limit_state.launcher_pod(view(vmi()), [pod(phase="Pending")])
    with pytest.raises(limit_state.LimitRefusal, match="the VMI is Scheduling, not Running"):
        limit_state.launcher_pod(view(vmi(phase="Scheduling")), [source])
    with pytest.raises(limit_state.LimitRefusal, match="has no compute container"):
        broken = pod()
        broken["spec"]["containers"][0]["name"] = "other"
        limit_state.launcher_pod(view(vmi()), [broken])


def test_throttle_plan_records_the_previous_limit_once():
    req = request(cpus="2")
    current = view(vmi())
    launcher = pod(limits={"cpu": "4"})
    assert limit_plan.target(current, launcher, req) == (2.0, None, "throttle")
    desire = limit_plan.desire_patch(current, launcher, 2.0, req, FIELDS)["metadata"]["annotations"]
    assert desire[PREFIX + "cpu-limit"] == "2"
    assert json.loads(desire[PREFIX + "cpu-limit-throttle"]) == dict(FIELDS, previous="4", schema=1)
    assert limit_plan.resize_patch(launcher, 2.0) == {
        "spec": {"containers": [{"name": "compute", "resources": {"limits": {"cpu": "2"}}}]}}

    throttled = view(vmi(annotations={PREFIX + "cpu-limit": "2", PREFIX + "cpu-limit-throttle": json.dumps(
        dict(FIELDS, previous="4"))}))
    tighter = limit_plan.desire_patch(throttled, pod(limits={"cpu": "2"}), 1.0, request(cpus="1", reason="later"),
                                      dict(FIELDS, reason="later"))["metadata"]["annotations"]
    assert json.loads(tighter[PREFIX + "cpu-limit-throttle"])["previous"] == "4"
    assert limit_plan.desire_patch(throttled, pod(limits={"cpu": "2"}), 2.0, req, FIELDS) is None
    assert limit_plan.resize_patch(pod(limits={"cpu": "2000m"}), 2.0) is None


def test_applied_record_is_rewritten_only_for_a_new_value_or_pod():
    req = request()
    launcher = pod(limits={"cpu": "1"})
    applied = {"cpus": "1", "pod": "virt-launcher-web-1-1", "podUID": "pod-uid-1", "time": "t0"}
    current = view(vmi(annotations={PREFIX + "cpu-limit-applied": json.dumps(applied)}))
    assert limit_plan.applied_patch(current, launcher, 1.0, req, "t1") is None
    moved = limit_plan.applied_patch(current, pod(uid="pod-uid-2", limits={"cpu": "1"}), 1.0, req, "t1")
    assert json.loads(moved["metadata"]["annotations"][PREFIX + "cpu-limit-applied"])["podUID"] == "pod-uid-2"


def test_refusals_name_their_reason():
    req = request(cpus="1")
    with pytest.raises(limit_state.LimitRefusal, match="dedicated CPUs"):
        limit_plan.target(view(vmi(dedicated=True)), pod(), request(cpus="1", force=True))
    with pytest.raises(limit_state.LimitRefusal, match="its class is dedicated"):
        limit_plan.target(view(vmi(labels={PREFIX + "class": "dedicated"})), pod(), req)
    with pytest.raises(limit_state.LimitRefusal, match="its class is dedicated"):
        limit_plan.target(limit_state.vmi_view(vmi(), req["keys"], virtual_machine(labels={PREFIX + "class": "dedicated"})),
                          pod(), req)
    with pytest.raises(limit_state.LimitRefusal, match="realtime"):
        limit_plan.target(view(vmi(realtime={})), pod(), req)
    with pytest.raises(limit_state.LimitRefusal, match="under the shared floor of 2 CPUs"):
        limit_plan.target(view(vmi(cores=8)), pod(), req)
    assert limit_plan.target(view(vmi(cores=8)), pod(), request(cpus="1", force=True))[0] == 1.0
    with pytest.raises(limit_state.LimitRefusal, match="from Guaranteed to Burstable"):
        guaranteed = pod(requests={"cpu": "2", "memory": "1Gi"}, limits={"cpu": "2", "memory": "1Gi"})
        limit_plan.target(view(vmi(cores=2)), guaranteed, req)
    with pytest.raises(limit_state.LimitRefusal, match="CPU request of 3"):
        limit_plan.target(view(vmi()), pod(requests={"cpu": "3"}), req)
    with pytest.raises(limit_state.LimitRefusal, match="no running virt-launcher pod"):
        limit_plan.target(view(vmi()), None, req)


def test_a_cap_at_or_above_the_vcpus_is_refused_even_when_forced():
    for cores, cpus in ((1, "1000"), (1, "1"), (4, "4"), (4, "4500m"), (2, "500")):
        for force in (False, True):
            with pytest.raises(ValueRangeError) as error:
                limit_plan.target(view(vmi(cores=cores)), pod(), request(cpus=cpus, force=force))
            assert error.value.field == "cpus" and error.value.value == cpus
            assert "VM's %d vCPU" % cores in str(error.value) and "caps nothing" in str(error.value)
    assert limit_plan.target(view(vmi(cores=4)), pod(), request(cpus="3999m")) == (3.999, None, "throttle")
    # Only a throttle is checked: restore raises the limit to the vCPUs plus headroom on purpose.
    limited = pod(limits={"cpu": "1"})
    assert limit_plan.target(view(vmi(cores=1, annotations={PREFIX + "cpu-limit": "1"})), limited,
                             request(state="restored", cpus=None))[2] == "restore"


def test_a_forced_cap_stays_forced_for_the_reconcile():
    record = json.dumps(dict(FIELDS, previous=None, forced=True))
    forced = view(vmi(cores=8, annotations={PREFIX + "cpu-limit": "1", PREFIX + "cpu-limit-throttle": record}))
    assert limit_plan.target(forced, pod(), request(state="reconciled", cpus=None)) == (1.0, None, "reconcile")
    unforced = view(vmi(cores=8, annotations={PREFIX + "cpu-limit": "1"}))
    with pytest.raises(limit_state.LimitRefusal, match="floor"):
        limit_plan.target(unforced, pod(), request(state="reconciled", cpus=None))
    with pytest.raises(limit_state.LimitRefusal, match="not a CPU quantity"):
        unreadable = view(vmi(annotations={PREFIX + "cpu-limit": "lots"}))
        limit_plan.target(unreadable, pod(), request(state="reconciled", cpus=None))
    assert limit_plan.target(view(vmi()), pod(), request(state="reconciled", cpus=None)) == (None, None, None)


def test_restore_returns_the_recorded_limit_or_raises_to_vcpus_plus_headroom():
    req = request(state="restored", cpus=None, headroom=0.5)
    with_previous = view(vmi(annotations={PREFIX + "cpu-limit": "1", PREFIX + "cpu-limit-throttle": json.dumps(
        dict(FIELDS, previous="3"))}))
    assert limit_plan.target(with_previous, pod(limits={"cpu": "1"}), req) == (3.0, None, "restore")
    without = view(vmi(cores=2, annotations={PREFIX + "cpu-limit": "1", PREFIX + "cpu-limit-throttle": json.dumps(
        dict(FIELDS, previous=None))}))
    assert limit_plan.target(without, pod(limits={"cpu": "1"}), req) == (2.5, None, "restore")
    # Never lowered, and nothing to lift on a pod without a limit or without a pod.
    assert limit_plan.target(without, pod(limits={"cpu": "6"}), req) == (None, None, "restore")
    assert limit_plan.target(without, pod(), req) == (None, None, "restore")
    assert limit_plan.target(without, None, req) == (None, None, "restore")
    assert limit_plan.target(view(vmi()), pod(limits={"cpu": "1"}), req) == (None, None, None)
    cleared = limit_plan.applied_patch(without, pod(limits={"cpu": "1"}), 2.5, req, "t1", restore=True)
    annotations = cleared["metadata"]["annotations"]
    assert annotations[PREFIX + "cpu-limit"] is None and annotations[PREFIX + "cpu-limit-throttle"] is None
    assert json.loads(annotations[PREFIX + "cpu-limit-applied"])["cpus"] == "2500m"


def test_after_view_and_event_body():
    req = request(cpus="1")
    current = view(vmi())
    launcher = pod()
    before = brake.state_view(current, launcher)
    desire = limit_plan.desire_patch(current, launcher, 1.0, req, FIELDS)
    applied = limit_plan.applied_patch(current, launcher, 1.0, req, "t1")
    after = brake.after_view(before, current, launcher, 1.0, req, desire, applied)
    assert before["compute_cpu_limit"] is None and after["compute_cpu_limit"] == "1"
    assert after["desired"] == "1" and after["applied"]["pod"] == launcher["metadata"]["name"]
    assert after["throttle"]["previous"] is None
    body = brake.event(current, launcher, "Warning", "CPULimitFailed", "Throttle", "x" * 2000, "t", "h" * 200, "ab")
    assert body["metadata"]["name"] == "web-1.ab" and len(body["note"]) == brake.NOTE_LIMIT
    assert len(body["reportingInstance"]) == 128
    assert body["regarding"]["kind"] == "VirtualMachineInstance" and body["related"]["kind"] == "Pod"


def test_the_owning_virtual_machine_is_the_controller_owner():
    owned = vmi()
    owned["metadata"]["ownerReferences"] = [
        {"kind": "Other", "name": "x", "controller": True},
        {"kind": "VirtualMachine", "name": "web-1", "controller": True}]
    assert limit_state.owning_vm(owned) == "web-1"
    assert limit_state.owning_vm(vmi()) is None
    owned["metadata"]["ownerReferences"][1]["controller"] = False
    assert limit_state.owning_vm(owned) is None


def test_a_restart_reconciles_the_cap_the_virtual_machine_kept():
    """A restart makes a new VMI without annotations; its VM still has the
    cap and the record of the limit before the first throttle."""
    record = json.dumps(dict(FIELDS, previous="4"), sort_keys=True)
    kept = virtual_machine(annotations={PREFIX + "cpu-limit": "1500m", PREFIX + "cpu-limit-throttle": record})
    req = request(state="reconciled", cpus=None)
    restarted = limit_state.vmi_view(vmi(), req["keys"], kept)
    launcher = pod(limits={"cpu": "4"})
    assert limit_plan.target(restarted, launcher, req) == (1.5, None, "reconcile")
    desire = limit_plan.desire_patch(restarted, launcher, 1.5, req, dict(FIELDS, reason="ignored"))
    # The VM's record is carried over as it is: the limit before the first throttle, why, who.
    assert desire == {"metadata": {"annotations": {PREFIX + "cpu-limit": "1500m",
                                                   PREFIX + "cpu-limit-throttle": record}}}
    # What the VMI then says is what the VM keeps already: nothing to write there.
    assert limit_plan.vm_patch(restarted["vm"], req, "1500m", record) is None
    # Without a VM (or a VM without a cap) there is nothing to reconcile.
    assert limit_plan.target(limit_state.vmi_view(vmi(), req["keys"], virtual_machine()), launcher, req) == (None, None, None)
    # A VMI that had the cap and lost its desired annotation by hand does not take it back from the VM.
    lifted = limit_state.vmi_view(vmi(annotations={PREFIX + "cpu-limit-throttle": record}), req["keys"], kept)
    assert limit_plan.target(lifted, launcher, req) == (None, None, None)
    assert limit_state.stale_vm_copy(lifted) and not limit_state.stale_vm_copy(restarted)
    assert limit_plan.vm_patch(lifted["vm"], req, None, lifted["vm"]["record_text"]) == {
        "metadata": {"annotations": {PREFIX + "cpu-limit": None}}}
    # A forced cap stays forced across the restart.
    forced = virtual_machine(annotations={PREFIX + "cpu-limit": "1", PREFIX + "cpu-limit-throttle": json.dumps(
        dict(FIELDS, previous=None, forced=True))})
    assert limit_plan.target(limit_state.vmi_view(vmi(cores=8), req["keys"], forced), pod(), req) == (1.0, None, "reconcile")


def test_a_throttle_keeps_a_copy_on_the_virtual_machine_and_restore_clears_it():
    req = request(cpus="2")
    current = limit_state.vmi_view(vmi(), req["keys"], virtual_machine())
    launcher = pod(limits={"cpu": "4"})
    desire = limit_plan.desire_patch(current, launcher, 2.0, req, FIELDS)
    written = desire["metadata"]["annotations"]
    desired, record_text = written[PREFIX + "cpu-limit"], written[PREFIX + "cpu-limit-throttle"]
    assert desired == "2" and json.loads(record_text)["previous"] == "4"
    assert limit_plan.vm_patch(current["vm"], req, desired, record_text) == {
        "metadata": {"annotations": {PREFIX + "cpu-limit": "2", PREFIX + "cpu-limit-throttle": record_text}}}
    # The same cap in another spelling, the same record in another key order: nothing to write.
    same = virtual_machine(annotations={PREFIX + "cpu-limit": "2000m", PREFIX + "cpu-limit-throttle": json.dumps(
        json.loads(record_text), sort_keys=False, indent=1)})
    assert limit_plan.vm_patch(limit_state.vm_view(same, req["keys"]), req, desired, record_text) is None
    # A later throttle of a restarted VMI keeps the limit from before the first throttle.
    restarted = limit_state.vmi_view(vmi(), req["keys"], same)
    later = limit_plan.desire_patch(restarted, pod(limits={"cpu": "4"}), 1.0, request(cpus="1"), FIELDS)
    assert json.loads(later["metadata"]["annotations"][PREFIX + "cpu-limit-throttle"])["previous"] == "4"

    restore = request(state="restored", cpus=None)
    restarted = limit_state.vmi_view(vmi(), restore["keys"], same)
    # The VM's record says the limit before the first throttle: restore sets it back.
    assert limit_plan.target(restarted, pod(limits={"cpu": "2"}), restore) == (4.0, None, "restore")
    assert limit_plan.vm_patch(restarted["vm"], restore, None, None) == {
        "metadata": {"annotations": {PREFIX + "cpu-limit": None, PREFIX + "cpu-limit-throttle": None}}}
    assert limit_plan.vm_patch(limit_state.vm_view(virtual_machine(), restore["keys"]), restore, None, None) is None


def test_a_stopped_virtual_machine_is_named_in_results_and_events():
    req = request(state="restored", cpus=None)
    stopped = limit_state.stopped_vm_view(virtual_machine(annotations={PREFIX + "cpu-limit": "1"}), req["keys"])
    assert stopped["name"] == "lab/web-1" and stopped["desired"] == "1" and stopped["vm"]["name"] == "web-1"
    body = brake.event(stopped, None, "Normal", "CPULimitRestored", "Restore", "lifted", "t", "h", "ab")
    assert body["regarding"] == {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "namespace": "lab",
                                 "name": "web-1", "uid": "vm-uid"}
    assert "related" not in body


def test_report_lines_give_the_limit_in_force_and_what_it_replaced():
    def result(before, after, changed=True, **extra):
        base = {"name": "lab/web-1", "changed": changed, "vcpus": 4,
                "before": {"desired": None, "pod": "virt-launcher-web-1-1", "compute_cpu_limit": before},
                "after": {"desired": None, "pod": "virt-launcher-web-1-1", "compute_cpu_limit": after}}
        base.update(extra)
        return base
    assert brake.report_line(result(None, "1500m"), "throttled") == "lab/web-1: 1.5 CPU, was unlimited"
    assert brake.report_line(result("1500m", "1500m", changed=False), "throttled") == "lab/web-1: 1.5 CPU, unchanged"
    assert brake.report_line(result("1", "4500m"), "restored") == \
        "lab/web-1: restored to unlimited: limit 4.5 CPU on 4 vCPUs (was 1 CPU)"
    assert brake.report_line(result("2", "3"), "restored") == "lab/web-1: restored to 3 CPU (was 2 CPU)"
    assert brake.report_line(result(None, "1"), "throttled", check_mode=True) == "lab/web-1: would be 1 CPU, was unlimited"
    pending = result(None, "1", node={"status": "pending", "cpu_limit": None, "reason": "Deferred",
                                      "message": "Node didn't have enough resource: cpu"})
    assert brake.report_line(pending, "throttled") == \
        "lab/web-1: 1 CPU, was unlimited (node: pending: Deferred: Node didn't have enough resource: cpu)"
    applied = result("1", "1", changed=False, node={"status": "applied", "cpu_limit": "1"})
    assert brake.report_line(applied, "throttled") == "lab/web-1: 1 CPU, unchanged (node: applied)"
    unreported = result(None, "1", node={"status": "not reported", "cpu_limit": None})
    assert brake.report_line(unreported, "throttled") == "lab/web-1: 1 CPU, was unlimited"
    failed = {"name": "lab/web-2", "changed": False, "failed": True, "msg": "VMI lab/web-2 not found"}
    assert brake.report_line(failed, "throttled") == "lab/web-2: failed: VMI lab/web-2 not found"


def test_report_lines_of_a_vm_without_a_running_pod():
    stopped = {"name": "lab/web-3", "changed": True, "before": {"vm_desired": "1"}, "after": {"vm_desired": None}}
    assert brake.report_line(stopped, "restored") == \
        "lab/web-3: cap lifted (the VirtualMachine is not running; was 1 CPU)"
    never = {"name": "lab/web-3", "changed": False, "before": {"vm_desired": None}, "after": {"vm_desired": None},
             "msg": "never throttled"}
    assert brake.report_line(never, "restored") == "lab/web-3: never throttled (the VirtualMachine is not running)"
    no_pod = {"name": "lab/web-4", "changed": True, "before": {"desired": "2", "pod": None, "compute_cpu_limit": None},
              "after": {"desired": None, "pod": None, "compute_cpu_limit": None}}
    assert brake.report_line(no_pod, "restored") == "lab/web-4: cap lifted (no running launcher pod; was 2 CPU)"


@pytest.mark.parametrize("record_text, why", [
    ("{not json", "not a record"), ("[1, 2]", "a JSON list, not a mapping"),
    (json.dumps({"previous": "x" * 70000}), "too large")])
def test_a_throttle_record_edited_by_hand_refuses_throttle_and_restore_naming_the_annotation(record_text, why):
    broken = view(vmi(annotations={PREFIX + "cpu-limit": "1", PREFIX + "cpu-limit-throttle": record_text}))
    for req in (request(cpus="1"), request(state="restored", cpus=None)):
        with pytest.raises(limit_state.LimitRefusal) as refused:
            limit_plan.target(broken, pod(limits={"cpu": "1"}), req)
        assert PREFIX + "cpu-limit-throttle" in str(refused.value) and why in str(refused.value)
        assert "nothing was changed" in str(refused.value)
    # The VirtualMachine's copy is checked too.
    copy = limit_state.vmi_view(vmi(), request()["keys"],
                                virtual_machine(annotations={PREFIX + "cpu-limit-throttle": "{not json"}))
    with pytest.raises(limit_state.LimitRefusal, match="VirtualMachine's annotation"):
        limit_plan.target(copy, pod(), request(cpus="1"))


def test_an_oversized_desired_cap_is_refused_naming_its_annotation_without_echoing_it():
    huge = view(vmi(annotations={PREFIX + "cpu-limit": "9" * 65536}))
    with pytest.raises(limit_state.LimitRefusal) as refused:
        limit_plan.target(huge, pod(), request(state="reconciled", cpus=None))
    message = str(refused.value)
    assert PREFIX + "cpu-limit" in message and "(65536 characters)" in message and len(message) < 300


def test_the_cpu_request_is_checked_naming_the_field():
    for params, field in (({"cpus": "1", "cpu_request": "1500m"}, "cpu_request"),
                          ({"cpus": None, "cpu_request": "0.0001"}, "cpu_request"),
                          ({"state": "restored", "cpus": None, "cpu_request": "100m"}, "cpu_request"),
                          ({"cpus": None, "cpu_request": None}, "cpus")):
        with pytest.raises(ValueRangeError) as error:
            request(**params)
        assert error.value.field == field, params
    assert request(cpus=None, cpu_request="100m")["cpu_request"] == 0.1


def test_a_weight_alone_demotes_the_request_in_place_records_it_and_restore_gives_it_back_exactly():
    req = request(cpus=None, cpu_request="100m")
    launcher = pod()
    current = view(vmi())
    assert limit_plan.target(current, launcher, req) == (None, 0.1, "throttle")
    assert limit_plan.resize_patch(launcher, None, 0.1) == {
        "spec": {"containers": [{"name": "compute", "resources": {"requests": {"cpu": "100m"}}}]}}
    desire = limit_plan.desire_patch(current, launcher, None, req, FIELDS, 0.1)["metadata"]["annotations"]
    assert PREFIX + "cpu-limit" not in desire and desire[PREFIX + "cpu-request"] == "100m"
    # A record that keeps a demoted request is schema 2: a collection reading schema 1 refuses it.
    assert json.loads(desire[PREFIX + "cpu-limit-throttle"])["previous_request"] == "400m"
    assert json.loads(desire[PREFIX + "cpu-limit-throttle"])["schema"] == 2
    applied = limit_plan.applied_patch(current, launcher, None, req, "t", cpu_request=0.1)["metadata"]["annotations"]
    assert json.loads(applied[PREFIX + "cpu-limit-applied"])["request"] == "100m"
    # The node runs it once the container's status says the new request.
    demoted = pod(requests={"cpu": "100m", "memory": "1Gi"})
    demoted["status"]["containerStatuses"] = [{"name": "compute", "resources": {"requests": {"cpu": "400m"}}}]
    assert limit_state.node_answer(demoted)["status"] == limit_state.NODE_PENDING
    demoted["status"]["containerStatuses"][0]["resources"]["requests"]["cpu"] = "100m"
    assert limit_state.node_answer(demoted)["status"] == limit_state.NODE_APPLIED

    braked = view(vmi(annotations=desire))
    restore = request(state="restored", cpus=None)
    assert limit_plan.target(braked, demoted, restore) == (None, 0.4, "restore")
    cleared = limit_plan.applied_patch(braked, demoted, None, restore, "t", restore=True, cpu_request=0.4)
    assert {k: v for k, v in cleared["metadata"]["annotations"].items() if v is None} == {
        PREFIX + "cpu-limit-throttle": None, PREFIX + "cpu-request": None}
    # Given back already: nothing to resize, the records still go.
    assert limit_plan.target(braked, pod(), restore) == (None, None, "restore")
    result = {"name": "lab/web-1", "changed": True, "vcpus": 4,
              "before": {"pod": "p", "compute_cpu_limit": None, "compute_cpu_request": "400m"},
              "after": {"pod": "p", "compute_cpu_limit": None, "compute_cpu_request": "100m"}}
    assert brake.report_line(result, "throttled") == \
        "lab/web-1: unlimited, unchanged; CPU request 100m, was 400m (its CPU weight)"


def test_a_weight_is_refused_where_it_cannot_be_one():
    req = request(cpus=None, cpu_request="100m")
    with pytest.raises(limit_state.LimitRefusal, match="dedicated CPUs"):
        limit_plan.target(view(vmi(dedicated=True)), pod(), req)
    with pytest.raises(limit_state.LimitRefusal, match="has no CPU request"):
        limit_plan.target(view(vmi()), pod(requests={"memory": "1Gi"}), req)
    guaranteed = pod(requests={"cpu": "2", "memory": "1Gi"}, limits={"cpu": "2", "memory": "1Gi"})
    with pytest.raises(limit_state.LimitRefusal, match="would change pod .* QoS class from Guaranteed to Burstable"):
        limit_plan.target(view(vmi()), guaranteed, req)
    # Under a cap already in force: the request may not go above it.
    with pytest.raises(limit_state.LimitRefusal, match="limit of 500m CPU is under .* request of 600m"):
        limit_plan.target(view(vmi()), pod(limits={"cpu": "500m"}), request(cpus=None, cpu_request="600m"))


def test_one_lever_thrown_keeps_the_other_the_brake_holds():
    """A weight alone on a VMI a restart made takes the cap its VM kept
    (else the VM's copy would go with this write); a weight above the cap
    the brake keeps is refused; the class guards a weight as a cap; the
    applied record keeps the lever a task left alone on the same pod."""
    req = request(cpus=None, cpu_request="100m")
    kept = virtual_machine(annotations={PREFIX + "cpu-limit": "1", PREFIX + "cpu-limit-throttle": json.dumps(
        dict(FIELDS, previous=None))})
    restarted = limit_state.vmi_view(vmi(), req["keys"], kept)
    assert restarted["fresh"]
    desire = limit_plan.desire_patch(restarted, pod(), None, req, FIELDS, 0.1)["metadata"]["annotations"]
    assert desire[PREFIX + "cpu-limit"] == "1" and desire[PREFIX + "cpu-request"] == "100m"
    capped = view(vmi(annotations={PREFIX + "cpu-limit": "500m"}))
    with pytest.raises(limit_state.LimitRefusal, match="cap of 500m would be under the CPU request of 600m"):
        limit_plan.target(capped, pod(), request(cpus=None, cpu_request="600m"))
    with pytest.raises(limit_state.LimitRefusal, match="dedicated VM"):
        limit_plan.target(view(vmi(labels={PREFIX + "class": "dedicated"})), pod(), req)
    assert limit_plan.target(view(vmi(labels={PREFIX + "class": "dedicated"})), pod(),
                             request(cpus=None, cpu_request="100m", force=True))[1] == 0.1
    launcher = pod(limits={"cpu": "1"})
    applied = json.dumps({"cpus": "1", "pod": launcher["metadata"]["name"], "podUID": "pod-uid-1", "time": "t"})
    both = view(vmi(annotations={PREFIX + "cpu-limit": "1", PREFIX + "cpu-limit-applied": applied}))
    written = limit_plan.applied_patch(both, launcher, None, req, "t2", cpu_request=0.1)["metadata"]["annotations"]
    assert json.loads(written[PREFIX + "cpu-limit-applied"])["cpus"] == "1"


def test_a_vmi_started_when_it_last_entered_running_and_is_of_unknown_start_without_it():
    vmi = {"status": {"phaseTransitionTimestamps": [
        {"phase": "Pending", "phaseTransitionTimestamp": "2026-12-06T10:00:00Z"},
        {"phase": "Running", "phaseTransitionTimestamp": "2026-12-06T10:00:30Z"}]}}
    assert running_since(vmi) == 1796551230.0
    assert running_since({"status": {}}) is None
    unreadable = {"phase": "Running", "phaseTransitionTimestamp": "soon"}
    assert running_since({"status": {"phaseTransitionTimestamps": [unreadable]}}) is None
