"""The node's policy state, kill switch, the `expected` check and the Events
of node_admission: the pure parts, and the runner over a scripted client."""

import json

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain.plan import seen_of_node
from ansible_collections.overcommit.control.plugins.module_utils.k8s import events
from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import K8sClientError
from ansible_collections.overcommit.control.plugins.module_utils.k8s import metadata
from ansible_collections.overcommit.control.plugins.module_utils.k8s.gate import runner as admission, plan as gate
from ansible_collections.overcommit.control.plugins.module_utils.k8s.nodes import usage as node_usage

PREFIX = "overcommit.control/"
FIELDS = {"reason": "gate_pressure: PSI 45 %", "time": "2026-01-05T10:00:00Z", "by": "loop", "plan": "plan-1"}
STATE = {"rule": "gate_pressure", "gated_at": 1767607200}
OPEN_SEEN = {"gated": False, "gate_time": None, "taints": [], "cordoned": False}


def request(policy_given=None, **params):
    base = {"prefix": PREFIX, "state": "gated", "taints": None, "labels": {}, "cordon": False,
            "max_gated_share": 1.0, "force": False}
    base.update(params)
    return gate.check_request(base, policy_given)


def node(name="n1", taints=None, unschedulable=False, labels=None, annotations=None, version="1"):
    return {"metadata": {"name": name, "uid": "uid-" + name, "labels": labels or {},
                         "annotations": annotations or {}, "resourceVersion": version},
            "spec": {"taints": taints, "unschedulable": unschedulable}}


def plan(obj, req):
    return gate.plan_node(metadata.node_view(obj, PREFIX), req, FIELDS)


# ---------------------------------------------------------------- options

def test_policy_state_is_a_mapping_or_null_and_left_alone_when_not_given():
    assert "policy" not in request()
    assert "policy" not in request(policy_state=None, policy_given=False)
    assert request(policy_state=STATE)["policy"] == STATE
    assert request(policy_state=None, policy_given=True)["policy"] is None
    # An empty state is no state: removed as null is.
    assert request(policy_state={}, policy_given=True)["policy"] is None


@pytest.mark.parametrize("value", [[1, 2], "gated_at=1", 3, {"when": {1, 2}}])
def test_a_policy_state_that_is_not_a_json_mapping_names_the_field(value):
    with pytest.raises(ValueRangeError) as error:
        request(policy_state=value, policy_given=True)
    assert error.value.field == "policy_state"


def test_expected_is_what_a_plan_saw_with_taints_in_sorted_order():
    seen = {"gated": True, "gate_time": "t", "taints": ["b:NoSchedule", "a=x:NoSchedule"], "cordoned": False}
    assert request(expected={"n1": seen})["expected"] == {"n1": dict(seen, taints=["a=x:NoSchedule", "b:NoSchedule"])}
    assert request()["expected"] == {}


@pytest.mark.parametrize("expected,field", [
    (["n1"], "expected"),
    ({"n1": "gated"}, "expected.n1"),
    ({"n1": {"gated": False, "taints": [], "cordoned": False}}, "expected.n1.gate_time"),
    ({"n1": dict(OPEN_SEEN, seen=True)}, "expected.n1.seen"),
    ({"n1": dict(OPEN_SEEN, gated="no")}, "expected.n1.gated"),
    ({"n1": dict(OPEN_SEEN, cordoned=1)}, "expected.n1.cordoned"),
    ({"n1": dict(OPEN_SEEN, gate_time=5)}, "expected.n1.gate_time"),
    ({"n1": dict(OPEN_SEEN, taints="a:NoSchedule")}, "expected.n1.taints"),
    ({"n1": dict(OPEN_SEEN, taints=[{"key": "a"}])}, "expected.n1.taints"),
])
def test_an_expected_entry_of_the_wrong_shape_names_the_field(expected, field):
    with pytest.raises(ValueRangeError) as error:
        request(expected=expected)
    assert error.value.field == field


# ---------------------------------------------------------------- what is read

def test_the_view_reads_the_policy_state_and_the_kill_switch():
    stored = node(annotations={PREFIX + "policy": '{"rule": "gate_pressure", "gated_at": 1}'},
                  labels={PREFIX + "paused": "true"})
    view = metadata.node_view(stored, PREFIX)
    assert view["policy"] == {"rule": "gate_pressure", "gated_at": 1} and view["policy_error"] is None
    assert view["paused"] is True
    assert metadata.node_view(node(labels={PREFIX + "paused": "false"}), PREFIX)["paused"] is False
    assert metadata.node_view(node(labels={"other.example/paused": "true"}), PREFIX)["paused"] is False
    assert metadata.node_view(node(), PREFIX)["policy"] is None


@pytest.mark.parametrize("text,why", [("{not json", "not valid JSON"), ("[1, 2]", "list, not a mapping"),
                                      ("null", "NoneType, not a mapping")])
def test_a_policy_annotation_that_cannot_be_read_is_null_with_the_reason(text, why):
    view = metadata.node_view(node(annotations={PREFIX + "policy": text}), PREFIX)
    assert view["policy"] is None and why in view["policy_error"]


def test_the_info_row_has_policy_paused_and_the_error_only_when_there_is_one():
    row = node_usage.node_row(node(annotations={PREFIX + "policy": json.dumps(STATE)},
                                   labels={PREFIX + "paused": "true"}), [], PREFIX)
    assert row["policy"] == STATE and row["paused"] is True and "policy_error" not in row
    bad = node_usage.node_row(node(annotations={PREFIX + "policy": "{"}), [], PREFIX)
    assert bad["policy"] is None and bad["paused"] is False and "not valid JSON" in bad["policy_error"]


# ---------------------------------------------------------------- what is written

def test_the_policy_state_is_written_with_the_gate_as_compact_sorted_json():
    result = plan(node(), request(policy_state=STATE))
    annotations = result["patch"]["metadata"]["annotations"]
    assert annotations[PREFIX + "policy"] == '{"gated_at":1767607200,"rule":"gate_pressure","schema":1}'
    assert json.loads(annotations[PREFIX + "gate"])["plan"] == "plan-1"
    assert result["before"]["policy"] is None and result["after"]["policy"] == STATE
    assert result["gate_changed"] is True


def test_the_same_state_changes_nothing_and_null_removes_it():
    gated = node(taints=[{"key": PREFIX + "gated", "effect": "NoSchedule"}],
                 annotations={PREFIX + "gate": json.dumps(dict(FIELDS, taints=[PREFIX + "gated"], cordoned=False)),
                              PREFIX + "policy": json.dumps(STATE, indent=2)})
    assert plan(gated, request(policy_state=dict(STATE)))["patch"] is None
    # Not given: the state stays whatever the gate does.
    assert plan(gated, request())["patch"] is None
    removed = plan(gated, request(policy_state=None, policy_given=True))
    assert removed["patch"] == {"metadata": {"annotations": {PREFIX + "policy": None}}}
    assert removed["gate_changed"] is False
    calm = plan(gated, request(policy_state=dict(STATE, calm_since=1767607500)))
    assert json.loads(calm["patch"]["metadata"]["annotations"][PREFIX + "policy"])["calm_since"] == 1767607500
    assert "spec" not in calm["patch"] and calm["gate_changed"] is False


def test_an_unreadable_policy_annotation_is_replaced_or_removed():
    broken = node(annotations={PREFIX + "policy": "{"})
    assert plan(broken, request(state="open", policy_state=None, policy_given=True))["patch"] == {
        "metadata": {"annotations": {PREFIX + "policy": None}}}
    assert plan(broken, request(state="open"))["patch"] is None


def test_opening_with_the_state_removed_is_one_write():
    gated = node(taints=[{"key": PREFIX + "gated", "effect": "NoSchedule"}],
                 annotations={PREFIX + "gate": json.dumps(dict(FIELDS, taints=[PREFIX + "gated"], cordoned=False)),
                              PREFIX + "policy": json.dumps(STATE)})
    result = plan(gated, request(state="open", policy_state={}, policy_given=True))
    assert result["patch"] == {"spec": {"taints": None},
                               "metadata": {"annotations": {PREFIX + "gate": None, PREFIX + "policy": None}}}
    assert result["gate_changed"] is True


# ---------------------------------------------------------------- expected

def test_changed_since_read_compares_as_a_plan_does():
    view = metadata.node_view(node(taints=[{"key": "example.com/x", "value": "1", "effect": "NoSchedule"}]), PREFIX)
    assert gate.changed_since_read(view, dict(OPEN_SEEN, taints=["example.com/x=1:NoSchedule"])) is None
    assert gate.changed_since_read(view, seen_of_node(view)) is None
    why = gate.changed_since_read(view, OPEN_SEEN)
    assert why == "n1 changed since it was read: taints was [], is ['example.com/x=1:NoSchedule'] now"
    cordoned = metadata.node_view(node(unschedulable=True), PREFIX)
    assert gate.changed_since_read(cordoned, OPEN_SEEN).startswith("n1 changed since it was read: cordoned was False")


# ---------------------------------------------------------------- Events

def test_the_node_event_is_about_the_node_in_the_default_namespace():
    body = admission.node_event(node(), "gated", FIELDS, "2026-01-05T10:00:00.000001Z", "ctl-1", "ab")
    assert body["metadata"] == {"name": "n1.ab", "namespace": "default"}
    assert body["regarding"] == {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "uid-n1"}
    assert (body["type"], body["reason"], body["action"]) == ("Normal", "NodeGated", "Gate")
    assert body["reportingController"] == "overcommit.control" and body["reportingInstance"] == "ctl-1"
    assert body["note"] == "Closed to new VMs by loop: gate_pressure: PSI 45 % (plan plan-1)"
    opened = admission.node_event(node(), "open", {"by": "ops"}, "t", "h", "cd")
    assert (opened["reason"], opened["action"], opened["note"]) == ("NodeOpened", "Open", "Opened to new VMs by ops")
    assert len(events.event({"name": "x"}, "Normal", "R", "A", "n" * 2000, "t", "c", "i" * 300, "s")["note"]) \
        == events.NOTE_LIMIT


# ---------------------------------------------------------------- the runner

class ScriptedNodes(object):
    """Nodes by name; `race` edits a node (as another writer would) just
    before our next PATCH of it, which then gets a 409."""

    def __init__(self, nodes, race=None, event_error=None):
        self.nodes = dict((n["metadata"]["name"], n) for n in nodes)
        self.race = race or {}
        self.event_error = event_error
        self.patches, self.created = [], []

    def get(self, path):
        name = path.rsplit("/", 1)[-1]
        if name not in self.nodes:
            raise K8sClientError("GET %s: not found" % path, status=404)
        return json.loads(json.dumps(self.nodes[name]))

    def list(self, path, label_selector=None, metadata_only=False, field_selector=None):
        return [self.get("/x/" + name) for name in sorted(self.nodes)]

    def read_modify_write(self, path, plan_patch, current=None):
        conflicts = 0
        while True:
            current = current or self.get(path)
            patch = plan_patch(current)
            if patch is None:
                return current, None, conflicts
            name = path.rsplit("/", 1)[-1]
            if name in self.race:
                self.race.pop(name)(self.nodes[name])
                self.nodes[name]["metadata"]["resourceVersion"] += "x"
            if current["metadata"]["resourceVersion"] != self.nodes[name]["metadata"]["resourceVersion"]:
                conflicts += 1
                current = None
                continue
            self.patches.append((name, patch))
            self.nodes[name] = _merged(self.nodes[name], patch)
            return current, patch, conflicts

    def create(self, path, body):
        if self.event_error:
            raise K8sClientError(self.event_error, status=403)
        self.created.append((path, body))


def _merged(target, patch):
    if not isinstance(patch, dict):
        return patch
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merged(out.get(key) or {}, value) if isinstance(value, dict) else value
    return out


def run(client, names, **params):
    runner = admission.AdmissionRunner(client, request(names=names, **params), FIELDS,
                                       clock=lambda: ("t", "2026-01-05T10:00:00.000001Z"), instance="ctl")
    return runner.run()[0]


def test_a_node_changed_since_it_was_read_is_left_alone_and_reported_as_a_conflict():
    client = ScriptedNodes([node("n1", taints=[{"key": "example.com/x", "effect": "NoSchedule"}]), node("n2")])
    results = run(client, ["n1", "n2"], expected={"n1": OPEN_SEEN, "n2": OPEN_SEEN}, policy_state=STATE)
    assert results[0] == {"name": "n1", "changed": False, "conflict": True,
                          "msg": "n1 changed since it was read: taints was [], is ['example.com/x:NoSchedule'] now",
                          "before": results[0]["before"]}
    assert [name for name, _patch in client.patches] == ["n2"]
    assert results[1]["changed"] is True and results[1]["event"]["reason"] == "NodeGated"
    outcome = fleet.summary(results)
    assert outcome["conflict"] == ["n1"] and outcome["changed"] == ["n2"] and outcome["unchanged"] == []
    assert outcome["failure_msg"] is None


def test_a_writer_that_got_there_first_turns_the_write_into_a_conflict():
    def other_runner_gated(obj):
        obj["spec"]["taints"] = [{"key": PREFIX + "gated", "effect": "NoSchedule"}]
        obj["metadata"]["annotations"][PREFIX + "gate"] = json.dumps({"time": "2026-01-05T09:59:59Z",
                                                                      "taints": [PREFIX + "gated"]})
    client = ScriptedNodes([node("n1")], race={"n1": other_runner_gated})
    result = run(client, ["n1"], expected={"n1": OPEN_SEEN})[0]
    assert result["conflict"] is True and result["conflicts"] == 1 and not client.patches and not client.created
    assert result["msg"].startswith("n1 changed since it was read: gate_time was none, is 2026-01-05T09:59:59Z now")


def test_a_foreign_write_that_leaves_the_view_as_seen_is_re_planned_and_written():
    def labelled(obj):
        obj["metadata"]["labels"]["example.com/team"] = "db"
    client = ScriptedNodes([node("n1")], race={"n1": labelled})
    result = run(client, ["n1"], expected={"n1": OPEN_SEEN})[0]
    assert result["changed"] is True and result["conflicts"] == 1 and "conflict" not in result
    assert client.nodes["n1"]["metadata"]["labels"]["example.com/team"] == "db"


def test_an_event_per_gate_and_open_none_for_a_state_only_write_and_its_failure_fails_nothing():
    client = ScriptedNodes([node("n1")])
    gated = run(client, ["n1"], policy_state=STATE)[0]
    assert gated["event"] == {"type": "Normal", "reason": "NodeGated",
                              "note": "Closed to new VMs by loop: gate_pressure: PSI 45 % (plan plan-1)"}
    path, body = client.created[0]
    assert path == "/apis/events.k8s.io/v1/namespaces/default/events" and body["regarding"]["uid"] == "uid-n1"
    state_only = run(client, ["n1"], policy_state=dict(STATE, calm_since=5))[0]
    assert state_only["changed"] is True and "event" not in state_only and len(client.created) == 1
    assert "event" not in run(client, ["n1"])[0]
    client.event_error = "POST events: forbidden"
    opened = run(client, ["n1"], state="open", policy_state={}, policy_given=True)[0]
    assert opened["changed"] is True and not opened.get("failed")
    assert opened["event"]["reason"] == "NodeOpened" and opened["event"]["error"] == "POST events: forbidden"
    assert PREFIX + "policy" not in client.nodes["n1"]["metadata"]["annotations"]
