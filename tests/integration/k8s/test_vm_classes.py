"""VM classes as KubeVirt products on the lab's real kube-apiserver, whose
KubeVirt CRD schemas validate every object: the playbook vm_classes.yml (role
vm_classes, module kubevirt_instancetype) makes the cluster instancetypes and
preferences, a second run changes nothing, check mode stores nothing, bad
definitions are refused before any write; and kubevirt_vm_resources moves a
running VM onto an instancetype, reporting the restart it needs. These run
without KubeVirt's controllers (they would act on the other tests' stand-in
VMIs): the test reads what the modules wrote and said. What KubeVirt makes
of the move is tested on the lab's real KubeVirt
(tests/integration/kubevirt/test_instancetypes.py)."""

import uuid

import pytest
from kubernetes import client

import test_kubevirt_vm_resources
from run_module import run_module, run_playbook
from test_kubevirt_vm_resources import CLASS, NAMESPACE, domain

pytestmark = pytest.mark.isolated

# VMs (and a VMI for a running one) made for the test and deleted afterwards.
vms = test_kubevirt_vm_resources.vms

IT_GROUP, IT_VERSION = "instancetype.kubevirt.io", "v1beta1"
PLURALS = ("virtualmachineclusterinstancetypes", "virtualmachineclusterpreferences")


@pytest.fixture
def products(kube_admin):
    """Three definitions with names unique to the test; their objects are
    deleted afterwards."""
    custom = client.CustomObjectsApi(kube_admin)
    run = uuid.uuid4().hex[:8]
    definitions = [
        {"name": "oc-it-%s-dedicated" % run, "class": "dedicated", "cpus": 2, "memory": "2Gi"},
        {"name": "oc-it-%s-shared" % run, "class": "shared", "cpus": 2, "memory": "4Gi",
         "memory_overcommit_percent": 25},
        {"name": "oc-it-%s-burstable" % run, "class": "burstable", "cpus": 2, "memory": "1Gi", "baseline_cpus": 0.5},
    ]

    class Products(object):
        classes = definitions

        @staticmethod
        def read(plural, name):
            try:
                return custom.get_cluster_custom_object(IT_GROUP, IT_VERSION, plural, name)
            except client.ApiException as exc:
                if exc.status == 404:
                    return None
                raise

        @staticmethod
        def make_foreign(name):
            """An instancetype of the name that the collection did not make."""
            custom.create_cluster_custom_object(IT_GROUP, IT_VERSION, PLURALS[0], {
                "apiVersion": "%s/%s" % (IT_GROUP, IT_VERSION), "kind": "VirtualMachineClusterInstancetype",
                "metadata": {"name": name}, "spec": {"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}}})

    yield Products
    for plural in PLURALS:
        for definition in definitions + [{"name": "oc-it-%s-foreign" % run}]:
            if Products.read(plural, definition["name"]) is not None:
                custom.delete_cluster_custom_object(IT_GROUP, IT_VERSION, plural, definition["name"])


def instancetype_module(lab, args, **options):
    return run_module("kubevirt_instancetype", dict(args, kubeconfig=lab["OVERCOMMIT_KUBECONFIG_ADMIN"]), **options)


def test_the_playbook_defines_the_classes_once_and_check_mode_stores_nothing(lab, products):
    checked = instancetype_module(lab, {"classes": products.classes}, check=True, diff=True)
    assert checked["changed"] and not checked.get("failed"), checked
    assert [d["after_header"] for d in checked["diff"]] == ["class " + d["name"] for d in products.classes]
    # The server validated the dry run against the CRD schemas and stored nothing.
    assert all(products.read(plural, d["name"]) is None for plural in PLURALS for d in products.classes)

    done = run_playbook("vm_classes.yml", {"classes": products.classes, "kubevirt_hosts": "localhost"},
                        env={"K8S_AUTH_KUBECONFIG": lab["OVERCOMMIT_KUBECONFIG_ADMIN"]})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "%s: shared, instancetype created, preference created" % products.classes[1]["name"] in done.stdout

    dedicated, shared, burstable = [products.read(PLURALS[0], d["name"]) for d in products.classes]
    assert dedicated["spec"]["cpu"] == {"guest": 2, "dedicatedCPUPlacement": True, "isolateEmulatorThread": True}
    assert "overcommitPercent" not in dedicated["spec"]["memory"]
    assert shared["spec"]["memory"] == {"guest": "4Gi", "overcommitPercent": 25}
    assert "dedicatedCPUPlacement" not in shared["spec"]["cpu"]
    assert burstable["spec"]["annotations"] == {CLASS: "burstable", "overcommit.control/baseline-cpus": "0.5"}
    assert [obj["metadata"]["labels"][CLASS] for obj in (dedicated, shared, burstable)] == [
        "dedicated", "shared", "burstable"]
    preference = products.read(PLURALS[1], products.classes[2]["name"])
    assert preference["spec"]["requirements"] == {"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}}

    again = instancetype_module(lab, {"classes": products.classes})
    assert not again["changed"] and not again.get("failed"), again
    shared_result = again["classes"][1]["resources"]
    # overcommitPercent 25: the launcher requests 3Gi of a 4Gi guest, 133 % on the KubeVirt CR's scale.
    assert (shared_result["memory_request"], shared_result["equivalent_memory_overcommit"]) == ("3Gi", 133.3)


def test_bad_definitions_are_refused_before_any_write_and_a_foreign_namesake_is_left_alone(lab, products):
    dedicated, shared, burstable = products.classes
    for definition, field in ((dict(dedicated, memory_overcommit_percent=10), "memory_overcommit_percent"),
                              (dict(shared, memory_overcommit_percent=80), "memory_overcommit_percent"),
                              (dict(burstable, baseline_cpus=4), "baseline_cpus")):
        result = instancetype_module(lab, {"classes": [shared, definition]})
        assert result["failed"] and result["field"] == "classes[%s].%s" % (definition["name"], field), result
        assert result["classes"] == []
    assert all(products.read(PLURALS[0], d["name"]) is None for d in products.classes)

    foreign = products.classes[0]["name"].replace("dedicated", "foreign")
    products.make_foreign(foreign)
    result = instancetype_module(lab, {"classes": [dict(shared, name=foreign), shared]})
    assert result["failed"] and "not made by this collection" in result["classes"][0]["msg"], result
    assert products.read(PLURALS[0], foreign)["spec"]["memory"] == {"guest": "1Gi"}
    assert result["classes"][1]["changed"] and products.read(PLURALS[0], shared["name"]) is not None


def test_a_running_vm_moved_onto_an_instancetype_needs_a_restart(lab, products, vms):
    created = instancetype_module(lab, {"classes": products.classes})
    assert created["changed"], created
    shared = products.classes[1]["name"]
    name = vms.make(domain(cores=2, guest="2Gi", requests={"memory": "1Gi"}, limits={"memory": "3Gi"}),
                    labels={CLASS: "shared"})
    vms.running(name, "300Mi")
    before = vms.read(name)
    move = {"namespace": NAMESPACE, "names": [name], "instancetype": shared, "preference": shared,
            "kubeconfig": lab["OVERCOMMIT_KUBECONFIG_ADMIN"]}

    audit = run_module("kubevirt_vm_resources", dict(move, mode="audit"))
    plan = audit["vms"][0]["move"]
    assert plan["restart_required"] and plan["after"]["memory_request"] == "3Gi", audit
    assert "spec.template.spec.domain.memory" in plan["removed_fields"]
    checked = run_module("kubevirt_vm_resources", move, check=True, diff=True)
    assert checked["changed"] and checked["diff"][0]["after"]["instancetype"]["name"] == shared, checked
    assert vms.read(name)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

    moved = run_module("kubevirt_vm_resources", move)
    result = moved["vms"][0]
    assert result["changed"] and result["restart_required"] and "instancetype" in result["restart_reasons"], moved
    vm = vms.read(name)
    assert vm["spec"]["instancetype"] == {"kind": "VirtualMachineClusterInstancetype", "name": shared}
    assert vm["spec"]["preference"] == {"kind": "VirtualMachineClusterPreference", "name": shared}
    template = vm["spec"]["template"]["spec"]["domain"]
    assert "cpu" not in template and "memory" not in template and not template.get("resources"), template
    assert run_module("kubevirt_vm_resources", move)["changed"] is False

    # A template for it now is refused, with what it has from the instancetype.
    refused = run_module("kubevirt_vm_resources", {"namespace": NAMESPACE, "names": [name], "cpu_limit": "1",
                                                   "kubeconfig": lab["OVERCOMMIT_KUBECONFIG_ADMIN"]})
    assert refused["failed"] and refused["vms"][0]["effective"]["memory_request"] == "3Gi", refused
    assert refused["vms"][0]["effective"]["instancetype"]["name"] == shared
