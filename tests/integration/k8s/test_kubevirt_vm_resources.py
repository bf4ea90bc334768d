"""kubevirt_vm_resources against the lab's real kube-apiserver with
KubeVirt's own CRD schemas, run with ansible-playbook. Each test creates its
VMs (and, for a running VM, its VMI) in the lab namespace and deletes them."""

import copy
import uuid

import pytest
from kubernetes import client

from apiproxy import ApiProxy, kubeconfig_parts
from run_module import run_module

pytestmark = pytest.mark.isolated

NAMESPACE = "lab"
GROUP, VERSION = "kubevirt.io", "v1"
CLASS = "overcommit.control/class"


@pytest.fixture
def vms(kube_admin):
    """vms.make(domain, labels=None, annotations=None, ...) creates a VM;
    vms.running(name, overhead) gives it a VMI reporting that overhead;
    vms.read(name) / vms.selector select and read them."""
    custom = client.CustomObjectsApi(kube_admin)
    run = uuid.uuid4().hex[:8]
    created = {"virtualmachines": [], "virtualmachineinstances": []}

    class Vms(object):
        selector = "overcommit.test/run=" + run

        @staticmethod
        def make(domain, labels=None, annotations=None, template_annotations=None, instancetype=None):
            name = "oc-it-vm-%s-%d" % (run, len(created["virtualmachines"]))
            spec = {"runStrategy": "Halted", "template": {"spec": {"domain": copy.deepcopy(domain)}}}
            spec["template"]["spec"]["domain"].setdefault("devices", {})
            if template_annotations:
                spec["template"]["metadata"] = {"annotations": template_annotations}
            if instancetype:
                spec["instancetype"] = {"kind": "VirtualMachineClusterInstancetype", "name": instancetype}
            custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "virtualmachines", {
                "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
                "metadata": {"name": name, "labels": dict(labels or {}, **{"overcommit.test/run": run}),
                             "annotations": annotations or {}},
                "spec": spec})
            created["virtualmachines"].append(name)
            return name

        @staticmethod
        def running(name, overhead):
            vm = Vms.read(name)
            custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "virtualmachineinstances", {
                "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance", "metadata": {"name": name},
                "spec": vm["spec"]["template"]["spec"]})
            created["virtualmachineinstances"].append(name)
            custom.patch_namespaced_custom_object_status(GROUP, VERSION, NAMESPACE, "virtualmachineinstances", name,
                                                         {"status": {"memory": {"memoryOverhead": overhead}}})

        @staticmethod
        def read(name):
            return custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "virtualmachines", name)

        @staticmethod
        def domain(name):
            return Vms.read(name)["spec"]["template"]["spec"]["domain"]

    yield Vms
    for plural, names in created.items():
        for name in names:
            custom.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, plural, name)


def domain(cores=2, guest="2Gi", requests=None, limits=None, **cpu):
    spec = {"cpu": dict(cpu, cores=cores), "memory": {"guest": guest}, "devices": {"autoattachGraphicsDevice": False}}
    if requests or limits:
        spec["resources"] = dict(({"requests": requests} if requests else {}), **({"limits": limits} if limits else {}))
    return spec


def resources(run_as, names=None, identity="admin", **args):
    options = {"check": args.pop("check", False), "diff": args.pop("diff", False)}
    args = dict(args, namespace=NAMESPACE)
    if names:
        args["names"] = names
    return run_as(identity, "kubevirt_vm_resources", args, **options)


def test_audit_lists_exactly_the_risky_vms_and_changes_nothing(run_as, vms):
    limit_is_guest = vms.make(domain(guest="2Gi", limits={"memory": "2Gi"}))
    tight_limit = vms.make(domain(guest="2Gi", limits={"memory": "2100Mi"}))
    dedicated_on_ratio = vms.make(domain(), labels={CLASS: "dedicated"})
    fake_annotation = vms.make(domain(), template_annotations={"kubevirt.io/allow-memory-overcommit": "true"})
    request_above_guest = vms.make(domain(guest="1Gi", requests={"memory": "2Gi"}))
    sane = vms.make(domain(guest="2Gi", requests={"memory": "1Gi"}, limits={"memory": "3Gi", "cpu": "1"}))
    before = dict((name, vms.read(name)["metadata"]["resourceVersion"]) for name in
                  (limit_is_guest, tight_limit, dedicated_on_ratio, fake_annotation, request_above_guest, sane))

    audit = run_as("admin", "kubevirt_vm_resources", {"label_selector": vms.selector, "mode": "audit"})
    assert not audit.get("failed"), audit
    assert audit["changed"] is False
    checks = dict((r["name"].split("/")[1], [f["check"] for f in r["findings"]]) for r in audit["vms"])
    assert checks == {
        limit_is_guest: ["memory_limit_equals_guest"],
        tight_limit: ["memory_limit_below_guest_plus_overhead"],
        dedicated_on_ratio: ["dedicated_cpu_overcommitted"],
        fake_annotation: ["nonexistent_annotation"],
        request_above_guest: ["memory_request_above_guest"],
        sane: [],
    }
    assert sorted(audit["risky"]) == sorted("lab/" + n for n in (limit_is_guest, tight_limit, dedicated_on_ratio,
                                                                 fake_annotation, request_above_guest))
    assert dict((name, vms.read(name)["metadata"]["resourceVersion"]) for name in before) == before


def test_shared_template_sets_only_the_managed_fields_and_is_idempotent(run_as, vms):
    name = vms.make(domain(cores=4, guest="4Gi", requests={"cpu": "3"}, limits={"memory": "4Gi"}),
                    labels={"team": "web"}, annotations={"example.com/owner": "web"})
    result = resources(run_as, [name], cpu_request="ratio", cpu_limit="2", memory_limit="auto",
                       memory_request="3Gi", balloon=False, diff=True)
    assert not result.get("failed"), result
    vm_result = result["vms"][0]
    assert vm_result["changed"] is True
    # The 3Gi request/512 + 220Mi + 4 x 8Mi + 8Mi iothread, no video device; the limit in whole Mi above it.
    assert vm_result["launcher_overhead"] == "266Mi"
    assert vm_result["after"]["memory_limit"] == "4363Mi"
    assert result["diff"][0]["before"]["memory_limit"] == "4Gi"
    spec = vms.domain(name)
    assert spec["resources"] == {"requests": {"memory": "3Gi"}, "limits": {"cpu": "2", "memory": "4363Mi"}}
    assert spec["devices"] == {"autoattachGraphicsDevice": False, "autoattachMemBalloon": False}
    assert spec["cpu"] == {"cores": 4} and spec["memory"] == {"guest": "4Gi"}
    vm = vms.read(name)
    assert vm["metadata"]["labels"]["team"] == "web" and vm["metadata"]["annotations"] == {"example.com/owner": "web"}
    assert vm["spec"]["runStrategy"] == "Halted"

    again = resources(run_as, [name], cpu_request="ratio", cpu_limit="2", memory_limit="auto", memory_request="3Gi",
                      balloon=False)
    assert again["changed"] is False


def test_dedicated_class_gets_dedicated_cpus_and_is_never_overcommitted(run_as, vms):
    name = vms.make(domain(cores=2, guest="2Gi", requests={"memory": "1Gi"}))
    refused = resources(run_as, [name], vm_class="dedicated", cpu_request="1")
    assert refused["failed"] is True and "would overcommit a dedicated VM" in refused["vms"][0]["msg"]
    assert "resources" in vms.domain(name) and CLASS not in vms.read(name)["metadata"]["labels"]

    made = resources(run_as, [name], vm_class="dedicated")
    assert not made.get("failed"), made
    spec = vms.domain(name)
    assert spec["cpu"]["dedicatedCpuPlacement"] is True
    assert spec["resources"] == {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "2"}}
    assert vms.read(name)["metadata"]["labels"][CLASS] == "dedicated"

    moved = resources(run_as, [name], vm_class="shared")
    assert moved["failed"] is True and "refusing to move a dedicated VM" in moved["vms"][0]["msg"]
    assert vms.domain(name)["cpu"]["dedicatedCpuPlacement"] is True


def test_rule_breaking_templates_are_caught_before_the_api_call(vms, lab):
    low_limit = vms.make(domain(guest="2Gi"))
    fine = vms.make(domain(guest="8Gi"))
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_ADMIN"])
    with ApiProxy(server, ca_cert) as proxy:
        bad_quantity = run_module("kubevirt_vm_resources", {"namespace": NAMESPACE, "names": [low_limit],
                                                            "memory_limit": "2GB", "host": proxy.url, "api_key": token})
    assert bad_quantity["failed"] is True and bad_quantity["field"] == "memory_limit"
    assert proxy.requests == []

    with ApiProxy(server, ca_cert) as proxy:
        per_vm = run_module("kubevirt_vm_resources", {"namespace": NAMESPACE, "names": [low_limit, fine],
                                                      "memory_limit": "2200Mi", "host": proxy.url, "api_key": token})
    assert per_vm["failed"] is True
    assert per_vm["vms"][0]["field"] == "memory_limit" and "at least guest + overhead" in per_vm["vms"][0]["msg"]
    assert per_vm["vms"][1]["failed"] is True  # 2200Mi is under 8Gi as well
    assert proxy.writes() == []
    assert "resources" not in vms.domain(low_limit)


def test_one_vm_refused_does_not_stop_the_others(run_as, vms):
    burstable_small = vms.make(domain(cores=1, guest="1Gi"), labels={CLASS: "burstable"})
    shared = vms.make(domain(cores=4, guest="1Gi"))
    result = resources(run_as, [burstable_small, shared, "oc-it-no-such-vm"], cpu_limit="2")
    assert result["failed"] is True
    by_name = dict((r["name"], r) for r in result["vms"])
    assert "needs cpu_request (its baseline)" in by_name["lab/" + burstable_small]["msg"]
    assert by_name["lab/" + shared]["changed"] is True
    assert by_name["lab/oc-it-no-such-vm"]["msg"] == "VM lab/oc-it-no-such-vm not found"
    assert vms.domain(shared)["resources"]["limits"] == {"cpu": "2"}


def test_a_running_vm_uses_the_reported_overhead_and_reports_the_restart(run_as, vms):
    name = vms.make(domain(cores=2, guest="2Gi"))
    vms.running(name, "500Mi")
    result = resources(run_as, [name], memory_limit="auto", cpu_limit="1")
    assert not result.get("failed"), result
    vm_result = result["vms"][0]
    assert vm_result["running"] is True and vm_result["launcher_overhead"] == "500Mi"
    assert vms.domain(name)["resources"]["limits"] == {"cpu": "1", "memory": "2548Mi"}
    assert vm_result["restart_required"] is True
    assert sorted(vm_result["restart_reasons"]) == ["cpu_limit", "memory_limit"]


def test_check_mode_is_a_server_side_dry_run(vms, lab):
    name = vms.make(domain())
    before = vms.read(name)
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_ADMIN"])
    with ApiProxy(server, ca_cert) as proxy:
        result = run_module("kubevirt_vm_resources", {"namespace": NAMESPACE, "names": [name], "cpu_limit": "1",
                                                      "host": proxy.url, "api_key": token}, check=True)
    assert result["changed"] is True and result["vms"][0]["after"]["cpu_limit"] == "1"
    assert [w["query"].get("dryRun") for w in proxy.writes()] == [["All"]]
    assert vms.read(name) == before


def test_a_writer_racing_the_module_loses_nothing(vms, lab, kube_admin):
    name = vms.make(domain())
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_ADMIN"])
    custom = client.CustomObjectsApi(kube_admin)
    raced = []

    def other_writer_first(request):
        if request["method"] == "PATCH" and not raced:
            raced.append(True)
            custom.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "virtualmachines", name, {
                "spec": {"template": {"spec": {"domain": {"cpu": {"model": "host-passthrough"}}}}}})

    with ApiProxy(server, ca_cert, before_forward=other_writer_first) as proxy:
        result = run_module("kubevirt_vm_resources", {"namespace": NAMESPACE, "names": [name], "cpu_limit": "1",
                                                      "host": proxy.url, "api_key": token})
    assert not result.get("failed"), result
    assert result["vms"][0]["conflicts"] == 1
    spec = vms.domain(name)
    assert spec["cpu"]["model"] == "host-passthrough" and spec["resources"]["limits"] == {"cpu": "1"}


def test_least_privilege_identity_succeeds_and_an_unbound_one_fails_clearly(run_as, vms):
    name = vms.make(domain())
    assert resources(run_as, [name], identity="operator", cpu_limit="1")["changed"] is True
    denied = resources(run_as, [name], identity="unbound", cpu_limit="2")
    assert denied["failed"] is True and "forbidden" in denied["msg"] and "ClusterRole" in denied["msg"]
    assert vms.domain(name)["resources"]["limits"] == {"cpu": "1"}


def test_a_vm_with_an_instancetype_is_refused(run_as, vms):
    name = vms.make({"devices": {}}, instancetype="u1.medium")
    result = resources(run_as, [name], cpu_limit="1")
    assert result["failed"] is True and "instancetype u1.medium" in result["vms"][0]["msg"]
