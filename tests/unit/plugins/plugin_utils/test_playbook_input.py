"""The check every playbook runs on its variables first: each refusal names
the variable as the user typed it and what it allows."""

import math

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain.cpu import parse_cpus
from ansible_collections.overcommit.control.plugins.plugin_utils import playbook_input as pi

THROTTLE = {"domains": "names", "classes": {"kind": "names", "choices": ["shared", "burstable", "dedicated"]},
            "cpus": "cpus", "reason": "text", "scope": {"kind": "choice", "choices": ["domain", "vcpu"]},
            "force": "bool", "kubevirt_vms": "names", "target_hosts": "hosts"}
TARGETS = [["domains", "classes", "kubevirt_vms"]]


def check(given, typed=None):
    return pi.check("throttle.yml", THROTTLE, given, typed if typed is not None else given, ["cpus", "reason"],
                    TARGETS)


def test_a_complete_run_passes_with_its_values_as_the_roles_take_them():
    errors, values = check({"domains": ["web-17"], "cpus": "500m", "reason": "INC-1", "force": "yes"})
    assert errors == []
    assert values == {"domains": ["web-17"], "cpus": 0.5, "reason": "INC-1", "force": True}


@pytest.mark.parametrize("typed, meant", [("domain", "domains"), ("scpoe", "scope"), ("kubevirt_vm", "kubevirt_vms"),
                                          ("reasons", "reason")])
def test_a_misspelt_variable_is_named_beside_the_one_meant(typed, meant):
    errors, _values = check({"domains": ["a"], "cpus": 1, "reason": "r"}, typed=["domains", "cpus", "reason", typed])
    assert errors == ["%s is not a variable of throttle.yml: did you mean %s?" % (typed, meant)]


def test_unknown_names_far_from_any_and_ansible_variables_are_left_alone():
    errors, _values = check({"domains": ["a"], "cpus": 1, "reason": "r"},
                            typed=["domains", "cpus", "reason", "ticket_system", "ansible_python_interpreter"])
    assert errors == []


def test_missing_required_and_targets_are_each_named():
    errors, _values = check({})
    assert errors == ["throttle.yml needs cpus (a number of CPUs above 0, such as 2, 0.5 or \"500m\"); pass it with -e",
                      "throttle.yml needs reason (a non-empty text); pass it with -e",
                      "throttle.yml needs one of domains, classes, kubevirt_vms; pass it with -e"]


@pytest.mark.parametrize("field, value, allowed", [
    ("domains", [], "at least one name"),
    ("domains", "web-17", "a list of names"),
    ("domains", ["web-17", "web-17"], "each name once"),
    ("domains", [""], "names as non-empty text"),
    ("domains", ["x" * 300], "at most 253 characters"),
    ("domains", ["a%d" % n for n in range(10000)], "at most 5000 names"),
    ("classes", ["gold"], "shared, burstable, dedicated"),
    ("reason", "", "a non-empty text"),
    ("reason", "   ", "a non-empty text"),
    ("scope", "scpoe", "domain, vcpu"),
    ("force", "maybe", "true or false"),
])
def test_input_that_does_nothing_or_is_malformed_is_refused_naming_the_users_variable(field, value, allowed):
    given = {"domains": ["a"], "cpus": 1, "reason": "r"}
    given[field] = value
    errors, values = check(given)
    assert len(errors) == 1 and errors[0].startswith("%s=" % field) and allowed in errors[0], errors
    assert field not in values


@pytest.mark.parametrize("value, cpus", [(2, 2.0), (0.5, 0.5), ("2", 2.0), ("0.25", 0.25), ("500m", 0.5),
                                         ("1500m", 1.5), (" 3 ", 3.0), (".5", 0.5)])
def test_cpus_is_one_rule_numbers_or_millicores(value, cpus):
    assert parse_cpus("cpus", value) == cpus


@pytest.mark.parametrize("value", ["abc", "", "500M", "2Gi", "-1", "0", "0m", 0, -2, True, False, None, [1],
                                   float("nan"), float("inf"), 2 ** 63, "1e400", "nan"])
def test_cpus_that_are_not_a_number_of_cpus_are_refused_in_one_line(value):
    with pytest.raises(ValueRangeError) as error:
        parse_cpus("cpus", value)
    message = str(error.value)
    assert message.startswith("cpus=") and "such as 2, 0.5 or \"500m\"" in message and "\n" not in message


@pytest.mark.parametrize("kind, value", [("count", 0), ("count", 1.5), ("count", True), ("seconds", 0),
                                         ("seconds", math.inf), ("seconds_or_zero", -1), ("share", 1.5),
                                         ("mapping", [1]), ("count", 2 ** 63)])
def test_the_other_kinds_refuse_what_they_do_not_allow(kind, value):
    with pytest.raises(ValueRangeError):
        pi.check_value("samples", value, kind)


def test_a_spec_with_an_unknown_kind_is_refused_whether_or_not_the_variable_is_given():
    with pytest.raises(ValueRangeError) as error:
        pi.check_value("samples", 1, "number")
    assert "variables.samples" in str(error.value)
    with pytest.raises(ValueRangeError) as error:
        pi.check("recommend.yml", {"samples": "number"}, {})
    assert error.value.field == "variables.samples"
    with pytest.raises(ValueRangeError) as error:
        pi.check("throttle.yml", {"cpus": "cpus"}, {}, required=["cpu"])
    assert "cpu" in str(error.value)


def test_a_host_group_that_matches_no_host_is_named_with_the_variable_that_chooses_it():
    groups = [{"variable": "target_hosts", "default": "hypervisors", "when": ["domains", "classes"]},
              {"variable": "kubevirt_hosts", "default": "localhost", "when": ["kubevirt_vms"]},
              {"default": "hypervisors"}]
    given = {"domains": ["a"], "target_hosts": "kvm"}
    patterns, _notes = pi.host_patterns("throttle.yml", groups, given, {})
    errors = pi.empty_host_groups("throttle.yml", groups, given, patterns, {"kvm": 0, "localhost": 1, "hypervisors": 0})
    assert errors == ["no host of the inventory is in kvm, the hosts throttle.yml acts on (choose them with "
                      "-e target_hosts=GROUP)",
                      "no host of the inventory is in the group hypervisors, the hosts throttle.yml acts on"]
    # A group nothing asked for is not needed; one that matches hosts passes.
    given = {"domains": ["a"]}
    patterns, _notes = pi.host_patterns("throttle.yml", groups, given, {})
    assert pi.empty_host_groups("throttle.yml", groups, given, patterns, {"hypervisors": 3}) == []


def test_the_api_plays_run_on_localhost_and_an_inventory_written_for_controllers_keeps_working_with_a_note():
    groups = [{"variable": "target_hosts", "default": "hypervisors", "when": ["domains"]},
              {"variable": "kubevirt_hosts", "default": "localhost", "formerly": "controllers",
               "when": ["kubevirt_vms"]}]
    # No controllers group, or one that is only localhost (the lab's, the kubernetes_nodes inventory's): localhost.
    for members in ({}, {"controllers": ["localhost"]}):
        patterns, notes = pi.host_patterns("throttle.yml", groups, {"kubevirt_vms": ["a"]}, members)
        assert patterns == {"target_hosts": "hypervisors", "kubevirt_hosts": "localhost"} and notes == []
    # A controllers group with another host: still used, with a deprecation note naming the way to keep it.
    patterns, notes = pi.host_patterns("throttle.yml", groups, {"kubevirt_vms": ["a"]},
                                       {"controllers": ["bastion-1"]})
    assert patterns["kubevirt_hosts"] == "controllers"
    assert len(notes) == 1 and "deprecated" in notes[0] and "-e kubevirt_hosts=controllers" in notes[0]
    # No note when the run does not touch KubeVirt, nor when the variable is given.
    assert pi.host_patterns("throttle.yml", groups, {"domains": ["a"]}, {"controllers": ["bastion-1"]})[1] == []
    patterns, notes = pi.host_patterns("throttle.yml", groups, {"kubevirt_vms": ["a"], "kubevirt_hosts": "api"},
                                       {"controllers": ["bastion-1"]})
    assert patterns["kubevirt_hosts"] == "api" and notes == []


def test_an_optional_text_may_be_empty_as_the_rulebooks_hand_it_on_and_is_no_target_then():
    spec = {"kubevirt_namespace": "optional_text", "kubevirt_selector": "optional_text", "domains": "names"}
    errors, values = pi.check("restore.yml", spec, {"kubevirt_namespace": "", "kubevirt_selector": ""},
                              one_of=[["domains", "kubevirt_selector"]])
    assert errors == ["restore.yml needs one of domains, kubevirt_selector; pass it with -e"]
    assert values == {"kubevirt_namespace": "", "kubevirt_selector": ""}
    errors, _values = pi.check("restore.yml", spec, {"kubevirt_namespace": ["lab"]})
    assert errors == ["kubevirt_namespace=['lab'] is out of range: allowed a text (empty: not set)"]


def test_every_kind_says_what_it_allows():
    assert set(pi.ALLOWED_WORDS) == set(pi.KINDS)
