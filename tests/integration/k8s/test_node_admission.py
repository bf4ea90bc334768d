"""node_admission against the lab's real kube-apiserver, run with
ansible-playbook. Every test works on Node objects it creates."""

import json
import threading

import pytest

from apiproxy import ApiProxy, kubeconfig_parts
from nodes import add_foreign_taint, node_state
from run_module import run_module

pytestmark = pytest.mark.isolated

PREFIX = "overcommit.control/"
GATE = (PREFIX + "gated", None, "NoSchedule")
FOREIGN = ("example.com/maintenance", "disk", "NoSchedule")
FOREIGN_TAINT = {"key": FOREIGN[0], "value": FOREIGN[1], "effect": FOREIGN[2]}


def gate(run_as, names, identity="admin", **args):
    args = dict({"names": names, "max_gated_share": 1.0}, **args)
    return run_as(identity, "node_admission", args, check=args.pop("check", False), diff=args.pop("diff", False))


def test_gate_and_open_keep_foreign_taints_and_labels_and_are_idempotent(kube_admin, make_nodes, run_as):
    names = make_nodes(2, taints=[FOREIGN_TAINT], labels={"example.com/team": "db"})

    gated = gate(run_as, names, taints=[{"key": "pressure", "value": "cpu"}], labels={"esxi-host": "esx-03"},
                 reason="PSI high", requested_by="oncall", diff=True)
    assert not gated.get("failed"), gated
    assert [r["changed"] for r in gated["nodes"]] == [True, True]
    assert len(gated["diff"]) == 2
    for name in names:
        state = node_state(kube_admin, name)
        assert state["taints"] == sorted([FOREIGN, (PREFIX + "pressure", "cpu", "NoSchedule")])
        assert state["labels"]["example.com/team"] == "db"
        assert state["labels"][PREFIX + "esxi-host"] == "esx-03"
        record = json.loads(state["annotations"][PREFIX + "gate"])
        assert record["reason"] == "PSI high" and record["by"] == "oncall"
        assert record["taints"] == [PREFIX + "pressure"] and record["cordoned"] is False

    again = gate(run_as, names, taints=[{"key": "pressure", "value": "cpu"}], labels={"esxi-host": "esx-03"},
                 reason="PSI high")
    assert again["changed"] is False and [r["changed"] for r in again["nodes"]] == [False, False]

    opened = gate(run_as, names, state="open", labels={"esxi-host": None})
    assert not opened.get("failed"), opened
    for name in names:
        state = node_state(kube_admin, name)
        assert state["taints"] == [FOREIGN]
        assert PREFIX + "gate" not in state["annotations"]
        assert PREFIX + "esxi-host" not in state["labels"]
        assert state["labels"]["example.com/team"] == "db"
    assert gate(run_as, names, state="open")["changed"] is False


def test_label_selector_selects_nodes_and_default_gate_taint(kube_admin, make_nodes, run_as):
    names = make_nodes(3, labels={"overcommit.test/pool": "sel"})
    run_id = node_state(kube_admin, names[0])["labels"]["overcommit.test/run"]
    result = run_as("admin", "node_admission", {"label_selector": "overcommit.test/run=%s" % run_id,
                                                "max_gated_share": 1.0})
    assert sorted(r["name"] for r in result["nodes"]) == sorted(names)
    assert all(node_state(kube_admin, name)["taints"] == [GATE] for name in names)


def test_check_mode_is_a_server_side_dry_run_and_changes_nothing(kube_admin, make_nodes, lab):
    names = make_nodes(3, taints=[FOREIGN_TAINT])
    before = dict((name, node_state(kube_admin, name)) for name in names)
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_ADMIN"])
    with ApiProxy(server, ca_cert) as proxy:
        result = run_module("node_admission", {"names": names, "host": proxy.url, "api_key": token,
                                               "cordon": True, "max_gated_share": 1.0}, check=True, diff=True)
    assert not result.get("failed"), result
    assert [r["changed"] for r in result["nodes"]] == [True] * 3
    assert all(r["after"]["unschedulable"] is True for r in result["nodes"])
    patches = [w for w in proxy.writes() if w["path"].startswith("/api/v1/nodes/")]
    assert len(patches) == 3
    assert all(w["query"].get("dryRun") == ["All"] for w in proxy.writes())
    assert dict((name, node_state(kube_admin, name)) for name in names) == before


def test_a_writer_racing_between_read_and_write_loses_nothing(kube_admin, make_nodes, lab):
    """Just before the module's first write to each node, another owner adds
    its taint: the module's write is refused (409), and it re-reads, re-plans
    and converges with both taints kept."""
    names = make_nodes(4, taints=[FOREIGN_TAINT])
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_ADMIN"])
    raced = set()

    def other_writer_first(request):
        name = request["path"].rsplit("/", 1)[-1]
        if request["method"] == "PATCH" and name in names and name not in raced:
            raced.add(name)
            add_foreign_taint(kube_admin, name, "example.com/raced")

    with ApiProxy(server, ca_cert, before_forward=other_writer_first) as proxy:
        result = run_module("node_admission", {"names": names, "host": proxy.url, "api_key": token,
                                               "max_gated_share": 1.0})
    assert not result.get("failed"), result
    assert raced == set(names)
    assert [r.get("conflicts") for r in result["nodes"]] == [1] * 4
    for name in names:
        assert node_state(kube_admin, name)["taints"] == sorted([FOREIGN, GATE, ("example.com/raced", "x", "NoSchedule")])
    # Re-read after each conflict: one PATCH refused and one GET + PATCH per node.
    assert sum(1 for r in proxy.requests if r["method"] == "PATCH") == 8


def test_a_concurrent_writer_thread_and_the_module_both_converge(kube_admin, make_nodes, run_as):
    """Another owner adds taints to the same nodes from a thread while the
    module gates and then opens them: every foreign taint and the module's
    own outcome are there at the end, whatever the interleaving."""
    names = make_nodes(12)
    foreign_keys = ["example.com/writer-%d" % i for i in range(3)]

    def writer():
        for key in foreign_keys:
            for name in names:
                add_foreign_taint(kube_admin, name, key)

    thread = threading.Thread(target=writer)
    thread.start()
    gated = gate(run_as, names)
    thread.join()
    assert not gated.get("failed"), gated
    expected_foreign = sorted((key, "x", "NoSchedule") for key in foreign_keys)
    for name in names:
        assert node_state(kube_admin, name)["taints"] == sorted(expected_foreign + [GATE])

    thread = threading.Thread(target=lambda: [add_foreign_taint(kube_admin, n, "example.com/late") for n in names])
    thread.start()
    opened = gate(run_as, names, state="open")
    thread.join()
    assert not opened.get("failed"), opened
    late = ("example.com/late", "x", "NoSchedule")
    for name in names:
        assert node_state(kube_admin, name)["taints"] == sorted(expected_foreign + [late])


def test_open_lifts_only_the_cordon_the_gate_set(kube_admin, make_nodes, run_as):
    already = make_nodes(1, unschedulable=True)[0]
    free = make_nodes(1)[0]
    gated = gate(run_as, [already, free], cordon=True, reason="drain soon")
    assert not gated.get("failed"), gated
    assert node_state(kube_admin, already)["unschedulable"] and node_state(kube_admin, free)["unschedulable"]
    assert json.loads(node_state(kube_admin, already)["annotations"][PREFIX + "gate"])["cordoned"] is False
    assert json.loads(node_state(kube_admin, free)["annotations"][PREFIX + "gate"])["cordoned"] is True

    gate(run_as, [already, free], state="open")
    assert node_state(kube_admin, already)["unschedulable"] is True
    assert node_state(kube_admin, free)["unschedulable"] is False
    assert node_state(kube_admin, free)["taints"] == []


def test_refuses_to_close_more_than_the_allowed_share_of_the_fleet(kube_admin, make_nodes, run_as):
    """The fleet is this test's own pool of five nodes (fleet_label_selector),
    one of them cordoned by someone else: gating three more would close four
    of five, more than half."""
    pool = make_nodes(4, labels={"overcommit.test/pool": "share"}) + make_nodes(1, unschedulable=True)
    run_id = node_state(kube_admin, pool[0])["labels"]["overcommit.test/run"]
    fleet = "overcommit.test/run in (%s,%s)" % (run_id, node_state(kube_admin, pool[4])["labels"]["overcommit.test/run"])
    refused = gate(run_as, pool[:3], max_gated_share=0.5, fleet_label_selector=fleet)
    assert refused["failed"] is True
    assert refused["msg"].startswith("refusing to gate: 4 of 5 nodes of %s would be closed to new VMs (1 now), "
                                     "more than max_gated_share=0.5 allows (2 nodes); nothing was changed" % fleet)
    assert all(node_state(kube_admin, name)["taints"] == [] for name in pool)

    allowed = gate(run_as, pool[:1], max_gated_share=0.5, fleet_label_selector=fleet)
    assert not allowed.get("failed"), allowed
    assert allowed["fleet"] == {"nodes": 5, "closed_before": 1, "closed_after": 2, "max_gated_share": 0.5,
                                "max_closed": 2}
    # Closing nothing more is never refused, even over the share.
    assert not gate(run_as, pool[:1], max_gated_share=0.2, fleet_label_selector=fleet).get("failed")

    forced = gate(run_as, pool[:3], max_gated_share=0.5, fleet_label_selector=fleet, force=True)
    assert not forced.get("failed"), forced
    assert forced["fleet"]["closed_after"] == 4
    assert all(node_state(kube_admin, name)["taints"] == [GATE] for name in pool[:3])


def test_least_privilege_identity_succeeds_and_an_unbound_one_fails_clearly(kube_admin, make_nodes, run_as):
    names = make_nodes(2, taints=[FOREIGN_TAINT])
    operated = gate(run_as, names, identity="operator")
    assert not operated.get("failed"), operated
    assert all(node_state(kube_admin, name)["taints"] == sorted([FOREIGN, GATE]) for name in names)
    assert not gate(run_as, names, identity="operator", state="open").get("failed")

    denied = gate(run_as, names, identity="unbound")
    assert denied["failed"] is True
    assert "forbidden" in denied["msg"] and "overcommit-control ClusterRole" in denied["msg"]
    assert all(node_state(kube_admin, name)["taints"] == [FOREIGN] for name in names)


def test_bad_input_names_the_field_before_anything_changes(kube_admin, make_nodes, run_as):
    name = make_nodes(1)[0]
    before = node_state(kube_admin, name)
    foreign_key = gate(run_as, [name], taints=[{"key": "example.com/gate"}])
    assert foreign_key["failed"] and foreign_key["field"] == "taints[0].key"
    assert "under the prefix" in foreign_key["msg"]
    bad_share = gate(run_as, [name], max_gated_share=1.5)
    assert bad_share["failed"] and bad_share["field"] == "max_gated_share"
    bad_label = gate(run_as, [name], labels={"esxi-host": "not a label value"})
    assert bad_label["failed"] and bad_label["field"] == "labels.esxi-host"
    no_execute = gate(run_as, [name], taints=[{"key": "gated", "effect": "NoExecute"}])
    assert no_execute["failed"] and "NoExecute" in no_execute["msg"] and "effect" in no_execute["msg"]
    assert node_state(kube_admin, name) == before


def test_a_name_with_surrounding_spaces_gates_no_node(kube_admin, make_nodes, run_as):
    names = make_nodes(2)
    before = [node_state(kube_admin, name) for name in names]
    result = gate(run_as, [names[0], names[1] + " "])
    assert result["failed"] is True and result["field"] == "names" and result["nodes"] == [], result
    assert result["msg"].startswith("names[1]='%s ' has surrounding spaces" % names[1])
    assert [node_state(kube_admin, name) for name in names] == before


def test_an_unknown_node_is_reported_and_the_others_are_gated(kube_admin, make_nodes, run_as):
    name = make_nodes(1)[0]
    result = gate(run_as, ["oc-it-no-such-node", name])
    assert result["failed"] is True
    assert result["nodes"][0] == {"name": "oc-it-no-such-node", "changed": False, "failed": True,
                                  "msg": "node oc-it-no-such-node not found"}
    assert result["nodes"][1]["changed"] is True
    assert node_state(kube_admin, name)["taints"] == [GATE]


def test_connection_options_come_from_the_k8s_auth_environment_as_in_kubernetes_core(kube_admin, make_nodes, lab):
    name = make_nodes(1)[0]
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])
    args = {"names": [name], "max_gated_share": 1.0}
    no_kubeconfig = {"K8S_AUTH_KUBECONFIG": "", "KUBECONFIG": "/nonexistent"}
    by_env = run_module("node_admission", args, env=dict(no_kubeconfig, K8S_AUTH_HOST=server, K8S_AUTH_API_KEY=token,
                                                         K8S_AUTH_SSL_CA_CERT=ca_cert))
    assert not by_env.get("failed"), by_env
    assert node_state(kube_admin, name)["taints"] == [GATE]

    untrusted = run_module("node_admission", dict(args, state="open"),
                           env=dict(no_kubeconfig, K8S_AUTH_HOST=server, K8S_AUTH_API_KEY=token))
    assert untrusted["failed"] is True and "CERTIFICATE_VERIFY_FAILED" in untrusted["msg"]
    unverified = run_module("node_admission", dict(args, state="open"),
                            env=dict(no_kubeconfig, K8S_AUTH_HOST=server, K8S_AUTH_API_KEY=token,
                                     K8S_AUTH_VERIFY_SSL="false"))
    assert not unverified.get("failed"), unverified
    assert node_state(kube_admin, name)["taints"] == []

    by_context = run_module("node_admission", dict(args, context="no-such-context"),
                            env={"K8S_AUTH_KUBECONFIG": lab["OVERCOMMIT_KUBECONFIG_OPERATOR"]})
    assert by_context["failed"] is True and "no-such-context" in by_context["msg"]
