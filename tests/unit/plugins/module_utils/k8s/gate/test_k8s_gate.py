import json

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.k8s import metadata
from ansible_collections.overcommit.control.plugins.module_utils.k8s.gate import plan as gate, taints

PREFIX = "overcommit.control/"
FOREIGN = {"key": "example.com/maintenance", "effect": "NoSchedule", "value": "disk"}
FIELDS = {"reason": "PSI high", "time": "2026-01-05T10:00:00Z", "by": "ops"}


def request(**params):
    base = {"prefix": PREFIX, "state": "gated", "taints": None, "labels": {}, "cordon": False,
            "max_gated_share": 0.5, "force": False}
    base.update(params)
    return gate.check_request(base)


def node(name="n1", node_taints=None, unschedulable=False, labels=None, record=None):
    annotations = {PREFIX + "gate": json.dumps(record)} if record is not None else {}
    return {"metadata": {"name": name, "labels": labels or {}, "annotations": annotations, "resourceVersion": "1"},
            "spec": {"taints": node_taints, "unschedulable": unschedulable}}


def plan(obj, req):
    return gate.plan_node(metadata.node_view(obj, PREFIX), req, FIELDS)


def test_short_keys_get_the_prefix_and_foreign_keys_are_refused():
    assert metadata.owned_key("k", "gated", PREFIX) == PREFIX + "gated"
    assert metadata.owned_key("k", PREFIX + "gated", PREFIX) == PREFIX + "gated"
    with pytest.raises(ValueRangeError) as error:
        metadata.owned_key("taints[0].key", "example.com/x", PREFIX)
    assert error.value.field == "taints[0].key"


@pytest.mark.parametrize("params,field", [
    ({"prefix": "no-slash"}, "prefix"),
    ({"prefix": "UPPER.example/"}, "prefix"),
    ({"max_gated_share": 0}, "max_gated_share"),
    ({"max_gated_share": 1.01}, "max_gated_share"),
    ({"taints": [{"key": "gated", "effect": "NoExecute"}]}, "taints[0].effect"),
    ({"taints": [{"key": "a b"}]}, "taints[0].key"),
    ({"taints": [{"key": "gated", "value": "x" * 64}]}, "taints[0].value"),
    ({"labels": {"example.com/x": "1"}}, "labels.example.com/x"),
    ({"labels": {"gate": "1"}}, "labels"),
])
def test_bad_input_names_the_field(params, field):
    with pytest.raises(ValueRangeError) as error:
        request(**params)
    assert error.value.field == field


def test_gate_keeps_foreign_taints_in_place_and_records_why():
    result = plan(node(node_taints=[FOREIGN]), request())
    assert result["after"]["taints"] == [FOREIGN, {"key": PREFIX + "gated", "effect": "NoSchedule"}]
    assert result["after"]["gate"] == dict(FIELDS, taints=[PREFIX + "gated"], cordoned=False)
    assert result["patch"]["spec"]["taints"] == result["after"]["taints"]
    assert json.loads(result["patch"]["metadata"]["annotations"][PREFIX + "gate"])["reason"] == "PSI high"


def test_gating_a_gated_node_again_changes_nothing_and_keeps_the_first_record():
    first = plan(node(node_taints=[FOREIGN]), request())
    gated = node(node_taints=first["after"]["taints"], record=first["after"]["gate"])
    later = dict(FIELDS, time="2026-01-06T00:00:00Z")
    second = gate.plan_node(metadata.node_view(gated, PREFIX), request(), later)
    assert second["patch"] is None
    assert second["after"]["gate"]["time"] == FIELDS["time"]


def test_a_changed_value_replaces_the_owned_taint_of_that_key_only():
    current = [FOREIGN, {"key": PREFIX + "pressure", "effect": "NoSchedule", "value": "cpu"},
               {"key": PREFIX + "esxi", "effect": "NoSchedule"}]
    result = plan(node(node_taints=current), request(taints=[{"key": "pressure", "value": "memory"}]))
    assert result["after"]["taints"] == [FOREIGN, {"key": PREFIX + "esxi", "effect": "NoSchedule"},
                                         {"key": PREFIX + "pressure", "effect": "NoSchedule", "value": "memory"}]


def test_open_removes_exactly_the_recorded_taints_and_the_record():
    current = [FOREIGN, {"key": PREFIX + "pressure", "effect": "NoSchedule"},
               {"key": PREFIX + "esxi", "effect": "NoSchedule"}]
    record = dict(FIELDS, taints=[PREFIX + "pressure"], cordoned=False)
    result = plan(node(node_taints=current, record=record), request(state="open"))
    assert result["after"]["taints"] == [FOREIGN, {"key": PREFIX + "esxi", "effect": "NoSchedule"}]
    assert result["after"]["gate"] is None
    assert result["patch"]["metadata"]["annotations"] == {PREFIX + "gate": None}


def test_open_without_a_record_removes_the_default_gate_taint_and_nothing_foreign():
    current = [FOREIGN, {"key": PREFIX + "gated", "effect": "NoSchedule"}]
    result = plan(node(node_taints=current), request(state="open"))
    assert result["after"]["taints"] == [FOREIGN]
    assert plan(node(node_taints=[FOREIGN]), request(state="open"))["patch"] is None


def test_open_empties_the_list_with_null():
    current = [{"key": PREFIX + "gated", "effect": "NoSchedule"}]
    assert plan(node(node_taints=current), request(state="open"))["patch"]["spec"]["taints"] is None


def test_the_gate_lifts_only_a_cordon_it_set():
    ours = plan(node(), request(cordon=True))
    assert ours["after"]["unschedulable"] is True and ours["after"]["gate"]["cordoned"] is True
    theirs = plan(node(unschedulable=True), request(cordon=True))
    assert theirs["after"]["gate"]["cordoned"] is False
    reopened = plan(node(unschedulable=True, record=theirs["after"]["gate"],
                         node_taints=theirs["after"]["taints"]), request(state="open"))
    assert reopened["after"]["unschedulable"] is True and "unschedulable" not in reopened["patch"].get("spec", {})
    lifted = plan(node(unschedulable=True, record=ours["after"]["gate"], node_taints=ours["after"]["taints"]),
                  request(state="open"))
    assert lifted["after"]["unschedulable"] is False and lifted["patch"]["spec"]["unschedulable"] is None


def test_labels_are_set_and_removed_without_touching_foreign_ones():
    labelled = node(labels={"example.com/team": "db", PREFIX + "old": "1"})
    result = plan(labelled, request(labels={"esxi-host": "esx-03", "old": None}))
    assert result["patch"]["metadata"]["labels"] == {PREFIX + "esxi-host": "esx-03", PREFIX + "old": None}
    assert result["after"]["labels"] == {PREFIX + "esxi-host": "esx-03"}


def test_share_check_refuses_closing_too_much_of_the_fleet_and_force_overrides():
    views = [metadata.node_view(node("n%d" % i), PREFIX) for i in range(4)]
    req = request()
    planned = dict(("n%d" % i, plan(node("n%d" % i), req)["after"]) for i in range(3))
    with pytest.raises(gate.GateRefusal, match="3 of 4 nodes would be closed"):
        gate.check_share(views, planned, req)
    assert gate.check_share(views, planned, request(force=True))["closed_after"] == 3
    assert gate.check_share(views, dict(list(planned.items())[:2]), req)["closed_after"] == 2


def test_share_check_counts_cordons_but_not_foreign_or_soft_taints():
    views = [metadata.node_view(node("a", unschedulable=True), PREFIX),
             metadata.node_view(node("b", node_taints=[FOREIGN]), PREFIX),
             metadata.node_view(node("c", node_taints=[{"key": PREFIX + "x", "effect": "PreferNoSchedule"}]), PREFIX),
             metadata.node_view(node("d"), PREFIX)]
    assert gate.check_share(views, {}, request())["closed_before"] == 1


def test_a_task_that_closes_no_more_nodes_is_never_refused():
    closed = [metadata.node_view(node("n%d" % i, node_taints=[{"key": PREFIX + "gated", "effect": "NoSchedule"}]),
                                 PREFIX) for i in range(3)]
    views = closed + [metadata.node_view(node("n3"), PREFIX)]
    again = dict((v["name"], v) for v in closed)
    assert gate.check_share(views, again, request())["closed_after"] == 3


def test_with_gate_is_a_no_op_when_the_owned_taints_already_match():
    current = [{"key": PREFIX + "gated", "effect": "NoSchedule"}, FOREIGN]
    assert taints.with_gate(current, [{"key": PREFIX + "gated", "effect": "NoSchedule"}]) == current


@pytest.mark.parametrize("text", ["{hand-edited", "[1, 2]", "\"gated\"", "x" * 5000])
def test_an_unreadable_gate_record_is_an_error_naming_the_annotation(text):
    view = metadata.node_view({"metadata": {"name": "n1", "annotations": {PREFIX + "gate": text}}}, PREFIX)
    assert view["gate"] is None
    assert view["gate_error"].startswith("the gate record in annotation overcommit.control/gate cannot be read")
    assert len(view["gate_error"]) < 300


def test_a_readable_or_absent_gate_record_is_no_error():
    record = json.dumps({"reason": "x", "cordoned": False})
    assert metadata.node_view({"metadata": {"name": "n1", "annotations": {PREFIX + "gate": record}}},
                              PREFIX)["gate_error"] is None
    assert metadata.node_view({"metadata": {"name": "n1"}}, PREFIX)["gate_error"] is None
