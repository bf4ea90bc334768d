"""kubevirt_vm_cpu_limit against the lab's real kube-apiserver (In-Place Pod
Resize GA in 1.35) with KubeVirt's own VMI schema, run with ansible-playbook.
Each test creates VMIs and virt-launcher Pods shaped as KubeVirt creates them
in the lab namespace, and deletes them. No kubelet runs in the lab, so a
pod's spec is what the tests read: the server accepted the resize there."""

import json
import os
import re
import sys

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from apiproxy import ApiProxy, kubeconfig_parts
from kubevirt_fleet import GROUP, NAMESPACE, VERSION, Fleet
import playbook_forkserver
from run_module import INVENTORY, ROOT, run_module
from run_module import run_playbook as run_lab_playbook

pytestmark = pytest.mark.isolated

PREFIX = "overcommit.control/"
DESIRED, APPLIED, RECORD = PREFIX + "cpu-limit", PREFIX + "cpu-limit-applied", PREFIX + "cpu-limit-throttle"


@pytest.fixture
def fleet(kube_admin):
    made = Fleet(kube_admin)
    yield made
    made.cleanup()


def brake(run_as, names=None, identity="admin", **args):
    options = {"check": args.pop("check", False), "diff": args.pop("diff", False)}
    args = dict(args, namespace=NAMESPACE)
    if names:
        args["names"] = names
    return run_as(identity, "kubevirt_vm_cpu_limit", args, **options)


def by_name(result):
    return dict((r["name"].split("/", 1)[1], r) for r in result["vms"])


def test_throttle_resizes_the_compute_container_records_and_announces_it(run_as, fleet):
    name = fleet.vmi(cores=4)
    pod = fleet.pod_of(name).metadata.name

    result = brake(run_as, [name], cpus="1500m", reason="INC-1 noisy", requested_by="ops", diff=True)
    assert not result.get("failed"), result
    vm = result["vms"][0]
    assert vm["changed"] is True and vm["pod"] == pod, vm
    assert vm["before"]["compute_cpu_limit"] is None and vm["after"]["compute_cpu_limit"] == "1500m"
    assert result["diff"][0]["after"]["desired"] == "1500m"
    assert fleet.compute_limits(name) == {"cpu": "1500m"}
    # The other container and the requests are untouched.
    spec = fleet.pod_of(name).spec
    assert spec.containers[0].resources.requests == {"cpu": "400m", "memory": "1300Mi"}
    assert spec.containers[1].resources.limits == {"cpu": "15m", "memory": "60M"}
    annotations = fleet.annotations(name)
    assert annotations[DESIRED] == "1500m"
    applied = json.loads(annotations[APPLIED])
    assert applied["cpus"] == "1500m" and applied["pod"] == pod and applied["podUID"] == fleet.pod_of(name).metadata.uid
    record = json.loads(annotations[RECORD])
    assert record["previous"] is None and record["reason"] == "INC-1 noisy" and record["by"] == "ops"
    assert "error" not in vm["event"], vm["event"]
    assert fleet.events(name) == [("Normal", "CPULimitApplied",
                                   "compute CPU limit of pod %s set to 1500m (was no limit)" % pod)]

    again = brake(run_as, [name], cpus="1.5", reason="INC-1 noisy")
    assert again["changed"] is False and not again.get("failed"), again
    assert fleet.annotations(name) == annotations
    assert len(fleet.events(name)) == 1


def test_the_server_refuses_a_plain_pod_update_of_resources(kube_admin, fleet):
    """Why the module goes through `resize`: the pod itself rejects the change."""
    name = fleet.vmi()
    pod = fleet.pod_of(name).metadata.name
    core = client.CoreV1Api(kube_admin)
    with pytest.raises(ApiException) as refused:
        core.patch_namespaced_pod(pod, NAMESPACE, {"spec": {"containers": [
            {"name": "compute", "resources": {"limits": {"cpu": "1"}}}]}})
    assert refused.value.status == 422 and "pod updates may not change fields" in refused.value.body
    assert fleet.compute_limits(name) is None


def test_check_mode_is_a_server_side_dry_run_that_stores_nothing(run_as, fleet):
    name = fleet.vmi(cores=2)
    result = brake(run_as, [name], cpus="1", reason="dry", check=True)
    assert not result.get("failed"), result
    assert result["changed"] is True and result["vms"][0]["after"]["compute_cpu_limit"] == "1"
    assert fleet.compute_limits(name) is None
    assert not any(key.startswith(PREFIX) for key in fleet.annotations(name))
    assert fleet.events(name) == []


def test_a_migration_loses_the_cap_and_reconcile_applies_it_again(run_as, fleet):
    capped, untouched = fleet.vmi(cores=4), fleet.vmi(cores=2)
    assert not brake(run_as, [capped], cpus="2", reason="INC-2").get("failed")
    first_pod = fleet.pod_of(capped).metadata.name

    new_pod = fleet.migrate(capped)
    assert fleet.compute_limits(capped) is None
    assert json.loads(fleet.annotations(capped)[APPLIED])["pod"] == first_pod

    result = run_as("admin", "kubevirt_vm_cpu_limit", {"label_selector": fleet.selector, "state": "reconciled"})
    assert not result.get("failed"), result
    results = by_name(result)
    assert results[capped]["changed"] is True and results[capped]["pod"] == new_pod
    assert results[untouched]["changed"] is False and results[untouched]["msg"] == "no cap desired"
    assert fleet.compute_limits(capped) == {"cpu": "2"}
    applied = json.loads(fleet.annotations(capped)[APPLIED])
    assert applied["pod"] == new_pod and applied["cpus"] == "2"
    assert fleet.compute_limits(untouched) is None
    assert fleet.events(capped)[-1] == (
        "Normal", "CPULimitApplied",
        "compute CPU limit of pod %s set to 2 (was no limit); re-applied the desired cap" % new_pod)

    again = run_as("admin", "kubevirt_vm_cpu_limit", {"label_selector": fleet.selector, "state": "reconciled"})
    assert again["changed"] is False, again


def test_a_restart_loses_the_vmi_and_reconcile_applies_the_cap_its_vm_kept(run_as, fleet):
    name = fleet.vmi(cores=4, limits={"cpu": "4"}, vm=True)
    generation = fleet.read_vm(name)["metadata"]["generation"]
    assert not brake(run_as, [name], cpus="1500m", reason="INC-7", requested_by="ops").get("failed")
    record = json.loads(fleet.annotations(name)[RECORD])
    kept = fleet.vm_annotations(name)
    assert kept[DESIRED] == "1500m" and json.loads(kept[RECORD]) == record and record["previous"] == "4"
    # Metadata only: the VM's spec generation stays, so nothing marks it RestartRequired.
    assert fleet.read_vm(name)["metadata"]["generation"] == generation
    first_uid = fleet.read(name)["metadata"]["uid"]

    fleet.restart(name)
    assert fleet.read(name)["metadata"]["uid"] != first_uid
    assert not any(key.startswith(PREFIX) for key in fleet.annotations(name))
    assert fleet.compute_limits(name) == {"cpu": "4"}

    result = run_as("admin", "kubevirt_vm_cpu_limit", {"label_selector": fleet.selector, "state": "reconciled"},
                    diff=True)
    assert not result.get("failed") and result["changed"] is True, result
    new_pod = fleet.pod_of(name).metadata.name
    assert result["vms"][0]["before"]["vm_desired"] == "1500m" and result["vms"][0]["after"]["desired"] == "1500m"
    assert fleet.compute_limits(name) == {"cpu": "1500m"}
    annotations = fleet.annotations(name)
    # The new VMI carries the cap and the original record (the limit before the first throttle).
    assert annotations[DESIRED] == "1500m" and json.loads(annotations[RECORD]) == record
    assert json.loads(annotations[APPLIED])["pod"] == new_pod
    assert fleet.events(name)[-1] == (
        "Normal", "CPULimitApplied",
        "compute CPU limit of pod %s set to 1500m (was 4); re-applied the desired cap" % new_pod)
    again = run_as("admin", "kubevirt_vm_cpu_limit", {"label_selector": fleet.selector, "state": "reconciled"})
    assert again["changed"] is False, again

    restored = brake(run_as, [name], state="restored")
    assert not restored.get("failed") and restored["changed"] is True, restored
    assert fleet.compute_limits(name) == {"cpu": "4"}
    assert DESIRED not in fleet.vm_annotations(name) and RECORD not in fleet.vm_annotations(name)
    assert DESIRED not in fleet.annotations(name) and RECORD not in fleet.annotations(name)
    fleet.restart(name)
    after_restore = run_as("admin", "kubevirt_vm_cpu_limit", {"label_selector": fleet.selector, "state": "reconciled"})
    assert after_restore["changed"] is False and fleet.compute_limits(name) == {"cpu": "4"}, after_restore


def test_restore_of_a_stopped_vm_lifts_the_cap_it_would_start_with(run_as, fleet):
    name = fleet.vmi(cores=2, vm=True)
    assert not brake(run_as, [name], cpus="1", reason="INC-8").get("failed")
    fleet.stop(name)

    refused = brake(run_as, [name], cpus="1", reason="INC-8 again")
    assert refused["failed"] is True and "is not running" in refused["vms"][0]["msg"], refused
    result = brake(run_as, [name], state="restored", diff=True)
    assert not result.get("failed") and result["changed"] is True, result
    assert result["vms"][0]["before"]["vm_desired"] == "1" and result["vms"][0]["after"]["vm_desired"] is None
    assert DESIRED not in fleet.vm_annotations(name) and RECORD not in fleet.vm_annotations(name)
    assert fleet.events(name, kind="VirtualMachine") == [
        ("Normal", "CPULimitRestored", "cap lifted from VirtualMachine %s, which is not running" % name)]
    again = brake(run_as, [name], state="restored")
    assert again["changed"] is False and again["vms"][0]["msg"] == "never throttled", again

    # Started again, the VM is not braked.
    fleet.start(name)
    reconciled = brake(run_as, [name], state="reconciled")
    assert reconciled["changed"] is False and fleet.compute_limits(name) is None, reconciled


def test_reconcile_follows_a_cap_a_person_annotated_or_removed(run_as, fleet):
    name = fleet.vmi(cores=4, limits={"cpu": "4"}, vm=True)
    fleet.custom.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "virtualmachineinstances", name,
                                                {"metadata": {"annotations": {DESIRED: "3"}}})
    result = brake(run_as, [name], state="reconciled")
    assert not result.get("failed") and result["changed"] is True, result
    assert fleet.compute_limits(name) == {"cpu": "3"}
    assert json.loads(fleet.annotations(name)[RECORD])["previous"] == "4"
    assert fleet.vm_annotations(name)[DESIRED] == "3"

    # Removed by hand from the VMI: the VM's copy goes too, so a restart does not bring the cap back.
    fleet.custom.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "virtualmachineinstances", name,
                                                {"metadata": {"annotations": {DESIRED: None}}})
    lifted = brake(run_as, [name], state="reconciled")
    assert not lifted.get("failed") and lifted["changed"] is True, lifted
    assert lifted["vms"][0]["after"]["vm_desired"] is None and DESIRED not in fleet.vm_annotations(name)
    fleet.restart(name)
    restarted = brake(run_as, [name], state="reconciled")
    assert restarted["changed"] is False and fleet.compute_limits(name) == {"cpu": "4"}, restarted


def test_restore_returns_the_limit_before_the_first_throttle(run_as, fleet):
    had_limit, had_none = fleet.vmi(cores=4, limits={"cpu": "4"}), fleet.vmi(cores=2)
    assert not brake(run_as, [had_limit, had_none], cpus="1", reason="INC-3").get("failed")
    # A second, tighter throttle keeps the limit from before the first one.
    assert not brake(run_as, [had_limit], cpus="2", reason="INC-3 later").get("failed")
    assert json.loads(fleet.annotations(had_limit)[RECORD])["previous"] == "4"

    result = brake(run_as, [had_limit, had_none], state="restored", headroom=0.5, diff=True)
    assert not result.get("failed"), result
    assert fleet.compute_limits(had_limit) == {"cpu": "4"}
    # A limit cannot be removed: the VM's 2 vCPUs plus the headroom.
    assert fleet.compute_limits(had_none) == {"cpu": "2500m"}
    for name in (had_limit, had_none):
        annotations = fleet.annotations(name)
        assert DESIRED not in annotations and RECORD not in annotations
        assert fleet.events(name)[-1][:2] == ("Normal", "CPULimitRestored")
    assert json.loads(fleet.annotations(had_none)[APPLIED])["cpus"] == "2500m"

    again = brake(run_as, [had_limit, had_none], state="restored")
    assert again["changed"] is False and not again.get("failed"), again
    assert set(r["msg"] for r in again["vms"]) == {"never throttled"}


def test_restore_after_the_pod_is_gone_clears_the_desired_cap(run_as, fleet):
    name = fleet.vmi(cores=2)
    assert not brake(run_as, [name], cpus="1", reason="INC-4").get("failed")
    fleet.delete_pod(fleet.pod_of(name).metadata.name)
    result = brake(run_as, [name], state="restored")
    assert not result.get("failed") and result["changed"] is True, result
    assert DESIRED not in fleet.annotations(name)


def test_each_refusal_names_its_reason_changes_nothing_and_emits_a_warning(run_as, fleet):
    dedicated_cpus = fleet.vmi(cores=2, dedicated=True, limits={"cpu": "2", "memory": "1300Mi"},
                               requests={"cpu": "2", "memory": "1300Mi"})
    dedicated_class = fleet.vmi(cores=4, labels={PREFIX + "class": "dedicated"})
    guaranteed = fleet.vmi(cores=2, limits={"cpu": "2", "memory": "1300Mi"}, requests={"cpu": "2", "memory": "1300Mi"})
    under_floor = fleet.vmi(cores=8)
    under_request = fleet.vmi(cores=4, requests={"cpu": "3"})
    not_running = fleet.vmi(cores=4, running=False)
    fine = fleet.vmi(cores=4)
    names = [dedicated_cpus, dedicated_class, guaranteed, under_floor, under_request, not_running, fine,
             "oc-it-cpu-no-such-vmi"]

    result = brake(run_as, names, cpus="1", reason="INC-5")
    assert result["failed"] is True
    results = by_name(result)
    assert "dedicated CPUs (dedicatedCpuPlacement)" in results[dedicated_cpus]["msg"]
    assert "refusing to throttle a dedicated VM (its class is dedicated)" in results[dedicated_class]["msg"]
    assert "change pod" in results[guaranteed]["msg"] and "from Guaranteed to Burstable" in results[guaranteed]["msg"]
    assert "under the shared floor of 2 CPUs" in results[under_floor]["msg"]
    assert "under the compute container's CPU request of 3" in results[under_request]["msg"]
    assert "no running virt-launcher pod" in results[not_running]["msg"]
    assert results["oc-it-cpu-no-such-vmi"]["msg"] == "VMI lab/oc-it-cpu-no-such-vmi not found"
    assert results[fine]["changed"] is True and fleet.compute_limits(fine) == {"cpu": "1"}
    for name in names[:6]:
        assert not any(key.startswith(PREFIX) for key in fleet.annotations(name)), name
        events = fleet.events(name)
        assert len(events) == 1 and events[0][:2] == ("Warning", "CPULimitFailed"), events
        assert events[0][2] == "cannot throttle the CPU limit: " + results[name]["msg"]
    assert fleet.pod_of(guaranteed).status.qos_class == "Guaranteed"
    assert fleet.compute_limits(guaranteed) == {"cpu": "2", "memory": "1300Mi"}
    assert fleet.compute_limits(under_floor) is None

    forced = brake(run_as, [dedicated_class, under_floor], cpus="1", reason="INC-5", force=True)
    assert not forced.get("failed"), forced
    assert fleet.compute_limits(under_floor) == {"cpu": "1"}
    assert json.loads(fleet.annotations(under_floor)[RECORD])["forced"] is True

    still_refused = brake(run_as, [dedicated_cpus], cpus="1", reason="INC-5", force=True)
    assert "dedicated CPUs" in still_refused["vms"][0]["msg"]


def test_a_cap_at_or_above_the_vcpus_fails_that_vmi_and_changes_nothing(run_as, fleet):
    one_vcpu = fleet.vmi(cores=1, vm=True)
    two_vcpus = fleet.vmi(cores=2, limits={"cpu": "4"}, vm=True)
    fine = fleet.vmi(cores=4)
    pods = dict((name, fleet.pod_of(name).metadata.name) for name in (one_vcpu, two_vcpus))

    result = brake(run_as, [one_vcpu, two_vcpus, fine], cpus="2", reason="INC-10")
    assert result["failed"] is True
    results = by_name(result)
    assert results[one_vcpu]["msg"].startswith("cpus='2' is out of range") and "1 vCPU" in results[one_vcpu]["msg"]
    assert "VM's 2 vCPUs" in results[two_vcpus]["msg"] and "caps nothing" in results[two_vcpus]["msg"]
    assert results[fine]["changed"] is True and fleet.compute_limits(fine) == {"cpu": "2"}
    # 500 meant as 500m is refused even when forced.
    forced = brake(run_as, [one_vcpu], cpus="500", reason="INC-10", force=True)
    assert forced["failed"] is True and "cpus='500'" in forced["vms"][0]["msg"]

    for name in (one_vcpu, two_vcpus):
        assert not any(key.startswith(PREFIX) for key in fleet.annotations(name)), name
        assert not any(key.startswith(PREFIX) for key in fleet.vm_annotations(name)), name
        assert fleet.pod_of(name).metadata.name == pods[name]
    assert fleet.compute_limits(one_vcpu) is None
    assert fleet.compute_limits(two_vcpus) == {"cpu": "4"}
    assert [event[:2] for event in fleet.events(one_vcpu)] == [("Warning", "CPULimitFailed")] * 2


def test_a_name_with_surrounding_spaces_is_refused_before_any_api_call(lab, fleet):
    first, second = fleet.vmi(cores=4, vm=True), fleet.vmi(cores=4)
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_ADMIN"])
    with ApiProxy(server, ca_cert) as proxy:
        result = run_module("kubevirt_vm_cpu_limit", {"namespace": NAMESPACE, "names": [first, " " + second],
                                                      "cpus": "2", "host": proxy.url, "api_key": token})
    assert result["failed"] is True and result["field"] == "names" and result["vms"] == [], result
    assert result["msg"].startswith("names[1]=' %s' has surrounding spaces" % second), result["msg"]
    assert proxy.requests == []
    for name in (first, second):
        assert not any(key.startswith(PREFIX) for key in fleet.annotations(name)), name
        assert fleet.compute_limits(name) is None and fleet.events(name) == []
    assert not any(key.startswith(PREFIX) for key in fleet.vm_annotations(first))


def test_bad_input_is_refused_before_any_api_call(lab):
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_ADMIN"])
    cases = [({"names": ["x"], "cpus": "1 CPU"}, "cpus"), ({"names": ["x"], "cpus": "0"}, "cpus"),
             ({"names": ["x"]}, "cpus"), ({"names": ["x"], "state": "restored", "headroom": -1}, "headroom"),
             ({"names": ["x"], "cpus": "1", "floor": 2}, "floor"), ({"cpus": "1"}, "names"),
             ({"names": ["x"], "state": "reconciled", "cpus": "1"}, "cpus")]
    with ApiProxy(server, ca_cert) as proxy:
        for args, field in cases:
            result = run_module("kubevirt_vm_cpu_limit", dict(args, namespace=NAMESPACE, host=proxy.url,
                                                              api_key=token))
            assert result["failed"] is True and result["field"] == field, (args, result)
    assert proxy.requests == []


def test_a_throttle_reads_once_and_writes_each_object_once(lab, fleet):
    """The round trips of one VM-owned VMI: its read, one list of VMs and one
    of launcher pods, then each write once (no re-read between them)."""
    name = fleet.vmi(cores=4, vm=True)
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_ADMIN"])
    with ApiProxy(server, ca_cert) as proxy:
        result = run_module("kubevirt_vm_cpu_limit", {"namespace": NAMESPACE, "names": [name], "cpus": "2",
                                                      "reason": "round trips", "host": proxy.url, "api_key": token})
    assert not result.get("failed") and result["changed"] is True, result
    vmi_path = "/apis/kubevirt.io/v1/namespaces/%s/virtualmachineinstances/%s" % (NAMESPACE, name)
    pod_path = "/api/v1/namespaces/%s/pods/%s/resize" % (NAMESPACE, result["vms"][0]["pod"])
    assert [(r["method"], r["path"]) for r in proxy.requests] == [
        ("GET", vmi_path),
        ("GET", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachines" % NAMESPACE),
        ("GET", "/api/v1/namespaces/%s/pods" % NAMESPACE),
        ("PATCH", vmi_path),
        ("PATCH", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachines/%s" % (NAMESPACE, name)),
        ("PATCH", pod_path),
        ("PATCH", vmi_path),
        ("POST", "/apis/events.k8s.io/v1/namespaces/%s/events" % NAMESPACE),
    ]
    assert fleet.compute_limits(name) == {"cpu": "2"} and fleet.vm_annotations(name)[DESIRED] == "2"


def test_the_shipped_role_is_enough_and_an_unbound_identity_is_told_why(run_as, fleet):
    name = fleet.vmi(cores=4, vm=True)
    operator = brake(run_as, [name], identity="operator", cpus="2", reason="least privilege")
    assert not operator.get("failed"), operator
    assert fleet.compute_limits(name) == {"cpu": "2"}
    assert fleet.events(name)[-1][:2] == ("Normal", "CPULimitApplied")
    fleet.migrate(name)
    reconciled = run_as("operator", "kubevirt_vm_cpu_limit", {"namespace": NAMESPACE, "state": "reconciled",
                                                              "label_selector": fleet.selector})
    assert not reconciled.get("failed") and fleet.compute_limits(name) == {"cpu": "2"}, reconciled
    fleet.restart(name)
    reconciled = run_as("operator", "kubevirt_vm_cpu_limit", {"namespace": NAMESPACE, "state": "reconciled",
                                                              "label_selector": fleet.selector})
    assert not reconciled.get("failed") and fleet.compute_limits(name) == {"cpu": "2"}, reconciled
    restored = brake(run_as, [name], identity="operator", state="restored")
    assert not restored.get("failed"), restored

    unbound = brake(run_as, [name], identity="unbound", cpus="2", reason="no rights")
    assert unbound["failed"] is True
    assert "forbidden" in unbound["msg"] and "overcommit-control ClusterRole" in unbound["msg"]


def run_playbook(playbook, extra_vars, kubeconfig):
    """ansible-playbook of one of the collection's playbooks on the lab inventory, as an identity."""
    return run_lab_playbook(playbook, extra_vars, env={"K8S_AUTH_KUBECONFIG": kubeconfig})


def test_incident_playbooks_throttle_and_restore_kubevirt_vms(lab, fleet):
    capped, refused = fleet.vmi(cores=4), fleet.vmi(cores=8)
    operator = lab["OVERCOMMIT_KUBECONFIG_OPERATOR"]
    throttled = run_playbook("throttle.yml", {"kubevirt_vms": [capped], "kubevirt_namespace": NAMESPACE, "cpus": 1,
                                              "reason": "INC-6 playbook"}, operator)
    assert throttled.returncode == 0, throttled.stdout[-3000:]
    assert fleet.compute_limits(capped) == {"cpu": "1"}
    assert json.loads(fleet.annotations(capped)[RECORD])["reason"] == "INC-6 playbook"
    # The libvirt play had no domains to act on: its tasks never ran.
    assert "throttle : Cap the targeted domains of this host" not in throttled.stdout
    assert re.search(r"lab-hypervisor +: ok=\d+ +changed=0 ", throttled.stdout), throttled.stdout[-1000:]
    # Without -v the summary says per VM what cap is in force and what it replaced.
    assert '"%s/%s: 1 CPU, was unlimited"' % (NAMESPACE, capped) in throttled.stdout, throttled.stdout[-3000:]

    # One VM refused (under the floor) fails the run after the other is capped.
    mixed = run_playbook("throttle.yml", {"kubevirt_vms": [capped, refused], "kubevirt_namespace": NAMESPACE,
                                          "cpus": 1.5, "reason": "INC-6 again"}, operator)
    assert mixed.returncode != 0 and "under the shared floor" in mixed.stdout, mixed.stdout[-3000:]
    assert fleet.compute_limits(capped) == {"cpu": "1500m"} and fleet.compute_limits(refused) is None
    assert '"%s/%s: 1.5 CPU, was 1 CPU"' % (NAMESPACE, capped) in mixed.stdout, mixed.stdout[-3000:]
    assert '"%s/%s: failed: a cap of 1.5 CPUs is under the shared floor' % (NAMESPACE, refused) in mixed.stdout

    restored = run_playbook("restore.yml", {"kubevirt_vms": [capped], "kubevirt_namespace": NAMESPACE, "headroom": 0.5},
                            operator)
    assert restored.returncode == 0, restored.stdout[-3000:]
    assert fleet.compute_limits(capped) == {"cpu": "4500m"}
    assert DESIRED not in fleet.annotations(capped)
    line = "%s/%s: restored to unlimited: limit 4.5 CPU on 4 vCPUs (was 1.5 CPU)" % (NAMESPACE, capped)
    assert '"%s"' % line in restored.stdout, restored.stdout[-3000:]


def test_an_incident_can_demote_a_kubevirt_vms_weight_alone_through_the_playbooks(lab, fleet):
    """throttle.yml with `cpu_request` and no `cpus`: the launcher's CPU
    request (its cgroup weight) demoted, no limit set; restore.yml gives it back."""
    name = fleet.vmi(cores=4)
    operator = lab["OVERCOMMIT_KUBECONFIG_OPERATOR"]
    before = fleet.pod_of(name).spec.containers[0].resources
    demoted = run_playbook("throttle.yml", {"kubevirt_vms": [name], "kubevirt_namespace": NAMESPACE,
                                            "cpu_request": "100m", "reason": "INC-15 weight"}, operator)
    assert demoted.returncode == 0, demoted.stdout[-3000:]
    now = fleet.pod_of(name).spec.containers[0].resources
    assert now.requests["cpu"] == "100m" and now.limits == before.limits, (before, now)
    restored = run_playbook("restore.yml", {"kubevirt_vms": [name], "kubevirt_namespace": NAMESPACE}, operator)
    assert restored.returncode == 0, restored.stdout[-3000:]
    assert fleet.pod_of(name).spec.containers[0].resources.requests == before.requests


def test_the_reconcile_role_fails_after_its_summary_when_a_vmi_failed(lab, fleet, tmp_path):
    selector = "oc-it-reconcile=%d" % os.getpid()
    key, value = selector.split("=")
    good, bad = fleet.vmi(cores=4, limits={"cpu": "4"}, labels={key: value}), \
        fleet.vmi(cores=4, limits={"cpu": "4"}, labels={key: value})
    for name, desired in ((good, "3"), (bad, "lots")):
        fleet.custom.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "virtualmachineinstances", name,
                                                    {"metadata": {"annotations": {DESIRED: desired}}})
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "The reconcile role", "ansible.builtin.include_role": {"name": "overcommit.control.kubevirt_cpu_reconcile"},
         "vars": {"kubevirt_cpu_reconcile_namespace": NAMESPACE, "kubevirt_cpu_reconcile_label_selector": selector}}]}]
    playbook = tmp_path / "reconcile.yml"
    playbook.write_text(yaml.safe_dump(play))
    env = dict(os.environ, K8S_AUTH_KUBECONFIG=lab["OVERCOMMIT_KUBECONFIG_OPERATOR"], ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"))
    completed = playbook_forkserver.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                                         INVENTORY, str(playbook)], env=env)
    # The good VMI is reconciled and both show in the summary before the run fails.
    assert completed.returncode != 0, completed.stdout[-3000:]
    assert fleet.compute_limits(good) == {"cpu": "3"}
    assert "%s/%s: 3 CPU, was unlimited: limit 4 CPU" % (NAMESPACE, good) in completed.stdout, completed.stdout[-3000:]
    assert "%s/%s: failed: the desired cap" % (NAMESPACE, bad) in completed.stdout, completed.stdout[-3000:]
    assert "fleet_result : Fail when an object could not be handled" in completed.stdout
