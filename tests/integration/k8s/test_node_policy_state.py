"""Stage 3 on Kubernetes nodes against the lab's kube-apiserver: the
policy's state kept on the node, the kill switch read, a node changed since
it was read left alone (also by one of two runs started at once), and the
Events of every gate and open. Every test works on Node objects it creates,
as the least-privilege operator identity."""

import json
import os
import subprocess
import sys
import tempfile
import threading

import pytest
import yaml
from kubernetes import client

from ansible_collections.overcommit.control.plugins.module_utils.domain.plan import seen_of_node
from apiproxy import ApiProxy, kubeconfig_parts
from nodes import add_foreign_taint, node_state
from run_module import INVENTORY, ROOT

pytestmark = pytest.mark.isolated

PREFIX = "overcommit.control/"
STATE = {"rule": "gate_pressure", "gated_at": 1767607200}


def admission(run_as, names, **args):
    args = dict({"names": names, "max_gated_share": 1.0}, **args)
    return run_as("operator", "node_admission", args, check=args.pop("check", False), diff=args.pop("diff", False))


def info(run_as, name):
    result = run_as("operator", "node_overcommit_info", {"names": [name]})
    assert not result.get("failed"), result
    return result["nodes"][0]


def node_events(kube_admin, name):
    found = client.EventsV1Api(kube_admin).list_namespaced_event(
        "default", field_selector="regarding.name=%s,regarding.kind=Node" % name).items
    return [(e.type, e.reason, e.note, e.reporting_controller) for e in sorted(found, key=lambda e: e.event_time)]


def test_policy_state_round_trips_through_the_info_module_is_idempotent_and_removed_with_null(
        kube_admin, make_nodes, run_as):
    name = make_nodes(1)[0]
    assert info(run_as, name)["policy"] is None

    written = admission(run_as, [name], policy_state=STATE, reason="PSI high", diff=True)
    assert not written.get("failed"), written
    assert written["changed"] is True and written["nodes"][0]["after"]["policy"] == STATE
    assert written["diff"][0]["before"]["policy"] is None and written["diff"][0]["after"]["policy"] == STATE
    annotations = node_state(kube_admin, name)["annotations"]
    assert annotations[PREFIX + "policy"] == '{"gated_at":1767607200,"rule":"gate_pressure","schema":1}'
    assert json.loads(annotations[PREFIX + "gate"])["reason"] == "PSI high"
    read = info(run_as, name)
    assert read["policy"] == STATE and read["paused"] is False and "policy_error" not in read
    assert read["gate"]["reason"] == "PSI high"

    again = admission(run_as, [name], policy_state=dict(STATE), reason="PSI high")
    assert again["changed"] is False and again["summary"]["unchanged"] == [name], again
    # Left out, the state stays; the gate as it is changes nothing either.
    assert admission(run_as, [name], reason="PSI high")["changed"] is False
    assert node_state(kube_admin, name)["annotations"][PREFIX + "policy"] == annotations[PREFIX + "policy"]

    calm = dict(STATE, calm_since=1767607500)
    updated = admission(run_as, [name], policy_state=calm)
    assert updated["changed"] is True and "event" not in updated["nodes"][0], updated
    assert info(run_as, name)["policy"] == calm

    removed = admission(run_as, [name], policy_state=None)
    assert removed["changed"] is True, removed
    state = node_state(kube_admin, name)
    assert PREFIX + "policy" not in state["annotations"] and PREFIX + "gate" in state["annotations"]
    assert info(run_as, name)["policy"] is None
    assert admission(run_as, [name], policy_state=None)["changed"] is False

    # Opening with the state in one write, and an empty state removes it too.
    admission(run_as, [name], policy_state=STATE)
    opened = admission(run_as, [name], state="open", policy_state={})
    assert opened["changed"] is True and opened["nodes"][0]["event"]["reason"] == "NodeOpened", opened
    state = node_state(kube_admin, name)
    assert not [k for k in state["annotations"] if k.startswith(PREFIX)] and state["taints"] == []


def test_the_kill_switch_and_an_unreadable_policy_annotation_are_read(kube_admin, make_nodes, run_as):
    paused, other = make_nodes(2)
    core = client.CoreV1Api(kube_admin)
    core.patch_node(paused, {"metadata": {"labels": {PREFIX + "paused": "true"},
                                          "annotations": {PREFIX + "policy": "{not json"}}})
    core.patch_node(other, {"metadata": {"labels": {PREFIX + "paused": "false"},
                                         "annotations": {PREFIX + "policy": "[1, 2]"}}})
    read = info(run_as, paused)
    assert read["paused"] is True and read["policy"] is None
    assert read["policy_error"].startswith("the annotation is not valid JSON")
    read = info(run_as, other)
    assert read["paused"] is False and read["policy"] is None
    assert read["policy_error"] == "the annotation holds a list, not a mapping"

    # Writing a state replaces what could not be read.
    fixed = admission(run_as, [paused], state="open", policy_state=STATE)
    assert fixed["changed"] is True and info(run_as, paused)["policy"] == STATE


def test_a_node_whose_taints_were_edited_after_it_was_read_is_left_alone(kube_admin, make_nodes, run_as):
    name, untouched = make_nodes(2)
    expected = dict((n, seen_of_node(info(run_as, n))) for n in (name, untouched))
    assert expected[name] == {"gated": False, "gate_time": None, "taints": [], "cordoned": False}
    add_foreign_taint(kube_admin, name, "example.com/by-hand", "disk")
    before = node_state(kube_admin, name)

    result = admission(run_as, [name, untouched], expected=expected, policy_state=STATE, reason="PSI high")
    assert not result.get("failed"), result
    conflict, gated = result["nodes"]
    assert conflict["changed"] is False and conflict["conflict"] is True
    assert conflict["msg"] == ("%s changed since it was read: taints was [], is "
                               "['example.com/by-hand=disk:NoSchedule'] now" % name)
    assert "event" not in conflict
    assert gated["changed"] is True and gated["event"]["reason"] == "NodeGated"
    assert result["summary"]["conflict"] == [name] and result["summary"]["changed"] == [untouched]
    assert node_state(kube_admin, name) == before
    assert node_events(kube_admin, name) == []


def _start(module_args):
    """ansible-playbook running node_admission, started and not waited for."""
    play = [{"hosts": "localhost", "gather_facts": False,
             "tasks": [{"name": "run", "overcommit.control.node_admission": module_args}]}]
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as handle:
        yaml.safe_dump(play, handle)
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"))
    process = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY,
                                handle.name], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return process, handle.name


def _result(process, playbook):
    stdout, stderr = process.communicate(timeout=300)
    os.unlink(playbook)
    try:
        return json.loads(stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    except (ValueError, KeyError, IndexError):
        raise AssertionError("ansible-playbook gave no result (rc %d):\n%s\n%s"
                             % (process.returncode, stdout[-3000:], stderr[-3000:]))


def _hold_first_writes():
    """A proxy hook that holds each of the two runs' first PATCH of the node
    until the other's has come too: both were planned from the same read, so
    one write wins and the other is refused (409), read again and compared."""
    barrier, lock, held = threading.Barrier(2, timeout=240), threading.Lock(), []

    def hook(request):
        if request["method"] == "PATCH" and request["path"].startswith("/api/v1/nodes/"):
            with lock:
                held.append(request["path"])
                first_two = len(held) <= 2
            if first_two:
                barrier.wait()

    return hook


@pytest.mark.parametrize("racing", [False, True], ids=["started-at-once", "writes-held-until-both-read"])
def test_two_runs_started_at_once_on_the_same_view_gate_the_node_once(kube_admin, make_nodes, run_as, lab, racing):
    name = make_nodes(1)[0]
    expected = {name: seen_of_node(info(run_as, name))}
    args = [{"names": [name], "max_gated_share": 1.0, "expected": expected, "policy_state": STATE,
             "reason": "run %s" % which, "plan_id": "plan-%s" % which} for which in ("a", "b")]
    if racing:
        server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])
        with ApiProxy(server, ca_cert, before_forward=_hold_first_writes()) as proxy:
            runs = [_start(dict(a, host=proxy.url, api_key=token)) for a in args]
            results = [_result(*run) for run in runs]
    else:
        runs = [_start(dict(a, kubeconfig=lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])) for a in args]
        results = [_result(*run) for run in runs]
    assert not any(r.get("failed") for r in results), results
    nodes = [r["nodes"][0] for r in results]
    assert sorted(bool(n["changed"]) for n in nodes) == [False, True], nodes
    assert sorted(bool(n.get("conflict")) for n in nodes) == [False, True], nodes
    winner = [n for n in nodes if n["changed"]][0]
    loser = [n for n in nodes if n.get("conflict")][0]
    assert loser["msg"].startswith("%s changed since it was read: " % name)
    if racing:
        # The loser's write was refused and it compared the node read again.
        assert loser["conflicts"] == 1 and "conflicts" not in winner, nodes
        assert sum(1 for r in proxy.requests if r["method"] == "PATCH") == 2
    assert sorted(r["summary"]["conflict"] for r in results) == [[], [name]]
    state = node_state(kube_admin, name)
    record = json.loads(state["annotations"][PREFIX + "gate"])
    assert record["reason"] == winner["gate"]["reason"] and record["plan"] == winner["gate"]["plan"]
    assert state["taints"] == [(PREFIX + "gated", None, "NoSchedule")]
    events = node_events(kube_admin, name)
    assert len(events) == 1 and events[0][1] == "NodeGated" and winner["gate"]["reason"] in events[0][2], events


def test_every_gate_and_open_leaves_an_event_with_the_reason_and_check_mode_none(kube_admin, make_nodes, run_as):
    name = make_nodes(1)[0]
    checked = admission(run_as, [name], reason="PSI high", plan_id="plan-7", check=True)
    assert checked["changed"] is True and checked["nodes"][0]["event"]["reason"] == "NodeGated", checked
    assert "error" not in checked["nodes"][0]["event"]
    assert node_events(kube_admin, name) == [] and node_state(kube_admin, name)["taints"] == []

    gated = admission(run_as, [name], reason="PSI high", plan_id="plan-7", requested_by="loop")
    assert gated["nodes"][0]["event"] == {"type": "Normal", "reason": "NodeGated",
                                          "note": "Closed to new VMs by loop: PSI high (plan plan-7)"}, gated
    opened = admission(run_as, [name], state="open", reason="calm for 10 minutes", requested_by="loop")
    assert "error" not in opened["nodes"][0]["event"], opened
    assert node_events(kube_admin, name) == [
        ("Normal", "NodeGated", "Closed to new VMs by loop: PSI high (plan plan-7)", "overcommit.control"),
        ("Normal", "NodeOpened", "Opened to new VMs by loop: calm for 10 minutes", "overcommit.control")]
    # Nothing more to open: no Event.
    assert admission(run_as, [name], state="open")["changed"] is False
    assert len(node_events(kube_admin, name)) == 2


def test_bad_policy_state_or_expected_names_the_field_and_changes_nothing(kube_admin, make_nodes, run_as):
    name = make_nodes(1)[0]
    before = node_state(kube_admin, name)
    for value in ([1, 2], "gated_at=1"):
        not_mapping = admission(run_as, [name], policy_state=value)
        assert not_mapping["failed"] is True and not_mapping["field"] == "policy_state", not_mapping
        assert not_mapping["msg"].startswith("policy_state=") and "a mapping" in not_mapping["msg"]
        assert "Traceback" not in json.dumps(not_mapping)
    seen = {"gated": False, "gate_time": None, "taints": [], "cordoned": False}
    wrong = admission(run_as, [name], expected={name: dict(seen, gated="no")})
    assert wrong["failed"] is True and wrong["field"] == "expected.%s.gated" % name, wrong
    assert wrong["msg"] == "expected.%s.gated='no' is out of range: allowed true or false" % name
    assert "Traceback" not in json.dumps(wrong)
    missing = admission(run_as, [name], expected={name: {"gated": False}})
    assert missing["failed"] is True and missing["field"] == "expected.%s.gate_time" % name, missing
    listed = admission(run_as, [name], expected={name: dict(seen, taints="a:NoSchedule")})
    assert listed["failed"] is True and listed["field"] == "expected.%s.taints" % name, listed
    assert node_state(kube_admin, name) == before
    assert node_events(kube_admin, name) == []


def test_node_policy_state_sets_and_clears_the_kill_switch_and_the_state_leaving_the_gate_alone(
        kube_admin, make_nodes, run_as):
    """overcommit.control.node_policy_state as the operator identity (the ClusterRole's rights)."""
    name, missing = make_nodes(1)[0], "oc-it-no-such-node"
    admission(run_as, [name], policy_state=STATE)  # gated, with its state
    gated = node_state(kube_admin, name)

    def policy_state(**args):
        return run_as("operator", "node_policy_state", args, check=args.pop("check", False))

    preview = policy_state(names=[name], paused=True, check=True)
    assert preview["changed"] is True and info(run_as, name)["paused"] is False, preview
    result = policy_state(names=[name, missing], paused=True, missing="ignore")
    assert result["changed"] is True and not result.get("failed"), result
    assert [(n["name"], n.get("paused"), n.get("skipped")) for n in result["nodes"]] == [
        (name, True, None), (missing, None, True)]
    read = info(run_as, name)
    assert read["paused"] is True and read["policy"] == STATE and read["gate"] is not None
    assert policy_state(names=[name], paused=True)["changed"] is False

    # The state removed and the switch cleared: the gate (taints, record) is as it was.
    assert policy_state(states={name: None}, names=[name], paused=False)["changed"] is True
    read = info(run_as, name)
    assert read["paused"] is False and read["policy"] is None and read["gate"] is not None
    after = node_state(kube_admin, name)
    assert after["taints"] == gated["taints"] and PREFIX + "gate" in after["annotations"]
    assert PREFIX + "paused" not in after["labels"]

    refused = policy_state(names=["Not A Node"], paused=True)
    assert refused.get("failed") and "names[0]" in refused["msg"], refused
