"""kubevirt_config against the lab's real kube-apiserver with KubeVirt's own
CRD schema, run with ansible-playbook. Each test creates its KubeVirt CR in
the lab namespace under a unique name and deletes it afterwards."""

import uuid

import pytest
from kubernetes import client

from apiproxy import ApiProxy, kubeconfig_parts
from run_module import run_module

pytestmark = pytest.mark.isolated

NAMESPACE = "lab"
FOREIGN_CONFIGURATION = {"developerConfiguration": {"featureGates": ["Snapshot"]}, "imagePullPolicy": "IfNotPresent"}


@pytest.fixture
def kubevirt_cr(kube_admin):
    custom = client.CustomObjectsApi(kube_admin)
    name = "oc-it-kv-" + uuid.uuid4().hex[:8]
    custom.create_namespaced_custom_object("kubevirt.io", "v1", NAMESPACE, "kubevirts", {
        "apiVersion": "kubevirt.io/v1", "kind": "KubeVirt", "metadata": {"name": name},
        "spec": {"configuration": FOREIGN_CONFIGURATION}})

    def read():
        return custom.get_namespaced_custom_object("kubevirt.io", "v1", NAMESPACE, "kubevirts", name)

    def patch(body):
        custom.patch_namespaced_custom_object("kubevirt.io", "v1", NAMESPACE, "kubevirts", name, body)

    yield {"name": name, "read": read, "patch": patch}
    custom.delete_namespaced_custom_object("kubevirt.io", "v1", NAMESPACE, "kubevirts", name)


def configure(run_as, cr, identity="admin", **args):
    options = {"check": args.pop("check", False), "diff": args.pop("diff", False)}
    return run_as(identity, "kubevirt_config", dict({"namespace": NAMESPACE, "name": cr["name"]}, **args), **options)


def configuration(cr):
    return cr["read"]()["spec"]["configuration"]


def test_sets_the_model_keeps_other_settings_and_is_idempotent(run_as, kubevirt_cr):
    selector = {"matchLabels": {"tier": "shared"}}
    result = configure(run_as, kubevirt_cr, cpu_allocation_ratio=8, memory_overcommit=120,
                       auto_cpu_limit_namespace_selector=selector, vm_rollout_strategy="LiveUpdate", diff=True)
    assert not result.get("failed"), result
    assert result["changed"] is True
    assert result["before"]["cpu_allocation_ratio"] is None
    assert result["effective"] == {"cpu_allocation_ratio": 8, "memory_overcommit": 120,
                                   "auto_cpu_limit_namespace_selector": selector, "vm_rollout_strategy": "LiveUpdate"}
    assert result["diff"]["after"]["memory_overcommit"] == 120
    stored = configuration(kubevirt_cr)
    assert stored["developerConfiguration"] == {"featureGates": ["Snapshot"], "cpuAllocationRatio": 8,
                                                "memoryOvercommit": 120}
    assert stored["imagePullPolicy"] == "IfNotPresent"
    assert stored["autoCPULimitNamespaceLabelSelector"] == selector
    assert stored["vmRolloutStrategy"] == "LiveUpdate"

    again = configure(run_as, kubevirt_cr, cpu_allocation_ratio=8, memory_overcommit=120,
                      auto_cpu_limit_namespace_selector=selector, vm_rollout_strategy="LiveUpdate")
    assert again["changed"] is False


def test_a_new_selector_replaces_the_old_one_and_can_be_cleared(run_as, kubevirt_cr):
    configure(run_as, kubevirt_cr, auto_cpu_limit_namespace_selector={"matchLabels": {"a": "1", "b": "2"}})
    replaced = configure(run_as, kubevirt_cr, auto_cpu_limit_namespace_selector={
        "matchLabels": {"c": "3"}, "matchExpressions": [{"key": "d", "operator": "Exists"}]})
    assert replaced["changed"] is True
    assert configuration(kubevirt_cr)["autoCPULimitNamespaceLabelSelector"] == {
        "matchLabels": {"c": "3"}, "matchExpressions": [{"key": "d", "operator": "Exists"}]}
    cleared = configure(run_as, kubevirt_cr, clear_auto_cpu_limit_namespace_selector=True)
    assert cleared["changed"] is True
    assert "autoCPULimitNamespaceLabelSelector" not in configuration(kubevirt_cr)
    assert configure(run_as, kubevirt_cr, clear_auto_cpu_limit_namespace_selector=True)["changed"] is False


def test_cleared_settings_leave_the_cr_as_it_was_before_they_were_set(run_as, kubevirt_cr):
    before = kubevirt_cr["read"]()["spec"]
    set_ = configure(run_as, kubevirt_cr, cpu_allocation_ratio=6, vm_rollout_strategy="Stage")
    assert set_["before"]["cpu_allocation_ratio"] is None and set_["changed"] is True, set_
    cleared = configure(run_as, kubevirt_cr, clear=["cpu_allocation_ratio", "vm_rollout_strategy"])
    assert cleared["changed"] is True and cleared["effective"]["cpu_allocation_ratio"] == 10, cleared
    assert kubevirt_cr["read"]()["spec"] == before
    assert configure(run_as, kubevirt_cr, clear=["cpu_allocation_ratio", "memory_overcommit"])["changed"] is False
    refused = configure(run_as, kubevirt_cr, clear=["cpu_allocation_ratio"], cpu_allocation_ratio=4)
    assert refused["failed"] is True and refused["field"] == "clear", refused


def test_an_invalid_value_already_on_the_cr_is_reported_as_ignored_and_can_be_fixed(run_as, kubevirt_cr):
    kubevirt_cr["patch"]({"spec": {"configuration": {"developerConfiguration": {"cpuAllocationRatio": 0}}}})
    looked = configure(run_as, kubevirt_cr)
    assert looked["changed"] is False
    assert looked["effective"]["cpu_allocation_ratio"].startswith("ignored by KubeVirt")
    fixed = configure(run_as, kubevirt_cr, cpu_allocation_ratio=4)
    assert fixed["effective"]["cpu_allocation_ratio"] == 4
    assert configuration(kubevirt_cr)["developerConfiguration"]["cpuAllocationRatio"] == 4


@pytest.mark.parametrize("args,field", [
    ({"cpu_allocation_ratio": 0}, "cpu_allocation_ratio"),
    ({"memory_overcommit": 5}, "memory_overcommit"),
    ({"auto_cpu_limit_namespace_selector": {}}, "auto_cpu_limit_namespace_selector"),
    ({"auto_cpu_limit_namespace_selector": {"matchExpressions": [{"key": "a", "operator": "Maybe"}]}},
     "auto_cpu_limit_namespace_selector.matchExpressions[0].operator"),
    ({"auto_cpu_limit_namespace_selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
     "auto_cpu_limit_namespace_selector.matchExpressions[0].values"),
])
def test_invalid_values_are_refused_before_any_api_call(kubevirt_cr, lab, args, field):
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_ADMIN"])
    with ApiProxy(server, ca_cert) as proxy:
        result = run_module("kubevirt_config", dict(args, namespace=NAMESPACE, name=kubevirt_cr["name"],
                                                    host=proxy.url, api_key=token))
    assert result["failed"] is True and result["field"] == field, result
    assert proxy.requests == []
    assert configuration(kubevirt_cr) == FOREIGN_CONFIGURATION


def test_check_mode_is_a_server_side_dry_run(kubevirt_cr, lab):
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_ADMIN"])
    with ApiProxy(server, ca_cert) as proxy:
        result = run_module("kubevirt_config", {"namespace": NAMESPACE, "name": kubevirt_cr["name"], "host": proxy.url,
                                                "api_key": token, "cpu_allocation_ratio": 6}, check=True)
    assert result["changed"] is True and result["after"]["cpu_allocation_ratio"] == 6
    assert [w["query"].get("dryRun") for w in proxy.writes()] == [["All"]]
    assert configuration(kubevirt_cr) == FOREIGN_CONFIGURATION


def test_least_privilege_identity_succeeds_and_an_unbound_one_fails_clearly(run_as, kubevirt_cr):
    assert configure(run_as, kubevirt_cr, identity="operator", cpu_allocation_ratio=5)["changed"] is True
    denied = configure(run_as, kubevirt_cr, identity="unbound", cpu_allocation_ratio=7)
    assert denied["failed"] is True and "forbidden" in denied["msg"] and "ClusterRole" in denied["msg"]
    assert configuration(kubevirt_cr)["developerConfiguration"]["cpuAllocationRatio"] == 5


def test_without_a_name_more_than_one_cr_is_an_error_naming_them(run_as, kubevirt_cr, kube_admin):
    custom = client.CustomObjectsApi(kube_admin)
    other = "oc-it-kv-" + uuid.uuid4().hex[:8]
    custom.create_namespaced_custom_object("kubevirt.io", "v1", NAMESPACE, "kubevirts", {
        "apiVersion": "kubevirt.io/v1", "kind": "KubeVirt", "metadata": {"name": other}, "spec": {}})
    try:
        result = run_as("admin", "kubevirt_config", {"namespace": NAMESPACE, "cpu_allocation_ratio": 3})
    finally:
        custom.delete_namespaced_custom_object("kubevirt.io", "v1", NAMESPACE, "kubevirts", other)
    assert result["failed"] is True
    assert "expected one KubeVirt CR in namespace lab" in result["msg"] and other in result["msg"]
    assert "cpuAllocationRatio" not in configuration(kubevirt_cr)["developerConfiguration"]
