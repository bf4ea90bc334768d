# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes Events (events.k8s.io/v1) that say what the collection did to
an object, where `kubectl describe` and `kubectl events` show them. The body
is pure; `emit` creates it and never raises: an Event that cannot be created
is reported in the result, it never fails the change it tells of."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import K8sClientError

# The API's limits on note and reportingInstance.
NOTE_LIMIT = 1024
INSTANCE_LIMIT = 128
# Events about cluster-scoped objects (Nodes) live in this namespace, as the
# kubelet's do.
CLUSTER_SCOPED_NAMESPACE = "default"


def events_path(namespace):
    return "/apis/events.k8s.io/v1/namespaces/%s/events" % namespace


def unique_suffix():
    """The unique part of an Event's name, as client-go makes it."""
    return "%x" % time.time_ns()


def event(regarding, event_type, reason, action, note, time, controller, instance, suffix, related=None):
    """An Event about `regarding` (apiVersion, kind, name, uid and, for a
    namespaced object, namespace), named as client-go's recorder names them
    (<object>.<unique hex suffix>). time: RFC 3339 with microseconds."""
    namespace = regarding.get("namespace") or CLUSTER_SCOPED_NAMESPACE
    body = {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "%s.%s" % (regarding["name"], suffix), "namespace": namespace},
        "eventTime": time, "reportingController": controller, "reportingInstance": instance[:INSTANCE_LIMIT],
        "action": action, "reason": reason, "type": event_type, "note": note[:NOTE_LIMIT],
        "regarding": regarding,
    }
    if related is not None:
        body["related"] = related
    return body


def emit(client, body):
    """Creates the Event (a server-side dry run in check mode); returns its
    type, reason and note, with `error` saying what kept it from being
    created (the task's result then says so rather than staying silent)."""
    summary = {"type": body["type"], "reason": body["reason"], "note": body["note"]}
    try:
        client.create(events_path(body["metadata"]["namespace"]), body)
    except K8sClientError as exc:
        summary["error"] = str(exc)
    return summary
