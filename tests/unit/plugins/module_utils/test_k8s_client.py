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
