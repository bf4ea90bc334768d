# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Event-Driven Ansible source: Alertmanager's webhook, one event per alert,
shaped for the rulebooks of the collection's closed loop."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
short_description: Receive Alertmanager webhooks and put one event per alert, firing or resolved
description:
  - An HTTP endpoint for Alertmanager's C(webhook_configs). Each POST of a notification (payload C(version)
    C("4")) puts one event per alert in it, firing and resolved alike, and is answered 202; a body that is
    not such a notification is answered 400 and puts nothing.
  - 'Each event is C({"overcommit_alert": {"name", "status", "host", "vm", "node", "severity", "labels",
    "annotations", "starts_at", "ends_at", "fingerprint", "receiver", "group_key"}}): C(name) is the
    alert''s C(alertname); C(host), C(vm) and C(node) come from the labels of the same names
    (C(host) falls back to C(instance) without its port), null when absent.'
  - Alerts are triggers, not truth; the cycle a rulebook runs measures again before it acts.
  - Listens on loopback by default; set O(host) to the address Alertmanager can reach. Off loopback, give it
    O(certfile) and O(keyfile) (HTTPS) and O(token) or O(basic_auth_username) and O(basic_auth_password), which
    Alertmanager's C(http_config) sends (C(authorization) or C(basic_auth), C(tls_config.ca_file)); O(cafile) also
    requires Alertmanager's client certificate (C(tls_config.cert_file), C(key_file)).
  - Off loopback without O(token) or basic auth the source does not start, unless O(allow_unauthenticated) says
    so; it then logs a warning each time it starts. Off loopback without HTTPS it logs a warning each start too
    (the credentials travel in clear).
  - A post without the credentials is answered 401, one larger than O(max_body_bytes) 413, one that is not a
    notification 400; none puts an event. A sender that does not send its request head, or its body, within
    O(read_timeout) seconds is answered 408 and disconnected; past O(max_connections) open connections a new one
    is answered 503 at once. Each refusal is logged as a warning with the count of refusals of its kind so far, so
    a misconfigured, stalled or forged sender shows in the rulebook's log.
options:
  host:
    description: Address to listen on.
    type: str
    default: 127.0.0.1
  port:
    description: TCP port to listen on.
    type: int
    default: 5000
  path:
    description: URL path Alertmanager posts to; other paths are answered 404.
    type: str
    default: /alerts
  max_body_bytes:
    description: Largest body accepted; a larger one is answered 413 and puts nothing.
    type: int
    default: 1048576
  token:
    description:
      - Bearer token every post must carry in its C(Authorization) header; Alertmanager sends it with
        C(http_config.authorization.credentials) (or C(credentials_file)).
    type: str
  basic_auth_username:
    description: User name every post must carry in HTTP basic auth (Alertmanager's C(http_config.basic_auth)).
    type: str
  basic_auth_password:
    description: Password of O(basic_auth_username); both or neither.
    type: str
  certfile:
    description: Certificate (PEM, with its chain) to serve HTTPS with; with O(keyfile).
    type: str
  keyfile:
    description: Private key (PEM) of O(certfile).
    type: str
  cafile:
    description: CA bundle that must have signed the client certificate of every sender (mutual TLS); needs
      O(certfile).
    type: str
  read_timeout:
    description: Seconds a sender has to send its request head, and again its body; a slower one is answered 408
      and disconnected.
    type: float
    default: 10
  max_connections:
    description: Connections open at once; a connection past them is answered 503 and closed at once.
    type: int
    default: 64
  allow_unauthenticated:
    description:
      - Listen off loopback without O(token) or basic auth, so that anyone who reaches the port can post alerts
        that start closed-loop cycles. Logged as a warning each time the source starts.
    type: bool
    default: false
"""

EXAMPLES = r"""
- overcommit.control.alertmanager:
    host: 0.0.0.0
    port: 5000

- overcommit.control.alertmanager:
    port: 9095
    path: /overcommit

- overcommit.control.alertmanager:
    host: 0.0.0.0
    port: 5000
    certfile: /etc/eda/tls/tls.crt
    keyfile: /etc/eda/tls/tls.key
    token: "{{ alertmanager_webhook_token }}"
"""

import asyncio
import base64
import hmac
import ipaddress
import json
import logging
import math
import ssl

MAX_HEADER_BYTES = 65536
STATUS_TEXT = {202: "Accepted", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
               405: "Method Not Allowed", 408: "Request Timeout", 413: "Payload Too Large",
               503: "Service Unavailable"}
REFUSALS = {400: "not an Alertmanager notification", 401: "without the credentials", 404: "to another path",
            405: "not a POST", 408: "not sent within read_timeout", 413: "larger than max_body_bytes",
            503: "past max_connections open connections"}
LOG = logging.getLogger(__name__)


class ReadTimeout(Exception):
    """A sender that did not send its head or its body within read_timeout."""


class BadNotification(ValueError):
    """A body that is not an Alertmanager notification of payload version 4."""


def _host(labels):
    if labels.get("host"):
        return labels["host"]
    instance = labels.get("instance")
    if not instance:
        return None
    # host:port, [v6]:port
    if instance.startswith("["):
        return instance[1:].split("]", 1)[0]
    return instance.rsplit(":", 1)[0] if instance.count(":") == 1 else instance


def events(body):
    """The events of one notification's body (bytes)."""
    try:
        notification = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadNotification("the body is not JSON: %s" % exc)
    if not isinstance(notification, dict) or str(notification.get("version")) != "4":
        raise BadNotification("not an Alertmanager notification of payload version 4")
    alerts = notification.get("alerts")
    if not isinstance(alerts, list):
        raise BadNotification("the notification has no list of alerts")
    out = []
    for alert in alerts:
        if not isinstance(alert, dict):
            raise BadNotification("an alert is not an object")
        labels = alert.get("labels") if isinstance(alert.get("labels"), dict) else {}
        out.append({"overcommit_alert": {
            "name": labels.get("alertname"), "status": alert.get("status") or notification.get("status"),
            "host": _host(labels), "vm": labels.get("vm"), "node": labels.get("node"),
            "severity": labels.get("severity"), "labels": labels,
            "annotations": alert.get("annotations") if isinstance(alert.get("annotations"), dict) else {},
            "starts_at": alert.get("startsAt"), "ends_at": alert.get("endsAt"),
            "fingerprint": alert.get("fingerprint"), "receiver": notification.get("receiver"),
            "group_key": notification.get("groupKey")}})
    return out


class Endpoint(object):
    """The source's arguments, checked before it listens, and what it
    refused so far (status -> count)."""

    def __init__(self, args):
        self.host = args.get("host", "127.0.0.1")
        self.port = int(args.get("port", 5000))
        self.path = args.get("path", "/alerts")
        self.max_body = int(args.get("max_body_bytes", 1048576))
        self.token = args.get("token")
        user, password = args.get("basic_auth_username"), args.get("basic_auth_password")
        certfile, keyfile, cafile = args.get("certfile"), args.get("keyfile"), args.get("cafile")
        if bool(user) != bool(password):
            raise ValueError("basic_auth_username and basic_auth_password go together: give both or neither")
        if bool(certfile) != bool(keyfile):
            raise ValueError("certfile and keyfile go together: give both or neither")
        if cafile and not certfile:
            raise ValueError("cafile (client certificates) needs certfile and keyfile (HTTPS)")
        if self.max_body < 1:
            raise ValueError("max_body_bytes=%s must be a number of bytes above 0" % self.max_body)
        self.read_timeout = float(args.get("read_timeout", 10))
        if self.read_timeout <= 0 or not math.isfinite(self.read_timeout):
            raise ValueError("read_timeout=%s must be a number of seconds above 0" % args.get("read_timeout"))
        self.max_connections = int(args.get("max_connections", 64))
        if self.max_connections < 1:
            raise ValueError("max_connections=%s must be at least 1" % self.max_connections)
        self.open_connections = 0
        self.credentials = []
        if self.token:
            self.credentials.append("Bearer " + self.token)
        if user:
            self.credentials.append("Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode())
        self.tls = None
        if certfile:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            try:
                self.tls.load_cert_chain(certfile, keyfile)
            except (OSError, ssl.SSLError) as exc:
                raise ValueError("certfile %s and keyfile %s cannot be loaded: %s" % (certfile, keyfile, exc))
            if cafile:
                try:
                    self.tls.load_verify_locations(cafile)
                except (OSError, ssl.SSLError) as exc:
                    raise ValueError("cafile %s cannot be loaded: %s" % (cafile, exc))
                self.tls.verify_mode = ssl.CERT_REQUIRED
        self.refused = {}
        self.check_exposure(_flag("allow_unauthenticated", args.get("allow_unauthenticated", False)))

    def check_exposure(self, allow_unauthenticated):
        """Refuses, or warns about, listening where others can post alerts."""
        if is_loopback(self.host):
            return
        if not self.credentials:
            if not allow_unauthenticated:
                raise ValueError("host=%s is off loopback and neither token nor basic_auth_username is given: anyone "
                                 "who reaches the port could start closed-loop cycles; give credentials, or set "
                                 "allow_unauthenticated: true to listen so anyway" % self.host)
            LOG.warning("listening on %s:%d off loopback without credentials (allow_unauthenticated): anyone who "
                        "reaches the port can post alerts", self.host, self.port)
        if self.tls is None:
            LOG.warning("listening on %s:%d off loopback without HTTPS (certfile, keyfile): alerts%s travel in clear",
                        self.host, self.port, " and credentials" if self.credentials else "")

    def authorized(self, headers):
        given = headers.get("authorization", "")
        # Compared in constant time, so the answer's timing says nothing of the secret.
        return not self.credentials or any(hmac.compare_digest(given.encode(), c.encode()) for c in self.credentials)

    def refuse(self, status, peer):
        self.refused[status] = self.refused.get(status, 0) + 1
        LOG.warning("refused a post from %s %s (HTTP %d): %d refused so far for that reason", peer,
                    REFUSALS[status], status, self.refused[status])


def _flag(name, value):
    """A boolean argument; a rulebook's template may hand it on as text."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0", ""):
        return False
    raise ValueError("%s=%r must be true or false" % (name, value))


def is_loopback(host):
    """Whether `host` (an address or a name) is this machine's loopback."""
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _within(seconds, awaitable):
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except asyncio.TimeoutError:
        raise ReadTimeout()


async def _respond(writer, status):
    text = STATUS_TEXT[status]
    extra = "WWW-Authenticate: Bearer, Basic\r\n" if status == 401 else ""
    writer.write(("HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n%sConnection: close\r\n\r\n%s"
                  % (status, text, len(text), extra, text)).encode("ascii"))
    await writer.drain()
    writer.close()


async def _status(reader, headers, parts, endpoint, queue):
    """The answer to one request, after putting its events."""
    if len(parts) < 2 or parts[1].split("?", 1)[0] != endpoint.path:
        return 404
    if parts[0] != "POST":
        return 405
    # Credentials first: an unauthenticated sender learns nothing else.
    if not endpoint.authorized(headers):
        return 401
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        return 400
    if length < 0:
        return 400
    if length > endpoint.max_body:
        return 413
    try:
        found = events(await _within(endpoint.read_timeout, reader.readexactly(length)))
    except (asyncio.IncompleteReadError, BadNotification):
        return 400
    for event in found:
        await queue.put(event)
    return 202


async def _handle(reader, writer, queue, endpoint):
    peer = (writer.get_extra_info("peername") or ("?",))[0]
    if endpoint.open_connections >= endpoint.max_connections:
        endpoint.refuse(503, peer)
        await _respond(writer, 503)
        return
    endpoint.open_connections += 1
    try:
        await _serve(reader, writer, queue, endpoint, peer)
    except ConnectionError:
        writer.close()
    finally:
        endpoint.open_connections -= 1


async def _serve(reader, writer, queue, endpoint, peer):
    try:
        head = await _within(endpoint.read_timeout, reader.readuntil(b"\r\n\r\n"))
    except ReadTimeout:
        endpoint.refuse(408, peer)
        await _respond(writer, 408)
        return
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        writer.close()
        return
    lines = head.decode("latin-1").split("\r\n")
    headers = dict((name.strip().lower(), value.strip()) for name, _sep, value in
                   (line.partition(":") for line in lines[1:] if ":" in line))
    try:
        status = await _status(reader, headers, lines[0].split(), endpoint, queue)
    except ReadTimeout:
        status = 408
    if status != 202:
        endpoint.refuse(status, peer)
    await _respond(writer, status)


async def main(queue, args):
    endpoint = Endpoint(args)
    server = await asyncio.start_server(lambda reader, writer: _handle(reader, writer, queue, endpoint),
                                        endpoint.host, endpoint.port, limit=MAX_HEADER_BYTES, ssl=endpoint.tls)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    # From a shell: print the events of what is posted to 127.0.0.1:5000/alerts.
    class PrintQueue:
        async def put(self, event):
            print(event)

    asyncio.run(main(PrintQueue(), {}))
