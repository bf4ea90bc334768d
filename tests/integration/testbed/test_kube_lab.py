"""The lab's kube-apiserver is real: optimistic concurrency, KubeVirt schema
validation and RBAC all answer as a production server would."""

import copy
import uuid

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

pytestmark = pytest.mark.xdist_group("lab-node-a")

VM_TEMPLATE = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachine",
    "metadata": {"namespace": "lab"},
    "spec": {
        "runStrategy": "Halted",
        "template": {"spec": {"domain": {"cpu": {"cores": 2}, "memory": {"guest": "1Gi"}, "devices": {}}}},
    },
}


def test_stale_resource_version_is_refused_and_a_fresh_one_succeeds(kube_admin):
    core = client.CoreV1Api(kube_admin)
    node = core.read_node("lab-node-a")
    stale_version = node.metadata.resource_version
    core.patch_node("lab-node-a", {"metadata": {"labels": {"lab.test/touch": uuid.uuid4().hex[:8]}}})

    taints = [{"key": "lab.test/gate", "effect": "NoSchedule"}]
    with pytest.raises(ApiException) as conflict:
        core.patch_node("lab-node-a", {"metadata": {"resourceVersion": stale_version}, "spec": {"taints": taints}})
    assert conflict.value.status == 409

    fresh = core.read_node("lab-node-a").metadata.resource_version
    patched = core.patch_node("lab-node-a", {"metadata": {"resourceVersion": fresh}, "spec": {"taints": taints}})
    assert [t.key for t in patched.spec.taints] == ["lab.test/gate"]
    core.patch_node("lab-node-a", {"spec": {"taints": None}, "metadata": {"labels": {"lab.test/touch": None}}})


def test_kubevirt_schema_accepts_a_valid_vm_and_rejects_an_invalid_one(kube_admin):
    custom = client.CustomObjectsApi(kube_admin)
    valid = copy.deepcopy(VM_TEMPLATE)
    valid["metadata"]["name"] = "schema-ok-" + uuid.uuid4().hex[:6]
    created = custom.create_namespaced_custom_object("kubevirt.io", "v1", "lab", "virtualmachines", valid)
    assert created["metadata"]["uid"]
    custom.delete_namespaced_custom_object("kubevirt.io", "v1", "lab", "virtualmachines", valid["metadata"]["name"])

    invalid = copy.deepcopy(VM_TEMPLATE)
    invalid["metadata"]["name"] = "schema-bad-" + uuid.uuid4().hex[:6]
    invalid["spec"]["template"]["spec"]["domain"]["cpu"]["cores"] = "two"
    with pytest.raises(ApiException) as rejected:
        custom.create_namespaced_custom_object("kubevirt.io", "v1", "lab", "virtualmachines", invalid)
    assert rejected.value.status == 422
    assert "cores" in rejected.value.body


def test_least_privilege_identity_is_denied_what_its_role_does_not_grant(kube_operator, kube_unbound):
    operator = client.CoreV1Api(kube_operator)
    assert operator.read_node("lab-node-b").metadata.name == "lab-node-b"
    with pytest.raises(ApiException) as denied:
        operator.delete_node("lab-node-b")
    assert denied.value.status == 403
    with pytest.raises(ApiException) as no_secrets:
        operator.list_namespaced_secret("lab")
    assert no_secrets.value.status == 403

    with pytest.raises(ApiException) as unbound:
        client.CoreV1Api(kube_unbound).read_node("lab-node-b")
    assert unbound.value.status == 403
