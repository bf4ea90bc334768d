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
  - Listens on loopback by default; set O(host) to the address Alertmanager can reach.
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
"""

EXAMPLES = r"""
- overcommit.control.alertmanager:
    host: 0.0.0.0
    port: 5000

- overcommit.control.alertmanager:
    port: 9095
    path: /overcommit
"""

import asyncio
import json

MAX_HEADER_BYTES = 65536
STATUS_TEXT = {202: "Accepted", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
               413: "Payload Too Large"}


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


async def _respond(writer, status):
    text = STATUS_TEXT[status]
    writer.write(("HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                  % (status, text, len(text), text)).encode("ascii"))
    await writer.drain()
    writer.close()


async def _handle(reader, writer, queue, path, max_body):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        writer.close()
        return
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split()
    headers = dict((name.strip().lower(), value.strip()) for name, _sep, value in
                   (line.partition(":") for line in lines[1:] if ":" in line))
    if len(parts) < 2 or parts[1].split("?", 1)[0] != path:
        await _respond(writer, 404)
        return
    if parts[0] != "POST":
        await _respond(writer, 405)
        return
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        length = -1
    if length < 0:
        await _respond(writer, 400)
        return
    if length > max_body:
        await _respond(writer, 413)
        return
    try:
        body = await reader.readexactly(length)
        found = events(body)
    except (asyncio.IncompleteReadError, BadNotification):
        await _respond(writer, 400)
        return
    for event in found:
        await queue.put(event)
    await _respond(writer, 202)


async def main(queue, args):
    path = args.get("path", "/alerts")
    max_body = int(args.get("max_body_bytes", 1048576))
    server = await asyncio.start_server(
        lambda reader, writer: _handle(reader, writer, queue, path, max_body),
        args.get("host", "127.0.0.1"), int(args.get("port", 5000)), limit=MAX_HEADER_BYTES)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    # From a shell: print the events of what is posted to 127.0.0.1:5000/alerts.
    class PrintQueue:
        async def put(self, event):
            print(event)

    asyncio.run(main(PrintQueue(), {}))
