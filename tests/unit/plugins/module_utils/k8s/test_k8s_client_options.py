"""The connection options kubernetes.core users expect (basic auth, proxy,
impersonation) and the request timeout: refused when they cannot work,
naming the option, before any request; secrets of a dict kubeconfig found
for no_log; and the client configuration they make. The lab tests in
tests/integration/k8s/test_k8s_connection_options.py send them to the real
API server."""

import base64

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.k8s import client as k8s

REFUSED = [
    # (options, field, words of the message)
    ({"password": "s3cret"}, "password", ["password is set without username", "only together with username"]),
    ({"username": "ann"}, "username", ["username='ann' is set without password", "only together with password"]),
    ({"username": "", "password": "p"}, "username", ["username=''", "a user name"]),
    ({"username": "ann", "password": "p", "api_key": "t"}, "username", ["api_key are both set", "not both"]),
    ({"impersonate_groups": ["ops"]}, "impersonate_groups",
     ["impersonate_groups=['ops'] is set without impersonate_user", "only together with impersonate_user"]),
    ({"impersonate_user": " "}, "impersonate_user", ["impersonate_user=' '", "a user name"]),
    ({"impersonate_user": "ann", "impersonate_groups": ["ops", ""]}, "impersonate_groups", ["none empty"]),
    ({"proxy": "socks5://127.0.0.1:1080"}, "proxy", ["proxy='socks5://127.0.0.1:1080'", "an http:// or https:// URL"]),
    ({"proxy": "proxy.example:3128"}, "proxy", ["proxy='proxy.example:3128'", "with a host"]),
    ({"proxy": "http://"}, "proxy", ["proxy='http://'"]),
    ({"proxy": "http://proxy.example:99999"}, "proxy", ["proxy='http://proxy.example:99999'"]),
    ({"proxy": "http://proxy.example:port"}, "proxy", ["proxy='http://proxy.example:port'"]),
    ({"proxy": "http://p:3128", "proxy_headers": {"proxy_basic_auth": "nocolon"}}, "proxy_headers.proxy_basic_auth",
     ["proxy_headers.proxy_basic_auth is not USER:PASSWORD"]),
    ({"proxy": "http://p:3128", "proxy_headers": {"basic_auth": "nocolon"}}, "proxy_headers.basic_auth",
     ["proxy_headers.basic_auth is not USER:PASSWORD"]),
    ({"request_timeout": 0.0}, "request_timeout", ["request_timeout=0.0 is out of range", "more than 0 seconds"]),
    ({"request_timeout": -5.0}, "request_timeout", ["request_timeout=-5.0"]),
]


@pytest.mark.parametrize("options, field, words", REFUSED, ids=[case[1] + ":" + repr(case[0]) for case in REFUSED])
def test_options_that_cannot_work_are_refused_naming_the_option(options, field, words):
    with pytest.raises(ValueRangeError) as refused:
        k8s.check_connection_options(options)
    assert refused.value.field == field
    for word in words:
        assert word in str(refused.value)


def test_a_refused_password_is_not_in_the_message():
    with pytest.raises(ValueRangeError) as refused:
        k8s.check_connection_options({"password": "s3cret"})
    assert "s3cret" not in str(refused.value)
    with pytest.raises(ValueRangeError) as refused:
        k8s.check_connection_options({"proxy": "http://p:3128", "proxy_headers": {"basic_auth": "s3cret"}})
    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize("options", [
    {},
    {"username": "ann", "password": ""},
    {"impersonate_user": "ann"},
    {"impersonate_user": "ann", "impersonate_groups": ["ops", "system:authenticated"]},
    {"proxy": "http://proxy.example:3128", "no_proxy": "localhost,10.0.0.0/8"},
    {"proxy": "https://user:pw@[::1]:3128",
     "proxy_headers": {"proxy_basic_auth": "u:p", "basic_auth": None, "user_agent": "ops/1.0"}},
    {"proxy_headers": {"proxy_basic_auth": None, "basic_auth": None, "user_agent": None}},
    {"request_timeout": 0.5},
])
def test_options_that_work_pass(options):
    k8s.check_connection_options(options)


def test_the_credentials_of_a_dict_kubeconfig_and_of_a_proxy_url_are_secrets():
    kubeconfig = {
        "clusters": [{"name": "c", "cluster": {"server": "https://api:6443", "certificate-authority-data": "Q0E="}}],
        "users": [
            {"name": "t", "user": {"token": "tok-123"}},
            {"name": "b", "user": {"username": "ann", "password": "pw-456"}},
            {"name": "k", "user": {"client-certificate-data": "Q0VSVA==", "client-key-data": "S0VZLTc4OQ=="}},
            {"name": "o", "user": {"auth-provider": {"name": "oidc", "config": {
                "client-id": "kube", "client-secret": "cs-1", "id-token": "idt-2", "refresh-token": "rt-3",
                "idp-issuer-url": "https://idp.example"}}}},
            {"name": "odd", "user": None}, "not a user",
        ],
    }
    secrets = k8s.connection_secrets({"kubeconfig": kubeconfig, "proxy": "http://proxyuser:px-0@proxy.example:3128"})
    assert secrets == {"tok-123", "pw-456", "S0VZLTc4OQ==", "cs-1", "idt-2", "rt-3", "px-0"}


@pytest.mark.parametrize("kubeconfig", ["/etc/kube/config", None, {"users": "odd"}, {"users": [{"user": "x"}]}])
def test_a_kubeconfig_path_or_one_without_users_holds_no_secret(kubeconfig):
    assert k8s.connection_secrets({"kubeconfig": kubeconfig, "proxy": "http://[broken"}) == set()


def test_username_and_password_are_http_basic_auth_and_need_no_kubeconfig_with_host():
    configuration = k8s.build_configuration({"host": "https://api.example:6443", "username": "ann",
                                             "password": "pw", "kubeconfig": "/nonexistent"})
    scheme, _space, encoded = configuration.api_key["authorization"].partition(" ")
    assert scheme == "Basic" and base64.b64decode(encoded) == b"ann:pw"


def test_proxy_no_proxy_and_proxy_headers_go_to_the_configuration():
    configuration = k8s.build_configuration({
        "host": "https://api.example:6443", "api_key": "t", "proxy": "http://proxy.example:3128",
        "no_proxy": "localhost,.local", "proxy_headers": {"proxy_basic_auth": "pu:pp", "basic_auth": None,
                                                          "user_agent": "ops/1.0"}})
    assert configuration.proxy == "http://proxy.example:3128" and configuration.no_proxy == "localhost,.local"
    assert configuration.proxy_headers == {
        "proxy-authorization": "Basic " + base64.b64encode(b"pu:pp").decode(), "user-agent": "ops/1.0"}


def test_proxy_headers_left_empty_set_no_header():
    configuration = k8s.build_configuration({"host": "https://api.example:6443", "api_key": "t",
                                             "proxy_headers": {"proxy_basic_auth": None, "basic_auth": None,
                                                               "user_agent": None}})
    assert not configuration.proxy_headers


def test_impersonation_is_one_user_header_and_one_group_header_per_group():
    headers = k8s.impersonation_headers({"impersonate_user": "ann", "impersonate_groups": ["ops", "dev"]})
    assert [(str(name), value) for name, value in headers] == [
        ("Impersonate-User", "ann"), ("Impersonate-Group", "ops"), ("Impersonate-Group", "dev")]
    # Each group header is a key of its own in the client's header dict.
    assert len(dict(headers)) == 3
    assert k8s.impersonation_headers({"impersonate_groups": None}) == []


def test_the_request_timeout_defaults_to_30_seconds():
    client = k8s.K8sClient({"host": "https://api.example:6443", "api_key": "t"})
    assert client.request_timeout == k8s.REQUEST_TIMEOUT == 30.0
    client.close()
