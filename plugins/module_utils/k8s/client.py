# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The only code that talks to the Kubernetes API: one connection built from
the kubernetes.core-style options, plain JSON in and out, check mode as a
server-side dry run, and the read-modify-write loop that retries on 409."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.module_utils.basic import env_fallback

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
except ImportError:  # reported by the module through HAS_KUBERNETES
    k8s_client = None

HAS_KUBERNETES = k8s_client is not None

MERGE_PATCH = "application/merge-patch+json"
# Merges lists of containers by name (pods/resize takes it).
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
# Names and labels only: a fraction of the bytes of whole objects.
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
# As Kubernetes' own PatchNodeTaints (retry.DefaultBackoff: 4 steps), plus one.
CONFLICT_ATTEMPTS = 5
LIST_PAGE = 500


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
    )


class K8sClientError(Exception):
    """An API call that failed: the server's own message and HTTP status."""

    def __init__(self, message, status=None, reason=None):
        super(K8sClientError, self).__init__(message)
        self.status = status
        self.reason = reason


class ConflictError(K8sClientError):
    """The object changed between our read and our write (HTTP 409)."""


def _server_message(status, body):
    try:
        return json.loads(body).get("message") or body
    except (TypeError, ValueError, AttributeError):
        return body or "HTTP %s" % status


def _error(method, path, status, body):
    message = "%s %s: %s" % (method, path, _server_message(status, body))
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
    self_sufficient = host and (api_key or (params.get("client_cert") and params.get("client_key")))
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
    if params.get("validate_certs") is not None:
        configuration.verify_ssl = params["validate_certs"]
    for option, attribute in (("ca_cert", "ssl_ca_cert"), ("client_cert", "cert_file"), ("client_key", "key_file")):
        if params.get(option):
            setattr(configuration, attribute, params[option])
    return configuration


class K8sClient(object):
    """Plain-JSON access to any API path. With dry_run every write carries
    dryRun=All, so check mode is validated by the server (schema, admission,
    RBAC) and nothing is stored."""

    def __init__(self, params, dry_run=False):
        self.api = k8s_client.ApiClient(build_configuration(params))
        self.dry_run = dry_run

    def close(self):
        self.api.close()

    def request(self, method, path, query=None, body=None, content_type=None, parse=True, accept="application/json"):
        headers = {"Accept": accept}
        if content_type:
            headers["Content-Type"] = content_type
        query = list((query or {}).items())
        if self.dry_run and method in ("POST", "PUT", "PATCH", "DELETE"):
            query.append(("dryRun", "All"))
        serialized = self.api.param_serialize(method, path, query_params=query or None, header_params=headers,
                                              body=body, auth_settings=["BearerToken"])
        try:
            response = self.api.call_api(*serialized)
            response.read()
        except Exception as exc:  # urllib3 and ssl raise many unrelated types on transport errors
            raise K8sClientError("%s %s: cannot reach the API server at %s: %s"
                                 % (method, path, self.api.configuration.host, exc))
        if not 200 <= response.status <= 299:
            raise _error(method, path, response.status, response.data.decode("utf-8", "replace"))
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
        return self.request("POST", path, body=body, content_type="application/json")

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
                conflicts += 1
                if conflicts >= attempts:
                    raise K8sClientError("PATCH %s: the object changed %d times while it was being written; "
                                         "giving up" % (write_path or path, conflicts), status=409)
                current = None
