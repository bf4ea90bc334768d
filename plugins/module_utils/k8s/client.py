# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The only code that talks to the Kubernetes API: one connection built from
the kubernetes.core-style options, plain JSON in and out, check mode as a
server-side dry run, the read-modify-write loop that retries on 409, and
retries of transient faults (429, 5xx, dropped connections) with jittered
back-off within a bounded total time, recorded in `retry_log`."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import random
import ssl
import time

from ansible.module_utils.basic import env_fallback
from ansible.module_utils.six.moves.urllib.parse import urlsplit
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal, ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.common.retry import (
    RetryLog, Transient, jittered_backoff, retry_note)
from ansible_collections.overcommit.control.plugins.module_utils.common.tls import certificate_hint

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
except ImportError:  # reported by the module through HAS_KUBERNETES
    k8s_client = None

try:
    from urllib3 import exceptions as urllib3_errors
    from urllib3.util import make_headers
except ImportError:  # comes with kubernetes
    urllib3_errors = None

HAS_KUBERNETES = k8s_client is not None

MERGE_PATCH = "application/merge-patch+json"
# Merges lists of containers by name (pods/resize takes it).
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
# Names and labels only: a fraction of the bytes of whole objects.
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
# As Kubernetes' own PatchNodeTaints (retry.DefaultBackoff: 4 steps), plus one.
CONFLICT_ATTEMPTS = 5
LIST_PAGE = 500
# Transient faults: tries and back-off (full jitter up to min(RETRY_MAX_DELAY,
# RETRY_DELAY * 2**n)); the total time is the retry_seconds option.
RETRY_TRIES = 8
RETRY_DELAY = 0.5
RETRY_MAX_DELAY = 8.0
RETRY_SECONDS = 30.0
# Seconds one request may take (connecting, then waiting for the answer)
# before it counts as a timed out connection: a hung API server fails the
# task (or the request is retried within retry_seconds) instead of hanging it.
REQUEST_TIMEOUT = 30.0
# Answered before the request was acted on: retried for any request.
RETRY_ALWAYS = (429, 503)
# May come after the request was acted on: retried only for requests that
# are safe to send again (see K8sClient.resend_safe).
RETRY_IF_SAFE = (500, 502, 504)
# The transport faults (labels of transport_fault) that request_timeout ends.
TIMEOUTS = ("connection timed out", "read timed out")


def auth_argument_spec():
    """The connection options of every Kubernetes module (doc fragment
    overcommit.control.k8s), with the K8S_AUTH_* variables kubernetes.core reads."""
    def env(*names):
        return (env_fallback, list(names))

    return dict(
        kubeconfig=dict(type="raw", fallback=env("K8S_AUTH_KUBECONFIG")),
        context=dict(type="str", fallback=env("K8S_AUTH_CONTEXT")),
        host=dict(type="str", fallback=env("K8S_AUTH_HOST")),
        api_key=dict(type="str", no_log=True, fallback=env("K8S_AUTH_API_KEY")),
        validate_certs=dict(type="bool", aliases=["verify_ssl"],
                            fallback=env("K8S_AUTH_VERIFY_SSL", "K8S_AUTH_VALIDATE_CERTS")),
        ca_cert=dict(type="path", aliases=["ssl_ca_cert"], fallback=env("K8S_AUTH_SSL_CA_CERT", "K8S_AUTH_CA_CERT")),
        client_cert=dict(type="path", aliases=["cert_file"], fallback=env("K8S_AUTH_CERT_FILE", "K8S_AUTH_CLIENT_CERT")),
        client_key=dict(type="path", aliases=["key_file"], no_log=False,
                        fallback=env("K8S_AUTH_KEY_FILE", "K8S_AUTH_CLIENT_KEY")),
        username=dict(type="str", fallback=env("K8S_AUTH_USERNAME")),
        password=dict(type="str", no_log=True, fallback=env("K8S_AUTH_PASSWORD")),
        proxy=dict(type="str", fallback=env("K8S_AUTH_PROXY")),
        no_proxy=dict(type="str", fallback=env("K8S_AUTH_NO_PROXY")),
        # apply_defaults: the K8S_AUTH_PROXY_HEADERS_* fallbacks apply when
        # the task gives no proxy_headers at all.
        proxy_headers=dict(type="dict", apply_defaults=True, options=dict(
            proxy_basic_auth=dict(type="str", no_log=True, fallback=env("K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH")),
            basic_auth=dict(type="str", no_log=True, fallback=env("K8S_AUTH_PROXY_HEADERS_BASIC_AUTH")),
            user_agent=dict(type="str", fallback=env("K8S_AUTH_PROXY_HEADERS_USER_AGENT")),
        )),
        impersonate_user=dict(type="str", fallback=env("K8S_AUTH_IMPERSONATE_USER")),
        impersonate_groups=dict(type="list", elements="str", fallback=env("K8S_AUTH_IMPERSONATE_GROUPS")),
        retry_seconds=dict(type="float", default=RETRY_SECONDS),
        request_timeout=dict(type="float", default=REQUEST_TIMEOUT),
    )


def _option_error(field, value, allowed, message=None):
    """The collection's field error; `message` replaces the usual
    "field=value is out of range" for a combination of options."""
    error = ValueRangeError(field, value, allowed)
    if message:
        error.args = ("%s: allowed %s" % (message, allowed),)
    return error


def _check_proxy_url(url):
    try:
        parts = urlsplit(url)
        # .port raises ValueError for a port that is not a number in range.
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:
        valid = False
    if not valid:
        raise ValueRangeError("proxy", url, "an http:// or https:// URL with a host, e.g. http://proxy.example:3128")


def check_connection_options(params):
    """Refuses connection options that cannot work, before any API call,
    naming the option (ValueRangeError)."""
    username, password = params.get("username"), params.get("password")
    if username is not None and not username.strip():
        raise _option_error("username", username, "a user name")
    if password is not None and username is None:
        raise _option_error("password", None, "only together with username (HTTP basic auth)",
                            "password is set without username")
    if username is not None and password is None:
        raise _option_error("username", username, "only together with password (HTTP basic auth)",
                            "username=%r is set without password" % username)
    if username and params.get("api_key"):
        raise _option_error("username", username, "either username with password or api_key, not both",
                            "username=%r and api_key are both set" % username)
    user, groups = params.get("impersonate_user"), params.get("impersonate_groups")
    if user is not None and not user.strip():
        raise _option_error("impersonate_user", user, "a user name")
    if groups and user is None:
        raise _option_error("impersonate_groups", groups,
                            "only together with impersonate_user (the groups of the user impersonated)",
                            "impersonate_groups=%r is set without impersonate_user" % (groups,))
    for group in groups or []:
        if not group.strip():
            raise _option_error("impersonate_groups", groups, "group names, none empty")
    if params.get("proxy") is not None:
        _check_proxy_url(params["proxy"])
    for header in ("proxy_basic_auth", "basic_auth"):
        value = (params.get("proxy_headers") or {}).get(header)
        if value is not None and ":" not in value:
            raise _option_error("proxy_headers.%s" % header, None, "USER:PASSWORD, colon-separated",
                                "proxy_headers.%s is not USER:PASSWORD" % header)
    timeout = params.get("request_timeout")
    if timeout is not None and not timeout > 0:
        raise _option_error("request_timeout", timeout, "more than 0 seconds")


# Keys of a kubeconfig's users[].user that hold credentials, and words that
# mark the credentials of its auth-provider's config.
KUBECONFIG_SECRET_KEYS = ("token", "password", "client-key-data")
AUTH_PROVIDER_SECRET_WORDS = ("token", "secret")


def connection_secrets(params):
    """The secret values among the connection options that no_log cannot
    hide by itself, for AnsibleModule.no_log_values: the credentials inside a
    kubeconfig given as a dict (kubeconfig is a path or a dict, so it cannot
    be no_log as a whole) and the password of a proxy URL."""
    found = []
    kubeconfig = params.get("kubeconfig")
    users = kubeconfig.get("users") if isinstance(kubeconfig, dict) else None
    for entry in users if isinstance(users, list) else []:
        user = entry.get("user") if isinstance(entry, dict) else None
        if not isinstance(user, dict):
            continue
        found.extend(user.get(key) for key in KUBECONFIG_SECRET_KEYS)
        provider = user.get("auth-provider")
        config = provider.get("config") if isinstance(provider, dict) else None
        if isinstance(config, dict):
            found.extend(value for key, value in config.items()
                         if any(word in str(key).lower() for word in AUTH_PROVIDER_SECRET_WORDS))
    proxy = params.get("proxy")
    if isinstance(proxy, str):
        try:
            found.append(urlsplit(proxy).password)
        except ValueError:  # refused by check_connection_options
            pass
    return set(value for value in found if isinstance(value, str) and value)


class RepeatedHeader(str):
    """A header name that is a dict key of its own for each value: the
    kubernetes client and urllib3 keep headers in a dict, and the API server
    takes one Impersonate-Group line per group (a comma-joined value would be
    one group whose name has commas)."""

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other


def impersonation_headers(params):
    """[(header, value)] that make the API server act as impersonate_user in
    impersonate_groups (the identity authenticated needs the impersonate verb)."""
    user = params.get("impersonate_user")
    if user is None:
        return []
    return [("Impersonate-User", user)] + [(RepeatedHeader("Impersonate-Group"), group)
                                           for group in params.get("impersonate_groups") or []]


class K8sClientError(ObjectRefusal):
    """An API call that failed: the server's own message and HTTP status."""

    def __init__(self, message, status=None, reason=None):
        super(K8sClientError, self).__init__(message)
        self.status = status
        self.reason = reason


class ConflictError(K8sClientError):
    """The object changed between our read and our write (HTTP 409)."""


class TransientError(K8sClientError):
    """A fault that may pass if the request is sent again: `transient` says
    which (a retry.Transient); `sent` whether the server may have acted on
    the request already."""

    def __init__(self, message, transient, sent, status=None):
        super(TransientError, self).__init__(message, status=status)
        self.transient = transient
        self.sent = sent


def _server_message(status, body):
    try:
        return json.loads(body).get("message") or body
    except (TypeError, ValueError, AttributeError):
        return body or "HTTP %s" % status


def _error(method, path, status, body):
    message = "%s %s: %s" % (method, path, _server_message(status, body))
    if status in RETRY_ALWAYS + RETRY_IF_SAFE:
        message = "%s %s: HTTP %d: %s" % (method, path, status, _server_message(status, body))
    if status == 403:
        message += (" (the identity lacks a permission: bind it to the overcommit-control ClusterRole "
                    "shipped in docs/rbac/)")
    error_class = ConflictError if status == 409 else K8sClientError
    return error_class(message, status=status)


def build_configuration(params):
    """A client configuration as kubernetes.core builds it: host + token (or
    client certificate) alone need no kubeconfig; otherwise the kubeconfig
    (or, without one, the in-cluster service account, then ~/.kube/config),
    with any option given overriding what it says."""
    configuration = k8s_client.Configuration()
    host, api_key = params.get("host"), params.get("api_key")
    username, password = params.get("username"), params.get("password")
    self_sufficient = host and (api_key or (username and password is not None)
                                or (params.get("client_cert") and params.get("client_key")))
    try:
        if not self_sufficient:
            kubeconfig, context = params.get("kubeconfig"), params.get("context")
            if isinstance(kubeconfig, dict):
                k8s_config.load_kube_config_from_dict(kubeconfig, context=context,
                                                      client_configuration=configuration)
            elif kubeconfig or context:
                k8s_config.load_kube_config(config_file=kubeconfig, context=context,
                                            client_configuration=configuration)
            else:
                try:
                    k8s_config.load_incluster_config(client_configuration=configuration)
                except k8s_config.ConfigException:
                    k8s_config.load_kube_config(client_configuration=configuration)
    except (k8s_config.ConfigException, IOError, OSError, ValueError) as exc:
        raise K8sClientError("cannot load the Kubernetes configuration (kubeconfig=%s, context=%s): %s"
                             % (params.get("kubeconfig") if not isinstance(params.get("kubeconfig"), dict)
                                else "(dict)", params.get("context"), exc))
    if host:
        configuration.host = host.rstrip("/")
    if api_key:
        configuration.api_key = {"authorization": "Bearer " + api_key}
    if username:
        # HTTP basic auth, as the kubernetes library sends a kubeconfig's
        # username and password; it replaces the kubeconfig's token.
        configuration.username, configuration.password = username, password
        configuration.api_key = {"authorization": configuration.get_basic_auth_token()}
        configuration.refresh_api_key_hook = None
    if params.get("proxy"):
        configuration.proxy = params["proxy"]
    if params.get("no_proxy"):
        configuration.no_proxy = params["no_proxy"]
    proxy_headers = dict((name, value) for name, value in (params.get("proxy_headers") or {}).items()
                         if value is not None)
    if proxy_headers:
        configuration.proxy_headers = make_headers(**proxy_headers)
    # One layer of retries, the client's own (with back-off, bounded in time
    # and reported), instead of urllib3's silent immediate ones.
    configuration.retries = False
    if params.get("validate_certs") is not None:
        configuration.verify_ssl = params["validate_certs"]
    for option, attribute in (("ca_cert", "ssl_ca_cert"), ("client_cert", "cert_file"), ("client_key", "key_file")):
        if params.get(option):
            setattr(configuration, attribute, params[option])
    return configuration


def _retry_after(response):
    """Seconds of a Retry-After header in seconds (the form the API server
    sends), or None."""
    try:
        value = response.getheader("Retry-After")
        return max(0.0, float(value)) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


def transport_fault(exc):
    """(label, sent) of a transport error worth retrying, or None: a dropped
    or reset connection, a refused connection or a timeout. `sent`: whether
    the request may have reached the server. Certificate errors, unknown
    host names and the like are not retried."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ssl.SSLCertVerificationError):
            return None
        if urllib3_errors is not None:
            if isinstance(exc, urllib3_errors.NameResolutionError):
                return None
            if isinstance(exc, urllib3_errors.NewConnectionError):
                return "connection refused", False
            if isinstance(exc, urllib3_errors.ConnectTimeoutError):
                return "connection timed out", False
            if isinstance(exc, urllib3_errors.ReadTimeoutError):
                return "read timed out", True
            if isinstance(exc, urllib3_errors.ProtocolError):
                return "connection dropped", True
            if isinstance(exc, urllib3_errors.MaxRetryError):
                exc = exc.reason
                continue
        if isinstance(exc, (ssl.SSLEOFError, ssl.SSLZeroReturnError)):
            return "connection dropped", True
        if isinstance(exc, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
            return "connection dropped", True
        if isinstance(exc, ConnectionRefusedError):
            return "connection refused", False
        # The kubernetes client turns urllib3's SSLError into an ApiException,
        # and urllib3 wraps the socket's errors: the cause is further down.
        reason = getattr(exc, "reason", None)
        exc = exc.__cause__ or exc.__context__ or (reason if isinstance(reason, BaseException) else None)
    return None


def _applied(obj, patch):
    """Whether a merge patch's values are all in obj already (nulls: absent)."""
    if not isinstance(obj, dict):
        return False
    for key, value in patch.items():
        if value is None:
            if obj.get(key) is not None:
                return False
        elif isinstance(value, dict):
            if not _applied(obj.get(key) or {}, value):
                return False
        elif obj.get(key) != value:
            return False
    return True


class K8sClient(object):
    """Plain-JSON access to any API path. With dry_run every write carries
    dryRun=All, so check mode is validated by the server (schema, admission,
    RBAC) and nothing is stored.

    Every request is sent again after a transient fault (HTTP 429 and 503
    always; 500, 502, 504 and dropped connections when resend_safe says so),
    with jittered back-off, for at most params["retry_seconds"] in all
    (429's Retry-After is honoured within that time). retry_log holds what
    was retried, for the module's result; a fault that outlasts the time
    fails with a message naming it and how long it was retried."""

    retry_log = None
    # Whether the last request met a fault after which it may have been
    # applied by the server, then was sent again.
    resent_after_unsure = False
    # Why requests are no longer sent: a connection fault outlasted the retries.
    lost = None

    def __init__(self, params, dry_run=False, sleep=time.sleep, clock=time.monotonic, rand=random.random):
        self.api = k8s_client.ApiClient(build_configuration(params))
        for header, value in impersonation_headers(params):
            self.api.set_default_header(header, value)
        self.dry_run = dry_run
        timeout = params.get("request_timeout")
        self.request_timeout = REQUEST_TIMEOUT if timeout is None else timeout
        self.retry_log = RetryLog()
        seconds = params.get("retry_seconds")
        seconds = RETRY_SECONDS if seconds is None else max(0.0, seconds)
        self._send = jittered_backoff(
            retries=RETRY_TRIES if seconds else 0, delay=RETRY_DELAY, max_delay=RETRY_MAX_DELAY,
            total_seconds=seconds, is_transient=self._transient, log=self.retry_log,
            sleep=sleep, clock=clock, random=rand)(self._send_once)

    def close(self):
        self.api.close()

    def _transient(self, exc):
        if isinstance(exc, TransientError):
            if exc.sent:
                self.resent_after_unsure = True
            return exc.transient
        return None

    def resend_safe(self, method, body):
        """Whether a request may be sent again when the server may already
        have acted on it (a 500, 502 or 504 answer, a dropped connection):
        - reads, and every write of check mode (a server-side dry run);
        - a PATCH carrying the resourceVersion it was planned from: a second
          copy of an applied one is refused as a conflict, never applied
          twice (read_modify_write then tells it from a real conflict);
        - a POST creating an object by name (the Events of node_admission and
          kubevirt_vm_cpu_limit): a second copy of a created one is refused
          as AlreadyExists, so there are never two (create() then reads it);
          a POST with generateName could make two, and is not sent again.
        Other writes are sent again only after faults that come before the
        server acts on a request: 429, 503 and connections never made."""
        if method in ("GET", "HEAD") or self.dry_run:
            return True
        metadata = body.get("metadata") if isinstance(body, dict) else None
        metadata = metadata if isinstance(metadata, dict) else {}
        if method in ("PATCH", "PUT"):
            return bool(metadata.get("resourceVersion"))
        if method == "POST":
            return bool(metadata.get("name"))
        return False

    def _send_once(self, method, path, serialized, resend_safe):
        try:
            response = self.api.call_api(*serialized, _request_timeout=self.request_timeout)
            response.read()
        except Exception as exc:  # urllib3 and ssl raise many unrelated types on transport errors
            fault = transport_fault(exc)
            message = "%s %s: cannot reach the API server at %s%s: %s%s" % (
                method, path, self.api.configuration.host, self._through_proxy(), exc,
                certificate_hint(exc, "ca_cert", "validate_certs"))
            if fault is not None and fault[0] in TIMEOUTS:
                message = "%s %s: the API server at %s%s did not answer within request_timeout=%g s (%s)" % (
                    method, path, self.api.configuration.host, self._through_proxy(), self.request_timeout, fault[0])
            if fault is None or (fault[1] and not resend_safe):
                raise K8sClientError(message)
            raise TransientError(message, Transient(fault[0]), sent=fault[1])
        if not 200 <= response.status <= 299:
            error = _error(method, path, response.status, response.data.decode("utf-8", "replace"))
            if response.status in RETRY_ALWAYS or (response.status in RETRY_IF_SAFE and resend_safe):
                retry_after = _retry_after(response) if response.status == 429 else None
                raise TransientError(str(error), Transient("HTTP %d" % response.status, retry_after),
                                     sent=response.status != 429 and response.status != 503,
                                     status=response.status)
            raise error
        return response

    def _through_proxy(self):
        """ " through the proxy SCHEME://HOST:PORT" (without its credentials)
        when requests go through one (not when no_proxy bypasses it)."""
        pool = getattr(getattr(self.api, "rest_client", None), "pool_manager", None)
        proxy = getattr(pool, "proxy", None)  # the URL of a urllib3 ProxyManager
        return " through the proxy %s://%s" % (proxy.scheme, proxy.netloc) if proxy is not None else ""

    def request(self, method, path, query=None, body=None, content_type=None, parse=True, accept="application/json"):
        headers = {"Accept": accept}
        if content_type:
            headers["Content-Type"] = content_type
        query = list((query or {}).items())
        if self.dry_run and method in ("POST", "PUT", "PATCH", "DELETE"):
            query.append(("dryRun", "All"))
        serialized = self.api.param_serialize(method, path, query_params=query or None, header_params=headers,
                                              body=body, auth_settings=["BearerToken"])
        self.resent_after_unsure = False
        if self.lost is not None:
            raise K8sClientError("%s %s: not sent: %s" % (method, path, self.lost))
        try:
            response = self._send(method, path, serialized, self.resend_safe(method, body))
        except TransientError as exc:
            # Out of tries or time: an error like any other, saying how long it was retried.
            message = str(exc) + retry_note(exc)
            if exc.status is None:
                # No connection for the whole retry time: the server is gone for this task; the
                # requests left fail at once instead of each retrying as long (N objects, N times).
                self.lost = "the API server was not reachable earlier in this task (%s)" % message
            raise K8sClientError(message, status=exc.status)
        return json.loads(response.data) if parse else None

    def get(self, path):
        return self.request("GET", path)

    def list(self, path, label_selector=None, metadata_only=False, field_selector=None):
        """Every item of a collection, page by page; with metadata_only just
        each item's metadata. field_selector filters on the server, e.g.
        spec.nodeName=worker-1."""
        items, query = [], {"limit": LIST_PAGE}
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        while True:
            page = self.request("GET", path, query, accept=METADATA_ONLY if metadata_only else "application/json")
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items
            query["continue"] = token

    def merge_patch(self, path, body):
        return self.request("PATCH", path, body=body, content_type=MERGE_PATCH)

    def create(self, path, body):
        """POST of a new object. Sent again after a dropped connection only
        when named (see resend_safe); AlreadyExists then means the lost try
        created it, and the body sent is returned (not read back: creating
        Events needs no permission to read them)."""
        try:
            return self.request("POST", path, body=body, content_type="application/json")
        except ConflictError:
            if not (self.resent_after_unsure and ((body or {}).get("metadata") or {}).get("name")):
                raise
            return body

    def read_modify_write(self, path, plan_patch, current=None, attempts=CONFLICT_ATTEMPTS, write_path=None,
                          content_type=MERGE_PATCH, written=False):
        """Optimistic concurrency as Kubernetes' PatchNodeTaints does it: the
        patch carries the resourceVersion it was computed from, so a write
        that raced another writer is refused (409); then read again, plan
        again, write again.

        plan_patch(object) -> merge patch body, or None when nothing is to change.
        current: the object as already read (e.g. from a list), to save a GET.
        write_path: a subresource to patch instead of `path` (e.g. pods/NAME/resize).
        Returns (object the patch was planned from, patch or None, conflicts met);
        with written=True the first is the object as the server returned it
        after the write, for a next write without another GET.
        """
        conflicts = 0
        while True:
            if current is None:
                current = self.get(path)
            patch = plan_patch(current)
            if patch is None:
                return current, None, conflicts
            patch.setdefault("metadata", {})["resourceVersion"] = current["metadata"]["resourceVersion"]
            try:
                after = self.request("PATCH", write_path or path, body=patch, content_type=content_type, parse=written)
                return after if written else current, patch, conflicts
            except ConflictError:
                fresh = None
                if self.resent_after_unsure:
                    # The connection dropped (or a 5xx came back) after the
                    # patch was sent, and the copy sent again was refused:
                    # the lost one may have been applied. If the object holds
                    # what the patch wrote, it was; else it is a conflict.
                    fresh = self.get(path)
                    unguarded = dict(patch, metadata=dict((k, v) for k, v in patch["metadata"].items()
                                                          if k != "resourceVersion"))
                    if content_type == MERGE_PATCH and _applied(fresh, unguarded):
                        return fresh if written else current, patch, conflicts
                conflicts += 1
                if conflicts >= attempts:
                    raise K8sClientError("PATCH %s: the object changed %d times while it was being written; "
                                         "giving up" % (write_path or path, conflicts), status=409)
                current = fresh
