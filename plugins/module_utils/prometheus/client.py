# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The only code that talks to Prometheus: instant queries of its HTTP API
(/api/v1/query), with TLS verified unless told otherwise, a bearer token
when one is given, a bounded time per request, and jittered retries of the
faults that pass (connection errors, 429, 5xx)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.six.moves.urllib.parse import urlencode, urlparse
from ansible.module_utils.urls import open_url
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal, ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.common.retry import RetryLog, jittered_backoff
from ansible_collections.overcommit.control.plugins.module_utils.common.tls import certificate_hint

TRANSIENT_STATUSES = (429, 500, 502, 503, 504)


def connection_argument_spec():
    """The Prometheus connection options of a module (documented with each)."""
    return dict(
        prometheus_url=dict(type="str"),
        prometheus_token=dict(type="str", no_log=True),
        prometheus_validate_certs=dict(type="bool", default=True),
        prometheus_ca_cert=dict(type="path"),
        prometheus_timeout=dict(type="float", default=10.0),
    )


def check_url(field, url):
    """An http(s) URL of a Prometheus server, without a trailing slash."""
    parsed = urlparse(url or "")
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueRangeError(field, url, "an http:// or https:// URL of the Prometheus server, such as "
                                          "http://prometheus.monitoring:9090")
    return url.rstrip("/")


class PrometheusError(ObjectRefusal):
    """A query Prometheus did not answer, or answered with an error."""

    def __init__(self, message, status=None, permanent=False):
        super(PrometheusError, self).__init__(message)
        self.status = status
        self.permanent = permanent


def _transient(exc):
    if not isinstance(exc, PrometheusError) or exc.permanent:
        return None
    if exc.status is None:
        return "connection"
    return "HTTP %d" % exc.status if exc.status in TRANSIENT_STATUSES else None


class PrometheusClient(object):
    def __init__(self, url, token=None, validate_certs=True, ca_cert=None, timeout=10.0, retry_seconds=10.0):
        self.url = check_url("prometheus_url", url)
        if timeout is None or timeout <= 0:
            raise ValueRangeError("prometheus_timeout", timeout, "a number of seconds above 0")
        self.headers = {"Accept": "application/json"}
        if token:
            self.headers["Authorization"] = "Bearer %s" % token
        self.validate_certs = validate_certs
        self.ca_cert = ca_cert
        self.timeout = timeout
        self.retry_log = RetryLog()
        self._get = jittered_backoff(total_seconds=retry_seconds, is_transient=_transient,
                                     log=self.retry_log)(self._get_once)

    def _get_once(self, path, params):
        url = "%s%s?%s" % (self.url, path, urlencode(params))
        try:
            response = open_url(url, headers=self.headers, validate_certs=self.validate_certs,
                                ca_path=self.ca_cert, timeout=self.timeout)
            body = response.read()
        except HTTPError as exc:
            detail = exc.read() if hasattr(exc, "read") else b""
            raise PrometheusError("Prometheus at %s answered HTTP %d: %s" % (self.url, exc.code, _error_text(detail)),
                                  status=exc.code)
        except (URLError, OSError, ValueError) as exc:
            hint = certificate_hint(exc, "prometheus_ca_cert", "prometheus_validate_certs")
            raise PrometheusError("cannot reach Prometheus at %s: %s%s" % (self.url, getattr(exc, "reason", exc), hint),
                                  permanent=bool(hint))
        try:
            answer = json.loads(body)
        except ValueError:
            raise PrometheusError("Prometheus at %s answered something that is not JSON" % self.url)
        if not isinstance(answer, dict) or answer.get("status") != "success":
            raise PrometheusError("Prometheus at %s refused the query: %s" % (self.url, _error_text(body)))
        return answer.get("data") or {}

    def query(self, expr, at=None):
        """[(labels, value)] of an instant vector query evaluated at unix
        time `at` (now when None); samples that are not numbers are left out."""
        params = {"query": expr}
        if at is not None:
            params["time"] = "%.3f" % at
        data = self._get("/api/v1/query", params)
        if data.get("resultType") != "vector":
            raise PrometheusError("Prometheus answered %r to %s, not an instant vector"
                                  % (data.get("resultType"), expr))
        out = []
        for series in data.get("result") or []:
            try:
                value = float((series.get("value") or [None, None])[1])
            except (TypeError, ValueError):
                continue
            if not math.isnan(value) and not math.isinf(value):
                out.append((series.get("metric") or {}, value))
        return out


def _error_text(body):
    try:
        answer = json.loads(body)
        return "%s: %s" % (answer.get("errorType"), answer.get("error"))
    except (ValueError, AttributeError, TypeError):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
        return text.strip()[:200] or "no detail"
