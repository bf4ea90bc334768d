"""The pure planning of VM classes as KubeVirt instancetypes and of the move
of VMs onto them: definitions checked naming the field, the objects and
patches, and what a VM becomes."""

import base64
import json

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import memory
from ansible_collections.overcommit.control.plugins.module_utils.k8s import merge_patch
from ansible_collections.overcommit.control.plugins.module_utils.k8s.static import (
    instancetypes, vm_instancetype, vm_resources)

GI = 2 ** 30
DEDICATED = {"name": "dedicated-2c2g", "class": "dedicated", "cpus": 2, "memory": "2Gi"}
SHARED = {"name": "shared-2c4g", "class": "shared", "cpus": 2, "memory": "4Gi", "memory_overcommit_percent": 25}
BURSTABLE = {"name": "burstable-2c1g", "class": "burstable", "cpus": 2, "memory": "1Gi", "baseline_cpus": 0.5}
NAMES = instancetypes.keys("overcommit.control/")


def checked(classes, state="present", max_percent=50):
    return instancetypes.check_request({"classes": classes, "state": state, "prefix": "overcommit.control/",
                                        "max_memory_overcommit_percent": max_percent})


def refused_field(classes, **options):
    with pytest.raises(ValueRangeError) as caught:
        checked(classes, **options)
    return caught.value.field


def test_the_three_classes_pass_and_unset_suboptions_are_ignored():
    request = checked([DEDICATED, dict(SHARED, baseline_cpus=None), BURSTABLE])
    assert [d["class"] for d in request["definitions"]] == ["dedicated", "shared", "burstable"]
    assert request["definitions"][1]["overcommit_percent"] == 25
    assert request["definitions"][2]["baseline"] == 0.5


@pytest.mark.parametrize("definition, field", [
    (dict(DEDICATED, memory_overcommit_percent=10), "classes[dedicated-2c2g].memory_overcommit_percent"),
    (dict(SHARED, memory_overcommit_percent=60), "classes[shared-2c4g].memory_overcommit_percent"),
    (dict(SHARED, memory_overcommit_percent=101), "classes[shared-2c4g].memory_overcommit_percent"),
    (dict(SHARED, memory_overcommit_percent=-1), "classes[shared-2c4g].memory_overcommit_percent"),
    (dict(BURSTABLE, baseline_cpus=None), "classes[burstable-2c1g].baseline_cpus"),
    (dict(BURSTABLE, baseline_cpus=2), "classes[burstable-2c1g].baseline_cpus"),
    (dict(SHARED, baseline_cpus=0.5), "classes[shared-2c4g].baseline_cpus"),
    (dict(SHARED, cpus=0), "classes[shared-2c4g].cpus"),
    (dict(SHARED, memory="lots"), "classes[shared-2c4g].memory"),
    (dict(SHARED, memory="512Ki"), "classes[shared-2c4g].memory"),
    (dict(SHARED, **{"class": "gold"}), "classes[shared-2c4g].class"),
    (dict(SHARED, name="Shared_2c"), "classes[0].name"),
    (dict(SHARED, colour="blue"), "classes[0].colour"),
])
def test_bad_definitions_are_refused_naming_the_field(definition, field):
    assert refused_field([definition]) == field


def test_a_name_given_twice_and_bad_options_are_refused():
    assert refused_field([SHARED, SHARED]) == "classes[1].name"
    assert refused_field([]) == "classes"
    assert refused_field([SHARED], max_percent=100) == "max_memory_overcommit_percent"
    # A higher bound lets more overcommit through.
    assert checked([dict(SHARED, memory_overcommit_percent=60)], max_percent=75)["definitions"][0]


def test_removing_needs_only_the_name():
    assert [d["name"] for d in checked([{"name": "shared-2c4g"}], state="absent")["definitions"]] == ["shared-2c4g"]


def test_overcommit_percent_is_not_the_kubevirt_cr_scale():
    # overcommitPercent 25: the launcher requests 3/4 of the guest; on the CR's scale the guest sees 133 %.
    assert memory.request_for_overcommit_percent(4 * GI, 25) == 3 * GI
    assert memory.memory_overcommit_scale(25) == 133.3
    assert memory.memory_overcommit_scale(50) == 200.0
    assert memory.memory_overcommit_scale(0) == 100.0
    resources = instancetypes.resources_of(checked([SHARED])["definitions"][0])
    assert resources["memory_request"] == "3Gi" and resources["equivalent_memory_overcommit"] == 133.3


def test_objects_of_each_class():
    dedicated, shared, burstable = [instancetypes.wanted_objects(d, NAMES) for d in
                                    checked([DEDICATED, SHARED, BURSTABLE])["definitions"]]
    assert dedicated["instancetype"]["spec"]["cpu"] == {"guest": 2, "dedicatedCPUPlacement": True,
                                                        "isolateEmulatorThread": True}
    assert "overcommitPercent" not in dedicated["instancetype"]["spec"]["memory"]
    assert shared["instancetype"]["spec"] == {"cpu": {"guest": 2}, "memory": {"guest": "4Gi", "overcommitPercent": 25},
                                              "annotations": {"overcommit.control/class": "shared"}}
    assert burstable["instancetype"]["spec"]["annotations"] == {"overcommit.control/class": "burstable",
                                                                "overcommit.control/baseline-cpus": "0.5"}
    assert burstable["preference"]["spec"]["requirements"] == {"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}}
    assert burstable["preference"]["labels"] == {"overcommit.control/class": "burstable"}
    credit_bank = instancetypes.resources_of(checked([BURSTABLE])["definitions"][0])["credit_bank"]
    assert credit_bank == 0.5 * 24 * 60


def server_copy(definition, part="instancetype"):
    wanted = instancetypes.wanted_objects(checked([definition])["definitions"][0], NAMES)[part]
    obj = instancetypes.new_object("VirtualMachineClusterInstancetype", definition["name"], wanted)
    obj["metadata"].update(resourceVersion="7", uid="u", labels=dict(obj["metadata"]["labels"], team="a"))
    return obj


def patch_for(current, definition, part="instancetype"):
    wanted = instancetypes.wanted_objects(checked([definition])["definitions"][0], NAMES)[part]
    return instancetypes.update_patch("VirtualMachineClusterInstancetype", current, wanted, NAMES)


def test_an_object_as_wanted_needs_no_patch_whatever_the_spelling():
    current = server_copy(SHARED)
    assert patch_for(current, SHARED) is None
    assert patch_for(current, dict(SHARED, memory="4096Mi")) is None
    assert patch_for(server_copy(BURSTABLE, "preference"), BURSTABLE, "preference") is None


def test_a_changed_definition_patches_the_spec_and_owned_keys_only():
    current = server_copy(BURSTABLE)
    patch = patch_for(current, dict(BURSTABLE, baseline_cpus=None, memory_overcommit_percent=20,
                                    **{"class": "shared"}))
    assert patch["spec"] == {"memory": {"overcommitPercent": 20},
                             "annotations": {"overcommit.control/class": "shared",
                                             "overcommit.control/baseline-cpus": None}}
    assert patch["metadata"] == {"labels": {"overcommit.control/class": "shared"},
                                 "annotations": {"overcommit.control/class": "shared",
                                                 "overcommit.control/baseline-cpus": None}}


def test_an_object_not_made_by_the_collection_is_refused():
    current = server_copy(SHARED)
    del current["metadata"]["labels"]["overcommit.control/class"]
    with pytest.raises(instancetypes.NotOurs, match="not made by this collection"):
        patch_for(current, SHARED)


# Moving VMs onto instancetypes.

def vm_request(**given):
    params = {"mode": "enforce", "vm_class": None, "floor": 0.25, "force": False, "prefix": "overcommit.control/",
              "names": [], "namespace": "ns"}
    params.update(given)
    return vm_resources.check_request(params)


def inline_vm(cpu=None, labels=None):
    domain = {"cpu": dict(cpu or {}, cores=2, model="host-passthrough"), "memory": {"guest": "2Gi"},
              "resources": {"requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"},
                            "limits": {"memory": "3Gi"}},
              "devices": {"autoattachGraphicsDevice": False}}
    return {"metadata": {"name": "vm", "namespace": "ns", "labels": labels or {}, "resourceVersion": "1"},
            "spec": {"template": {"spec": {"domain": domain}}}}


def instancetype(definition):
    wanted = instancetypes.wanted_objects(checked([definition])["definitions"][0], NAMES)["instancetype"]
    return instancetypes.new_object("VirtualMachineClusterInstancetype", definition["name"], wanted)


def offer(definition):
    return vm_instancetype.offer(instancetype(definition), "overcommit.control/class")


def test_options_an_instancetype_sets_are_refused_with_it():
    for option, value in (("cpu_limit", "1"), ("memory_guest", "2Gi"), ("vm_class", "shared")):
        with pytest.raises(ValueRangeError) as caught:
            vm_request(instancetype="shared-2c4g", **{option: value})
        assert caught.value.field == option
    with pytest.raises(ValueRangeError) as caught:
        vm_request(preference="shared-2c4g")
    assert caught.value.field == "preference"
    with pytest.raises(ValueRangeError) as caught:
        vm_request(instancetype="Not A Name")
    assert caught.value.field == "instancetype"


def test_the_move_sets_the_references_removes_what_conflicts_and_needs_a_restart():
    request = vm_request(instancetype="shared-2c4g", preference="shared-2c4g")
    vmi = {"status": {}}
    plan = vm_resources.plan(inline_vm(), vmi, request, {"current": None, "target": offer(SHARED)})
    spec = plan["patch"]["spec"]
    assert spec["instancetype"] == {"kind": "VirtualMachineClusterInstancetype", "name": "shared-2c4g",
                                    "revisionName": None}
    assert spec["preference"]["name"] == "shared-2c4g"
    # The topology goes, the CPU model stays; other resources (ephemeral storage) stay, limits left empty go.
    assert spec["template"]["spec"]["domain"] == {
        "cpu": {"cores": None}, "memory": None,
        "resources": {"requests": {"cpu": None, "memory": None}, "limits": None}}
    assert plan["patch"]["metadata"] == {"labels": {"overcommit.control/class": "shared"}}
    assert plan["after"]["memory_request"] == "3Gi" and plan["after"]["instancetype"]["name"] == "shared-2c4g"
    assert plan["restart_required"] and "instancetype" in plan["restart_reasons"]
    assert "spec.template.spec.domain.memory" in plan["removed_fields"]

    # Applied, the same move plans nothing.
    moved = merge_patch.merge(inline_vm(), plan["patch"])
    moved["spec"]["instancetype"] = {"kind": "VirtualMachineClusterInstancetype", "name": "shared-2c4g",
                                     "revisionName": "vm-shared-2c4g-1"}
    again = vm_resources.plan(moved, vmi, request, {"current": offer(SHARED), "target": offer(SHARED)})
    assert again["patch"] is None and not again["restart_required"]


def test_a_stopped_vm_moves_without_a_restart_and_a_dedicated_one_only_when_forced():
    plan = vm_resources.plan(inline_vm(), None, vm_request(instancetype="shared-2c4g"),
                             {"current": None, "target": offer(SHARED)})
    assert plan["patch"] and not plan["restart_required"]
    pinned = inline_vm(cpu={"dedicatedCpuPlacement": True})
    with pytest.raises(vm_resources.VmRefusal, match="dedicated VM"):
        vm_resources.plan(pinned, None, vm_request(instancetype="shared-2c4g"), {"target": offer(SHARED)})
    forced = vm_resources.plan(pinned, None, vm_request(instancetype="shared-2c4g", force=True),
                               {"target": offer(SHARED)})
    assert forced["patch"]["spec"]["template"]["spec"]["domain"]["cpu"] == {"cores": None,
                                                                            "dedicatedCpuPlacement": None}
    onto_dedicated = vm_resources.plan(pinned, None, vm_request(instancetype="dedicated-2c2g"),
                                       {"target": offer(DEDICATED)})
    assert onto_dedicated["after"]["dedicated_cpu_placement"] is True


def test_an_instancetype_vm_is_read_through_its_instancetype_or_the_revision_it_keeps():
    obj = instancetype(BURSTABLE)
    revision = {"kind": "ControllerRevision", "metadata": {"name": "r"}, "data": obj}
    assert vm_instancetype.object_of(revision) == obj
    older = {"kind": "ControllerRevision", "metadata": {"name": "r"},
             "data": {"apiVersion": "instancetype.kubevirt.io/v1beta1",
                      "spec": base64.b64encode(json.dumps(obj["spec"]).encode()).decode()}}
    assert vm_instancetype.object_of(older)["spec"] == obj["spec"]
    given = vm_instancetype.offer(obj, "overcommit.control/class")
    assert (given["class"], given["vcpus"], given["guest"]) == ("burstable", 2, GI)
    assert vm_instancetype.source_path("ns", {"name": "x", "revisionName": "r"}, None) == \
        "/apis/apps/v1/namespaces/ns/controllerrevisions/r"
    assert vm_instancetype.source_path("ns", {"name": "x", "kind": "virtualmachineinstancetype"}, None) == \
        "/apis/instancetype.kubevirt.io/v1beta1/namespaces/ns/virtualmachineinstancetypes/x"
    # Dedicated placement makes a VM dedicated whatever the label says.
    pinned = instancetype(dict(SHARED, memory_overcommit_percent=0))
    pinned["spec"]["cpu"]["dedicatedCPUPlacement"] = True
    assert vm_instancetype.offer(pinned, "overcommit.control/class")["class"] == "dedicated"
    # The audit sees an overcommitted dedicated instancetype.
    pinned["spec"]["memory"]["overcommitPercent"] = 10
    facts = vm_instancetype.facts_on(vm_resources.vm_facts(inline_vm(), None, "overcommit.control/class"),
                                     vm_instancetype.offer(pinned, "overcommit.control/class"))
    assert [f["check"] for f in vm_resources.audit(facts)] == ["dedicated_memory_overcommitted"]
