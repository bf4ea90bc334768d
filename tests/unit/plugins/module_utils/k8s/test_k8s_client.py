import pytest

from ansible_collections.overcommit.control.plugins.module_utils.k8s import client as k8s


class ScriptedClient(k8s.K8sClient):
    """The client's read-modify-write loop over scripted answers instead of a server."""

    def __init__(self, conflicts):
        self.dry_run = False
        self.conflicts_left = conflicts
        self.calls = []

    def request(self, method, path, query=None, body=None, content_type=None, parse=True, accept=None):
        self.calls.append((method, body))
        if method == "GET":
            return {"metadata": {"resourceVersion": str(len(self.calls))}, "spec": {}}
        if self.conflicts_left:
            self.conflicts_left -= 1
            raise k8s.ConflictError("conflict", status=409)
        return None


def test_a_conflict_is_read_again_planned_again_and_written_with_the_fresh_version():
    scripted = ScriptedClient(conflicts=2)
    planned_from = []

    def plan(obj):
        planned_from.append(obj["metadata"]["resourceVersion"])
        return {"spec": {"taints": []}}

    start = {"metadata": {"resourceVersion": "0"}, "spec": {}}
    current, patch, conflicts = scripted.read_modify_write("/api/v1/nodes/n", plan, current=start)
    assert conflicts == 2
    assert planned_from == ["0", "2", "4"]
    assert patch["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"] == "4"
    assert [method for method, _body in scripted.calls] == ["PATCH", "GET", "PATCH", "GET", "PATCH"]


def test_it_gives_up_after_the_attempts_with_a_clear_error():
    scripted = ScriptedClient(conflicts=99)
    with pytest.raises(k8s.K8sClientError, match="changed 5 times while it was being written"):
        scripted.read_modify_write("/api/v1/nodes/n", lambda obj: {"spec": {}})


def test_nothing_to_change_writes_nothing():
    scripted = ScriptedClient(conflicts=0)
    _current, patch, conflicts = scripted.read_modify_write("/api/v1/nodes/n", lambda obj: None)
    assert patch is None and conflicts == 0 and [m for m, _b in scripted.calls] == ["GET"]


def test_host_and_token_need_no_kubeconfig_and_options_override():
    configuration = k8s.build_configuration({"host": "https://api.example:6443/", "api_key": "t0k",
                                             "kubeconfig": "/nonexistent", "validate_certs": False,
                                             "ca_cert": "/etc/ca.pem"})
    assert configuration.host == "https://api.example:6443"
    assert configuration.api_key == {"authorization": "Bearer t0k"}
    assert configuration.verify_ssl is False and configuration.ssl_ca_cert == "/etc/ca.pem"


def test_an_unreadable_kubeconfig_is_an_error_naming_it():
    with pytest.raises(k8s.K8sClientError, match="kubeconfig=/nonexistent/config"):
        k8s.build_configuration({"kubeconfig": "/nonexistent/config"})


def test_forbidden_points_at_the_shipped_role_and_conflicts_have_their_own_type():
    forbidden = k8s._error("PATCH", "/api/v1/nodes/n", 403, '{"message": "nodes \\"n\\" is forbidden"}')
    assert str(forbidden).startswith('PATCH /api/v1/nodes/n: nodes "n" is forbidden')
    assert "overcommit-control ClusterRole" in str(forbidden)
    assert isinstance(k8s._error("PATCH", "/x", 409, "{}"), k8s.ConflictError)


# --- transient faults --------------------------------------------------------
# The fault-injecting proxy of tests/integration/k8s/test_transient_faults.py
# covers dropped connections, 429 and 500 on the lab; here a fake transport
# answers in place of the server, with time injected.

import http.client  # noqa: E402
import json  # noqa: E402

import urllib3  # noqa: E402


class Answer(object):
    def __init__(self, status, body=None, retry_after=None):
        self.status = status
        self.data = json.dumps(body if body is not None else {"message": "HTTP %d" % status}).encode()
        self.headers = {"Retry-After": retry_after} if retry_after is not None else {}

    def read(self):
        return self.data

    def getheader(self, name, default=None):
        return self.headers.get(name, default)


def dropped():
    return urllib3.exceptions.ProtocolError(
        "Connection aborted.", http.client.RemoteDisconnected("Remote end closed connection without response"))


class FakeApi(object):
    """Answers each call with the next scripted answer (an Answer, or an exception to raise)."""

    class configuration(object):
        host = "https://api.example:6443"

    def __init__(self, answers):
        self.answers = list(answers)
        self.sent = []
        self.timeouts = []

    def param_serialize(self, method, path, query_params=None, header_params=None, body=None, auth_settings=None):
        return (method, path, query_params, body)

    def call_api(self, method, path, query_params, body, _request_timeout=None):
        self.sent.append((method, path, body))
        self.timeouts.append(_request_timeout)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def close(self):
        pass


class Clock(object):
    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds

    def __call__(self):
        return self.now


def faked(answers, retry_seconds=30.0, dry_run=False):
    clock = Clock()
    client = k8s.K8sClient({"host": "https://api.example:6443", "api_key": "t", "retry_seconds": retry_seconds},
                           dry_run=dry_run, sleep=clock.sleep, clock=clock, rand=lambda: 0.5)
    client.api = FakeApi(answers)
    return client, clock


NODE = {"metadata": {"name": "n", "resourceVersion": "7"}, "spec": {}}


def test_429_then_500_then_a_dropped_connection_are_retried_and_logged():
    client, clock = faked([Answer(429, retry_after="2"), Answer(500), dropped(), Answer(200, NODE)])
    assert client.get("/api/v1/nodes/n") == NODE
    assert len(client.api.sent) == 4
    # Retry-After (2 s) above the jittered 0.25 s; then half of 1 s and of 2 s.
    assert clock.sleeps == [2.0, 0.5, 1.0]
    assert client.retry_log.report() == {"attempts": 3, "waited_seconds": 3.5,
                                         "errors": ["HTTP 429", "HTTP 500", "connection dropped"]}


def test_no_retry_no_report():
    client, _clock = faked([Answer(200, NODE)])
    client.get("/api/v1/nodes/n")
    assert client.retry_log.report() is None


def test_other_client_errors_and_conflicts_are_not_retried():
    for status, error in ((404, k8s.K8sClientError), (403, k8s.K8sClientError), (409, k8s.ConflictError),
                          (422, k8s.K8sClientError)):
        client, clock = faked([Answer(status), Answer(200, NODE)])
        with pytest.raises(error) as raised:
            client.request("PATCH", "/api/v1/nodes/n", body={"metadata": {"resourceVersion": "7"}})
        assert raised.value.status == status and len(client.api.sent) == 1 and clock.sleeps == []


def test_a_certificate_error_is_not_retried():
    import ssl
    failure = urllib3.exceptions.SSLError(ssl.SSLCertVerificationError("certificate verify failed"))
    client, clock = faked([failure])
    with pytest.raises(k8s.K8sClientError, match="cannot reach the API server"):
        client.get("/api/v1/nodes/n")
    assert clock.sleeps == [] and client.retry_log.report() is None


def test_a_fault_outlasting_the_time_fails_naming_it_and_how_long_it_was_tried():
    client, clock = faked([Answer(503)] * 50, retry_seconds=5.0)
    with pytest.raises(k8s.K8sClientError) as raised:
        client.get("/api/v1/nodes")
    message = str(raised.value)
    assert message.startswith("GET /api/v1/nodes: HTTP 503: ")
    assert "tried %d times over" % len(client.api.sent) in message
    assert raised.value.status == 503 and clock.now <= 5.0
    assert "Traceback" not in message


def test_retry_seconds_zero_tries_once():
    client, clock = faked([dropped(), Answer(200, NODE)], retry_seconds=0)
    with pytest.raises(k8s.K8sClientError, match="cannot reach the API server"):
        client.get("/api/v1/nodes/n")
    assert len(client.api.sent) == 1 and clock.sleeps == []


def test_every_request_has_the_request_timeout_and_a_timed_out_one_fails_naming_it():
    timed_out = urllib3.exceptions.ReadTimeoutError(None, "/api/v1/nodes/n", "Read timed out. (read timeout=2.5)")
    client, _clock = faked([Answer(200, NODE), timed_out], retry_seconds=0)
    client.request_timeout = 2.5
    client.get("/api/v1/nodes/n")
    with pytest.raises(k8s.K8sClientError) as raised:
        client.get("/api/v1/nodes/n")
    assert client.api.timeouts == [2.5, 2.5]
    assert str(raised.value) == ("GET /api/v1/nodes/n: the API server at https://api.example:6443 did not answer "
                                 "within request_timeout=2.5 s (read timed out)")


def test_a_timed_out_read_is_retried_within_retry_seconds():
    timed_out = urllib3.exceptions.ReadTimeoutError(None, "/api/v1/nodes/n", "Read timed out.")
    client, _clock = faked([timed_out, Answer(200, NODE)])
    assert client.get("/api/v1/nodes/n") == NODE
    assert client.retry_log.report()["errors"] == ["read timed out"]


def test_unguarded_writes_are_resent_only_after_faults_that_precede_their_being_applied():
    unguarded = {"metadata": {"labels": {"a": "b"}}}
    for answer in (dropped(), Answer(500), Answer(502), Answer(504)):
        client, _clock = faked([answer, Answer(200, NODE)])
        with pytest.raises(k8s.K8sClientError):
            client.request("PATCH", "/api/v1/nodes/n", body=unguarded, content_type=k8s.MERGE_PATCH)
        assert len(client.api.sent) == 1
    refused = urllib3.exceptions.NewConnectionError(None, "Connection refused")
    for answer in (Answer(429), Answer(503), refused):
        client, _clock = faked([answer, Answer(200, NODE)])
        client.request("PATCH", "/api/v1/nodes/n", body=unguarded, content_type=k8s.MERGE_PATCH)
        assert len(client.api.sent) == 2


def test_a_dry_run_write_is_always_safe_to_resend():
    client, _clock = faked([dropped(), Answer(200, NODE)], dry_run=True)
    client.request("POST", "/api/v1/namespaces/default/configmaps", body={"metadata": {"generateName": "x-"}})
    assert len(client.api.sent) == 2


def test_a_named_create_lost_on_a_dropped_connection_is_not_made_twice():
    event = {"metadata": {"name": "n.17", "namespace": "default"}, "note": "gated"}
    path = "/apis/events.k8s.io/v1/namespaces/default/events"
    client, _clock = faked([dropped(), Answer(409, {"message": "already exists", "reason": "AlreadyExists"})])
    assert client.create(path, event) == event
    assert [(method, sent_path) for method, sent_path, _body in client.api.sent] == [("POST", path), ("POST", path)]
    # Without a lost try, AlreadyExists is the server's answer to report.
    client, _clock = faked([Answer(409, {"message": "already exists"})])
    with pytest.raises(k8s.ConflictError):
        client.create(path, event)
    # With generateName a second copy would be a second object: not resent after a drop.
    client, _clock = faked([dropped(), Answer(201, event)])
    with pytest.raises(k8s.K8sClientError, match="cannot reach"):
        client.create(path, {"metadata": {"generateName": "n."}})
    assert len(client.api.sent) == 1


def test_a_guarded_patch_lost_on_a_dropped_connection_counts_as_written_when_the_object_holds_it():
    gated = {"metadata": {"name": "n", "resourceVersion": "8", "annotations": {"g": "on"}}, "spec": {}}
    client, _clock = faked([dropped(), Answer(409, {"message": "conflict"}), Answer(200, gated)])
    current, patch, conflicts = client.read_modify_write(
        "/api/v1/nodes/n", lambda obj: {"metadata": {"annotations": {"g": "on"}}}, current=NODE)
    assert patch == {"metadata": {"annotations": {"g": "on"}, "resourceVersion": "7"}}
    assert conflicts == 0 and current is NODE
    assert [method for method, _path, _body in client.api.sent] == ["PATCH", "PATCH", "GET"]
    assert client.retry_log.report()["errors"] == ["connection dropped"]


def test_a_guarded_patch_lost_on_a_dropped_connection_then_refused_is_a_conflict_when_another_wrote():
    other = {"metadata": {"name": "n", "resourceVersion": "8", "annotations": {"g": "off"}}, "spec": {}}
    done = {"metadata": {"name": "n", "resourceVersion": "9", "annotations": {"g": "on"}}, "spec": {}}
    planned_from = []

    def plan(obj):
        planned_from.append(obj["metadata"]["resourceVersion"])
        return {"metadata": {"annotations": {"g": "on"}}}

    client, _clock = faked([dropped(), Answer(409, {"message": "conflict"}), Answer(200, other), Answer(200, done)])
    _current, patch, conflicts = client.read_modify_write("/api/v1/nodes/n", plan, current=NODE)
    # Read once after the refusal, planned again from it (no second GET), written with its version.
    assert planned_from == ["7", "8"] and conflicts == 1 and patch["metadata"]["resourceVersion"] == "8"
    assert [method for method, _path, _body in client.api.sent] == ["PATCH", "PATCH", "GET", "PATCH"]


def test_once_the_server_is_gone_for_the_whole_retry_time_the_requests_left_fail_at_once():
    client, clock = faked([dropped()] * 20 + [Answer(200, NODE)], retry_seconds=5.0)
    with pytest.raises(k8s.K8sClientError, match="tried"):
        client.get("/api/v1/nodes/a")
    sent, waited = len(client.api.sent), clock.now
    with pytest.raises(k8s.K8sClientError, match="not sent: the API server was not reachable earlier in this task"):
        client.get("/api/v1/nodes/b")
    assert len(client.api.sent) == sent and clock.now == waited
