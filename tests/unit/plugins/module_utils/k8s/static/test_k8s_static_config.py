import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import allocation
from ansible_collections.overcommit.control.plugins.module_utils.k8s import merge_patch, quantity
from ansible_collections.overcommit.control.plugins.module_utils.k8s.static import config as kubevirt_config


def params(**given):
    base = dict((option, None) for option in kubevirt_config.FIELDS)
    base["clear_auto_cpu_limit_namespace_selector"] = False
    base.update(given)
    return base


def cr(configuration):
    return {"metadata": {"name": "kubevirt", "namespace": "kubevirt"}, "spec": {"configuration": configuration}}


def test_merge_patch_diff_nulls_what_goes_and_keeps_lists_whole():
    before = {"a": {"x": 1, "y": 2}, "l": [1, 2], "k": "v"}
    after = {"a": {"x": 1, "z": 3}, "l": [2], "k": "v"}
    assert merge_patch.diff(before, after) == {"a": {"y": None, "z": 3}, "l": [2]}
    assert merge_patch.merge(before, merge_patch.diff(before, after)) == after
    assert merge_patch.diff(after, after) is None


def test_plan_sets_only_what_is_wanted_and_keeps_other_settings():
    kubevirt = cr({"developerConfiguration": {"featureGates": ["Snapshot"]}, "imagePullPolicy": "IfNotPresent"})
    planned = kubevirt_config.plan(kubevirt, kubevirt_config.check_wanted(params(cpu_allocation_ratio=8)))
    assert planned["patch"] == {"spec": {"configuration": {"developerConfiguration": {"cpuAllocationRatio": 8}}}}
    assert planned["before"]["cpu_allocation_ratio"] is None and planned["after"]["cpu_allocation_ratio"] == 8


def test_a_new_selector_replaces_the_old_one_instead_of_merging_into_it():
    kubevirt = cr({"autoCPULimitNamespaceLabelSelector": {"matchLabels": {"a": "1"}}})
    wanted = kubevirt_config.check_wanted(params(auto_cpu_limit_namespace_selector={"matchLabels": {"b": "2"}}))
    planned = kubevirt_config.plan(kubevirt, wanted)
    assert planned["patch"]["spec"]["configuration"]["autoCPULimitNamespaceLabelSelector"] == {
        "matchLabels": {"a": None, "b": "2"}}
    cleared = kubevirt_config.plan(kubevirt, kubevirt_config.check_wanted(
        params(clear_auto_cpu_limit_namespace_selector=True)))
    assert cleared["patch"] == {"spec": {"configuration": {"autoCPULimitNamespaceLabelSelector": None}}}


def test_cleared_settings_are_removed_so_kubevirt_defaults_apply_again():
    kubevirt = cr({"developerConfiguration": {"featureGates": ["Snapshot"], "cpuAllocationRatio": 8},
                   "vmRolloutStrategy": "Stage"})
    planned = kubevirt_config.plan(kubevirt, kubevirt_config.check_wanted(
        params(clear=["cpu_allocation_ratio", "vm_rollout_strategy"], memory_overcommit=150)))
    assert planned["patch"] == {"spec": {"configuration": {
        "developerConfiguration": {"cpuAllocationRatio": None, "memoryOvercommit": 150}, "vmRolloutStrategy": None}}}
    assert planned["after"]["cpu_allocation_ratio"] is None and planned["before"]["cpu_allocation_ratio"] == 8
    assert kubevirt_config.plan(cr({}), kubevirt_config.check_wanted(params(clear=["memory_overcommit"])))["patch"] is None


@pytest.mark.parametrize("given", [{"clear": ["cpu_allocation_ratio"], "cpu_allocation_ratio": 4},
                                   {"clear": ["cpuAllocationRatio"]}])
def test_a_setting_both_given_and_cleared_or_unknown_is_refused_naming_clear(given):
    with pytest.raises(ValueRangeError) as error:
        kubevirt_config.check_wanted(params(**given))
    assert error.value.field == "clear"


def test_nothing_to_change_is_no_patch():
    kubevirt = cr({"developerConfiguration": {"cpuAllocationRatio": 8}, "vmRolloutStrategy": "Stage"})
    wanted = kubevirt_config.check_wanted(params(cpu_allocation_ratio=8, vm_rollout_strategy="Stage"))
    assert kubevirt_config.plan(kubevirt, wanted)["patch"] is None


@pytest.mark.parametrize("given,field", [
    ({"cpu_allocation_ratio": 0}, "cpu_allocation_ratio"),
    ({"cpu_allocation_ratio": -3}, "cpu_allocation_ratio"),
    ({"memory_overcommit": 9}, "memory_overcommit"),
    ({"vm_rollout_strategy": "Rolling"}, "vm_rollout_strategy"),
    ({"auto_cpu_limit_namespace_selector": {}}, "auto_cpu_limit_namespace_selector"),
    ({"auto_cpu_limit_namespace_selector": {"matchLabel": {"a": "b"}}}, "auto_cpu_limit_namespace_selector"),
    ({"auto_cpu_limit_namespace_selector": {"matchExpressions": [{"key": "a", "operator": "Exists",
                                                                  "values": ["x"]}]}},
     "auto_cpu_limit_namespace_selector.matchExpressions[0].values"),
])
def test_invalid_settings_name_the_field(given, field):
    with pytest.raises(ValueRangeError) as error:
        kubevirt_config.check_wanted(params(**given))
    assert error.value.field == field


def test_effective_reports_defaults_and_invalid_values_kubevirt_ignores():
    effective = kubevirt_config.effective({"cpu_allocation_ratio": None, "memory_overcommit": 0,
                                           "auto_cpu_limit_namespace_selector": None, "vm_rollout_strategy": None})
    assert effective["cpu_allocation_ratio"] == 10
    assert effective["memory_overcommit"].startswith("ignored by KubeVirt")


def test_launcher_requests_follow_the_ratio_and_the_overcommit_percent():
    assert allocation.cpu_request(4, 10) == 0.4
    assert allocation.cpu_request(4, 1) == 4
    assert allocation.memory_request(4 * 2 ** 30, 200) == 2 * 2 ** 30
    assert allocation.cpu_overcommit_ratio(8, 1) == 8


@pytest.mark.parametrize("text,cpus", [("2", 2), ("500m", 0.5), ("1.5", 1.5), (3, 3)])
def test_cpu_quantities(text, cpus):
    assert quantity.cpu("cpu", text) == cpus


@pytest.mark.parametrize("text,size", [("1Gi", 2 ** 30), ("1536Mi", 1536 * 2 ** 20), ("1G", 10 ** 9),
                                       ("1e3", 1000), ("128974848", 128974848)])
def test_memory_quantities(text, size):
    assert quantity.memory("memory", text) == size


def test_formatting_round_trips():
    assert quantity.format_cpu(0.4) == "400m" and quantity.format_cpu(2) == "2"
    assert quantity.format_memory(2 ** 30) == "1Gi" and quantity.format_memory(1288 * 2 ** 20) == "1288Mi"
    assert quantity.format_memory(1000) == "1000"


@pytest.mark.parametrize("bad", ["1GB", "two", "", True, "1.2.3Gi"])
def test_bad_quantities_name_the_field(bad):
    with pytest.raises(ValueRangeError) as error:
        quantity.memory("memory.guest", bad)
    assert error.value.field == "memory.guest"


@pytest.mark.parametrize("selector,field", [
    ({"matchLabels": "tier"}, "s.matchLabels"),
    ({"matchExpressions": {"key": "tier", "operator": "Exists"}}, "s.matchExpressions"),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": "a,b"}]}, "s.matchExpressions[0].values"),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": [1]}]}, "s.matchExpressions[0].values"),
])
def test_a_selector_of_the_wrong_shape_is_refused_naming_the_field(selector, field):
    with pytest.raises(ValueRangeError) as error:
        kubevirt_config.check_label_selector("s", selector)
    assert error.value.field == field


@pytest.mark.parametrize("value", ["1" * 65, "1" * 30, "1e40", "9Ei", float("inf"), float("nan")])
def test_a_quantity_kubernetes_could_not_hold_is_refused_and_shown_short(value):
    with pytest.raises(ValueRangeError) as error:
        quantity.cpu("desired", value)
    assert error.value.field == "desired" and len(str(error.value)) < 200
