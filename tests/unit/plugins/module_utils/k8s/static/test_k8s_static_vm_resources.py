import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import memory, vm_class
from ansible_collections.overcommit.control.plugins.module_utils.k8s.static import vm_resources

MI, GI = 2 ** 20, 2 ** 30


def request(**given):
    params = {"mode": "enforce", "vm_class": None, "floor": 0.25, "force": False, "prefix": "overcommit.control/",
              "names": [], "namespace": "ns"}
    params.update(given)
    return vm_resources.check_request(params)


def vm(cores=2, guest="2Gi", requests=None, limits=None, labels=None, cpu=None, devices=None, annotations=None):
    domain = {"cpu": dict(cpu or {}, cores=cores), "memory": {"guest": guest},
              "devices": devices if devices is not None else {"autoattachGraphicsDevice": False}}
    if requests or limits:
        domain["resources"] = {"requests": requests or {}, "limits": limits or {}}
    return {"metadata": {"name": "vm", "namespace": "ns", "labels": labels or {}, "annotations": annotations or {},
                         "resourceVersion": "1"},
            "spec": {"template": {"spec": {"domain": domain}}}}


def test_launcher_overhead_adds_up_as_kubevirt_counts_it():
    # request/512 (the request in kB, rounded up) + 220Mi fixed + 4 x 8Mi per vCPU + 8Mi iothread + 32Mi video
    assert memory.launcher_overhead(4 * GI, 4) == 300 * MI + 1
    assert memory.launcher_overhead(4 * GI, 4, graphics=False, dedicated=True, vfio=True) == \
        (268 + 100 + 1024) * MI + 1
    # The page tables follow the request, not the guest memory: 3Gi/512 is 6Mi.
    assert memory.launcher_overhead(3 * GI, 4) == 298 * MI + 1
    # The memory request of KubeVirt v1.7.0's launcher on the lab for a VMI requesting 32Mi, with 1 vCPU and
    # video: 314638337 bytes (tests/integration/kubevirt reads them from the pod).
    assert 32 * MI + memory.launcher_overhead(32 * MI, 1) == 314638337
    assert memory.least_limit(4 * GI, 320 * MI + 1) == 4 * GI + 321 * MI


def test_memory_rules():
    checks = [c for c, _m in memory.findings(2 * GI, 3 * GI, 2 * GI, 300 * MI)]
    assert checks == ["memory_request_above_guest", "memory_limit_equals_guest"]
    assert [c for c, _m in memory.findings(2 * GI, None, 2 * GI + 100 * MI, 300 * MI)] == [
        "memory_limit_below_guest_plus_overhead"]
    assert memory.findings(2 * GI, GI, 3 * GI, 300 * MI) == []


def test_cpu_template_per_class():
    assert vm_class.cpu_template("dedicated", 4) == {"request": 4.0, "limit": 4.0, "dedicated": True}
    with pytest.raises(vm_class.Refusal, match="would overcommit a dedicated VM"):
        vm_class.cpu_template("dedicated", 4, request=2)
    with pytest.raises(vm_class.Refusal, match="needs cpu_request"):
        vm_class.cpu_template("burstable", 4, request=1)
    with pytest.raises(vm_class.Refusal, match="under the shared floor of 1 CPUs"):
        vm_class.cpu_template("shared", 4, limit=0.5)
    assert vm_class.cpu_template("shared", 4, limit=0.5, force=True)["limit"] == 0.5
    with pytest.raises(vm_class.Refusal, match="under cpu_request"):
        vm_class.cpu_template("shared", 4, request=2, limit=1)
    assert vm_class.cpu_template("shared", 4) == {"request": None, "limit": None, "dedicated": False}


@pytest.mark.parametrize("given,field", [
    ({"cpu_limit": "2 cores"}, "cpu_limit"),
    ({"cpu_request": "none"}, "cpu_request"),
    ({"memory_limit": "4GB"}, "memory_limit"),
    ({"memory_guest": "0"}, "memory_guest"),
    ({"floor": 2}, "floor"),
    ({"namespace": None, "names": ["a"]}, "namespace"),
])
def test_bad_options_name_the_field(given, field):
    with pytest.raises(ValueRangeError) as error:
        request(**given)
    assert error.value.field == field


def test_shared_plan_patches_only_the_managed_fields_with_nulls_for_removals():
    plan = vm_resources.plan(vm(cores=4, guest="4Gi", requests={"cpu": "3"}, limits={"memory": "4Gi"}), None,
                             request(cpu_request="ratio", cpu_limit="2", memory_limit="auto"))
    domain = plan["patch"]["spec"]["template"]["spec"]["domain"]
    # Guest 4Gi (no memory request: the request is the guest) + 4Gi/512 + 220Mi + 4 x 8Mi + 8Mi iothread (no video),
    # and the byte KubeVirt's rounding adds, in whole Mi.
    assert domain == {"resources": {"requests": {"cpu": None}, "limits": {"cpu": "2", "memory": "4365Mi"}}}
    assert plan["before"]["memory_limit"] == "4Gi" and plan["after"]["cpu_request"] is None
    assert plan["restart_required"] is False


def test_the_same_value_in_another_spelling_is_no_change():
    plan = vm_resources.plan(vm(guest="2Gi", limits={"memory": "3Gi"}), None, request(memory_limit="3072Mi"))
    assert plan["patch"] is None


def test_a_kept_limit_that_breaks_the_rule_is_refused_and_names_the_option():
    with pytest.raises(ValueRangeError) as error:
        vm_resources.plan(vm(guest="2Gi", limits={"memory": "2Gi"}), None, request(cpu_limit="1"))
    assert error.value.field == "memory_limit" and "set memory_limit" in str(error.value)


def test_a_running_vm_uses_its_reported_overhead_and_needs_a_restart():
    vmi = {"status": {"memory": {"memoryOverhead": "500Mi"}}}
    plan = vm_resources.plan(vm(guest="2Gi"), vmi, request(memory_limit="auto", memory_guest="2Gi"))
    assert plan["after"]["memory_limit"] == "2548Mi"
    assert plan["restart_required"] is True and plan["restart_reasons"] == ["memory_limit"]


def test_guest_memory_alone_is_live_updatable():
    plan = vm_resources.plan(vm(guest="2Gi"), {"status": {}}, request(memory_guest="3Gi"))
    assert plan["patch"]["spec"]["template"]["spec"]["domain"] == {"memory": {"guest": "3Gi"}}
    assert plan["restart_required"] is False


def test_dedicated_plan_sets_placement_requests_limits_and_the_label():
    plan = vm_resources.plan(vm(cores=2, guest="2Gi", requests={"memory": "1Gi"}), None, request(vm_class="dedicated"))
    assert plan["patch"]["metadata"] == {"labels": {"overcommit.control/class": "dedicated"}}
    domain = plan["patch"]["spec"]["template"]["spec"]["domain"]
    assert domain["cpu"] == {"dedicatedCpuPlacement": True}
    assert domain["resources"] == {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "2"}}


def test_moving_a_dedicated_vm_out_needs_force():
    pinned = vm(cpu={"dedicatedCpuPlacement": True}, labels={"overcommit.control/class": "dedicated"})
    with pytest.raises(vm_resources.VmRefusal, match="refusing to move a dedicated VM"):
        vm_resources.plan(pinned, None, request(vm_class="shared"))
    moved = vm_resources.plan(pinned, None, request(vm_class="shared", force=True))
    assert moved["patch"]["spec"]["template"]["spec"]["domain"]["cpu"] == {"dedicatedCpuPlacement": None}


def test_audit_finds_each_risk():
    def checks(obj, vmi=None):
        return [f["check"] for f in vm_resources.audit(vm_resources.vm_facts(obj, vmi, "overcommit.control/class"))]

    assert checks(vm(limits={"memory": "2Gi"})) == ["memory_limit_equals_guest"]
    assert checks(vm(labels={"overcommit.control/class": "dedicated"})) == ["dedicated_cpu_overcommitted"]
    assert checks(vm(cpu={"dedicatedCpuPlacement": True}, requests={"memory": "1Gi"})) == [
        "dedicated_memory_overcommitted"]
    assert checks(vm(annotations={"kubevirt.io/domainMemoryOvercommit": "150"})) == ["nonexistent_annotation"]
    assert checks(vm(limits={"memory": "2200Mi"}), {"status": {"memory": {"memoryOverhead": "300Mi"}}}) == [
        "memory_limit_below_guest_plus_overhead"]
    assert checks(vm(requests={"memory": "1Gi"}, limits={"memory": "3Gi"})) == []


def test_instancetype_vms_are_refused():
    obj = vm()
    obj["spec"]["instancetype"] = {"name": "u1.medium"}
    with pytest.raises(vm_resources.VmRefusal, match="instancetype u1.medium"):
        vm_resources.plan(obj, None, request(cpu_limit="1"))


def test_a_guest_size_taken_from_the_request_is_kept_when_the_request_changes():
    legacy = vm(guest="2Gi", requests={"memory": "2Gi"})
    del legacy["spec"]["template"]["spec"]["domain"]["memory"]
    plan = vm_resources.plan(legacy, None, request(memory_request="1Gi"))
    domain = plan["patch"]["spec"]["template"]["spec"]["domain"]
    assert domain == {"memory": {"guest": "2Gi"}, "resources": {"requests": {"memory": "1Gi"}}}
    assert vm_resources.plan(legacy, None, request(cpu_limit="1"))["patch"]["spec"]["template"]["spec"]["domain"] == {
        "resources": {"limits": {"cpu": "1"}}}
