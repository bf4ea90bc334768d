"""kubernetes.core's connection options on the lab's kube-apiserver, through
the modules as ansible-playbook runs them: impersonation, an HTTP proxy (a
loopback CONNECT proxy, connectproxy.py), HTTP basic auth (the lab's server
has none: a loopback front, apiproxy.ApiProxy, takes it and forwards with a
token), the request timeout (a loopback server that never answers), and a
kubeconfig given as a dict, whose token never shows in the result.
Unreachable values are refused naming the option before any request."""

import json
import time

import pytest
import yaml

from apiproxy import ApiProxy, kubeconfig_parts
from connectproxy import ConnectProxy
from nodes import node_state
from run_module import run_module

pytestmark = pytest.mark.isolated

GATE = ("overcommit.control/gated", None, "NoSchedule")
OPERATOR_USER = "overcommit-operator"
UNBOUND_USER = "overcommit-unbound"


def no_traceback(result):
    text = json.dumps(result)
    return "Traceback" not in text and "module_stderr" not in result


def gate(kubeconfig, name, **options):
    return run_module("node_admission", dict({"names": [name], "max_gated_share": 1.0, "kubeconfig": kubeconfig},
                                             **options))


# --- impersonation -------------------------------------------------------------

def test_the_admin_impersonating_an_unbound_user_has_its_permissions_only(lab, kube_admin, make_nodes):
    name = make_nodes(1)[0]
    refused = gate(lab["OVERCOMMIT_KUBECONFIG_ADMIN"], name, impersonate_user=UNBOUND_USER)
    message = refused.get("msg") or refused["nodes"][0].get("error") or ""
    assert 'User "%s" cannot' % UNBOUND_USER in message, refused
    assert no_traceback(refused)
    assert GATE not in node_state(kube_admin, name)["taints"]

    gated = gate(lab["OVERCOMMIT_KUBECONFIG_ADMIN"], name, impersonate_user=OPERATOR_USER)
    assert not gated.get("failed") and gated["changed"] is True, gated
    assert GATE in node_state(kube_admin, name)["taints"]


def test_each_impersonated_group_is_its_own_header(lab, kube_admin, make_nodes):
    """The unbound user in system:masters may write: sent as one
    comma-joined header the group would be "oc-no-such-group,system:masters"
    and the write refused."""
    name = make_nodes(1)[0]
    gated = gate(lab["OVERCOMMIT_KUBECONFIG_ADMIN"], name, impersonate_user=UNBOUND_USER,
                 impersonate_groups=["oc-no-such-group", "system:masters"])
    assert not gated.get("failed") and gated["changed"] is True, gated
    assert GATE in node_state(kube_admin, name)["taints"]


def test_impersonation_from_the_environment_and_refused_without_the_impersonate_verb(lab, make_nodes):
    names = make_nodes(1)
    refused = run_module("node_overcommit_info", {"names": names, "kubeconfig": lab["OVERCOMMIT_KUBECONFIG_ADMIN"]},
                         env={"K8S_AUTH_IMPERSONATE_USER": UNBOUND_USER})
    assert refused["failed"] is True and 'User "%s" cannot get' % UNBOUND_USER in refused["msg"], refused
    assert no_traceback(refused)

    # The operator may not impersonate anyone (the shipped ClusterRole has no impersonate verb).
    cannot = run_module("node_overcommit_info", {"names": names, "kubeconfig": lab["OVERCOMMIT_KUBECONFIG_OPERATOR"],
                                                 "impersonate_user": "lab-admin"})
    assert cannot["failed"] is True and "cannot impersonate" in cannot["msg"], cannot


# --- proxy ---------------------------------------------------------------------

def test_the_api_server_is_reached_through_the_proxy(lab, make_nodes):
    names = make_nodes(2)
    server, _ca, _token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])
    with ConnectProxy() as proxy:
        result = run_module("node_overcommit_info", {"names": names, "proxy": proxy.url,
                                                     "kubeconfig": lab["OVERCOMMIT_KUBECONFIG_OPERATOR"]})
    assert not result.get("failed"), result
    assert sorted(node["name"] for node in result["nodes"]) == sorted(names)
    assert proxy.tunnels and set(proxy.tunnels) == {server.split("://", 1)[1]}, proxy.requests


def test_no_proxy_bypasses_the_proxy(lab, make_nodes):
    names = make_nodes(1)
    with ConnectProxy() as proxy:
        result = run_module("node_overcommit_info", {"names": names, "proxy": proxy.url, "no_proxy": "localhost,127.0.0.1",
                                                     "kubeconfig": lab["OVERCOMMIT_KUBECONFIG_OPERATOR"]})
    assert not result.get("failed"), result
    assert proxy.requests == []


def test_a_proxy_that_wants_credentials_refuses_the_module_without_proxy_headers(lab, make_nodes):
    names = make_nodes(1)
    args = {"names": names, "kubeconfig": lab["OVERCOMMIT_KUBECONFIG_OPERATOR"], "retry_seconds": 0}
    with ConnectProxy(credentials=("proxyuser", "proxy-pw-7")) as proxy:
        refused = run_module("node_overcommit_info", dict(args, proxy=proxy.url))
        assert refused["failed"] is True and "407" in refused["msg"] and proxy.url in refused["msg"], refused
        assert no_traceback(refused) and proxy.tunnels == []

        allowed = run_module("node_overcommit_info", dict(args, proxy=proxy.url, proxy_headers={
            "proxy_basic_auth": "proxyuser:proxy-pw-7", "user_agent": "oc-lab-test/1.0"}))
        assert not allowed.get("failed"), allowed
        assert proxy.tunnels and proxy.requests[-1][2]["user-agent"] == "oc-lab-test/1.0"
        assert "proxy-pw-7" not in json.dumps(allowed)

        # The same from K8S_AUTH_PROXY and K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH.
        tunnels = len(proxy.tunnels)
        from_env = run_module("node_overcommit_info", args, env={
            "K8S_AUTH_PROXY": proxy.url, "K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH": "proxyuser:proxy-pw-7"})
        assert not from_env.get("failed"), from_env
        assert len(proxy.tunnels) > tunnels


# --- basic auth ----------------------------------------------------------------

def test_username_and_password_are_sent_as_basic_auth(lab, make_nodes):
    names = make_nodes(1)
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])
    with ApiProxy(server, ca_cert, basic_auth=("ann", "basic-pw-3", token)) as front:
        args = {"names": names, "host": front.url, "username": "ann"}
        result = run_module("node_overcommit_info", dict(args, password="basic-pw-3"))
        assert not result.get("failed"), result
        assert [node["name"] for node in result["nodes"]] == names
        assert front.unauthorized == 0 and front.requests
        assert "basic-pw-3" not in json.dumps(result)

        wrong = run_module("node_overcommit_info", dict(args, password="not-it"))
        assert wrong["failed"] is True and "Unauthorized" in wrong["msg"], wrong
        assert front.unauthorized == 1 and no_traceback(wrong)


# --- request timeout -----------------------------------------------------------

def test_a_server_that_never_answers_fails_the_task_naming_the_request_timeout(lab, make_nodes):
    names = make_nodes(1)
    _server, _ca, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])
    with ConnectProxy(answer=False) as silent:
        started = time.monotonic()
        once = run_module("node_overcommit_info", {"names": names, "host": silent.url, "api_key": token,
                                                   "request_timeout": 2, "retry_seconds": 0})
        retried = run_module("node_overcommit_info", {"names": names, "host": silent.url, "api_key": token,
                                                      "request_timeout": 1, "retry_seconds": 2})
        elapsed = time.monotonic() - started
    for result, timeout in ((once, "2"), (retried, "1")):
        assert result["failed"] is True, result
        assert "did not answer within request_timeout=%s s (read timed out)" % timeout in result["msg"], result
        assert no_traceback(result)
    assert "tried" in retried["msg"] and retried["retries"]["errors"] == ["read timed out"], retried
    assert len(silent.requests) >= 3
    # Bounded, not hung: a generous limit, far above the timeouts and two ansible-playbook runs.
    assert elapsed < 120


def test_an_unanswered_connect_through_the_proxy_times_out_too(lab, make_nodes):
    names = make_nodes(1)
    with ConnectProxy(answer=False) as silent:
        result = run_module("node_overcommit_info", {"names": names, "proxy": silent.url, "request_timeout": 1,
                                                     "retry_seconds": 0,
                                                     "kubeconfig": lab["OVERCOMMIT_KUBECONFIG_OPERATOR"]})
    assert result["failed"] is True and "within request_timeout=1 s" in result["msg"], result
    assert "through the proxy %s" % silent.url in result["msg"] and no_traceback(result)


# --- a kubeconfig given as a dict ----------------------------------------------

def test_the_token_of_a_dict_kubeconfig_never_shows_in_the_result(lab, make_nodes):
    names = make_nodes(1)
    with open(lab["OVERCOMMIT_KUBECONFIG_OPERATOR"]) as handle:
        kubeconfig = yaml.safe_load(handle)
    token = kubeconfig["users"][0]["user"]["token"]

    result = run_module("node_overcommit_info", {"names": names, "kubeconfig": kubeconfig})
    assert not result.get("failed"), result
    assert [node["name"] for node in result["nodes"]] == names
    shown = result["invocation"]["module_args"]["kubeconfig"]
    assert shown["users"][0]["user"]["token"] != token and shown["clusters"] == kubeconfig["clusters"]

    # Nor when the task fails: in the modules' own checks, in Ansible's
    # validation of the options, or on the server's refusal.
    failures = [
        run_module("node_overcommit_info", {"names": names, "kubeconfig": kubeconfig, "request_timeout": 0}),
        run_module("node_overcommit_info", {"names": names, "kubeconfig": kubeconfig, "request_timeout": "soon"}),
        run_module("node_overcommit_info", {"names": names, "kubeconfig": kubeconfig,
                                            "impersonate_user": "lab-admin"}),
    ]
    for failed in [result] + failures:
        assert token not in json.dumps(failed), failed
    assert [failed["failed"] for failed in failures] == [True, True, True], failures
    assert "kubeconfig" in failures[1]["invocation"]["module_args"], failures[1]


# --- refused before any request ------------------------------------------------

def test_options_that_cannot_work_fail_naming_the_option_before_any_request(lab):
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])
    cases = [
        ({"password": "pw-without-user"}, "password"),
        ({"impersonate_groups": ["ops"]}, "impersonate_groups"),
        ({"proxy": "socks5://127.0.0.1:1080"}, "proxy"),
        ({"request_timeout": -1}, "request_timeout"),
    ]
    with ApiProxy(server, ca_cert) as front:
        results = [run_module("node_overcommit_info", dict({"host": front.url, "api_key": token}, **options))
                   for options, _field in cases]
    for result, (_options, field) in zip(results, cases):
        assert result["failed"] is True and result["field"] == field and field in result["msg"], result
        assert no_traceback(result)
    assert front.requests == []
    assert "pw-without-user" not in json.dumps(results)
