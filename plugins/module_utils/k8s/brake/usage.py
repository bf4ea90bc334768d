# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the control policy needs of running KubeVirt VMs, read the way
libvirt_cputune_info reads libvirt domains: the cap in force (the desired cap
of the CPU brake, kubevirt_vm_cpu_limit), its throttle record, the class, the
vCPUs, the node, the policy's state and the kill switch kept on the VMI, and
the CPU each VM used and waited for.

Usage comes from KubeVirt's own metrics as Prometheus holds them
(virt-handler exports them from each domain's libvirt stats):
kubevirt_vmi_cpu_usage_seconds_total (all CPU the VM burnt) and
kubevirt_vmi_vcpu_delay_seconds_total (time its vCPUs were runnable but
waited for a host CPU: the guest's steal), both counters labelled with the
VMI's namespace and name, taken as rates over a window ending at each time
asked for.

Pure: the request, the queries and each VM's entry; usage_reader.py reads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import time

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import CLASSES
from ansible_collections.overcommit.control.plugins.module_utils.k8s import metadata, quantity
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import request as brake
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import state as limit_state
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.records import shown

USAGE_METRIC = "kubevirt_vmi_cpu_usage_seconds_total"
DELAY_METRIC = "kubevirt_vmi_vcpu_delay_seconds_total"
# Prometheus needs two samples of a counter inside a rate's window.
LEAST_WINDOW_SECONDS = 1
MAX_TIMES = 100


def check_request(params):
    """The read's options, checked before any API call."""
    window = params.get("usage_window")
    if window is None or window < LEAST_WINDOW_SECONDS:
        raise ValueRangeError("usage_window", window, "a number of seconds, at least %d (and at least twice "
                                                      "Prometheus' scrape interval)" % LEAST_WINDOW_SECONDS)
    times = params.get("usage_times") or []
    if len(times) > MAX_TIMES:
        raise ValueRangeError("usage_times", len(times), "at most %d times" % MAX_TIMES)
    for index, at in enumerate(times):
        if isinstance(at, bool) or not isinstance(at, (int, float)) or at <= 0:
            raise ValueRangeError("usage_times[%d]" % index, at, "a unix time in seconds")
    if times and not params.get("prometheus_url"):
        raise ValueRangeError("prometheus_url", None, "the Prometheus that holds KubeVirt's VMI metrics, "
                                                      "needed with usage_times")
    if params.get("names") and not params.get("namespace"):
        raise ValueRangeError("namespace", None, "the namespace of the VMIs named in names")
    request = brake.check_request(dict(params, state=brake.RECONCILED, cpus=None, headroom=0.0, floor=0.0))
    return {"keys": dict(request["keys"], policy=metadata.policy_key(request["prefix"]),
                         paused=metadata.paused_key(request["prefix"])),
            "window": int(round(window)), "times": [float(t) for t in times]}


def _selector(namespace):
    return '{namespace="%s"}' % namespace.replace("\\", "\\\\").replace('"', '\\"') if namespace else ""


def usage_queries(namespace, window):
    """The PromQL of the CPUs used and the CPUs of steal per VMI."""
    return dict((key, "sum by (namespace, name) (rate(%s%s[%ds]))" % (metric, _selector(namespace), window))
                for key, metric in (("cpus_used", USAGE_METRIC), ("steal_cpus", DELAY_METRIC)))


def usage_by_vmi(answers):
    """{namespace/name: {cpus_used, steal_cpus}} of the queries' answers
    ({key: [(labels, value)]}); a VMI a query has no series for has None."""
    out = {}
    for key, rows in answers.items():
        for labels, value in rows:
            if labels.get("namespace") and labels.get("name"):
                entry = out.setdefault("%s/%s" % (labels["namespace"], labels["name"]),
                                       {"cpus_used": None, "steal_cpus": None})
                entry[key] = round(max(value, 0.0), 3)
    return out


def running_since(vmi):
    """When a VMI last entered the Running phase (epoch seconds), from its
    status.phaseTransitionTimestamps (RFC 3339, UTC); None when not said."""
    for transition in reversed(((vmi.get("status") or {}).get("phaseTransitionTimestamps")) or []):
        if isinstance(transition, dict) and transition.get("phase") == "Running":
            text = str(transition.get("phaseTransitionTimestamp") or "")
            try:
                # Whole seconds: Kubernetes writes e.g. 2026-12-06T10:50:00Z.
                return float(calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")))
            except ValueError:
                return None
    return None


def vm_entry(view, vmi, pod, keys, usage_rounds, window):
    """One VM as the policy reads it (the shape of libvirt_cputune_info's
    domains, named namespace/name)."""
    labels = ((vmi.get("metadata") or {}).get("labels")) or {}
    owner_labels = (view["vm"] or {}).get("labels") or {}
    annotations = ((vmi.get("metadata") or {}).get("annotations")) or {}
    policy, policy_error = metadata.parse_policy(annotations.get(keys["policy"]))
    declared = view["declared_class"]
    entry = {
        "name": view["name"], "namespace": view["namespace"], "vmi": view["vmi"], "node": view["node"],
        "platform": "kubevirt", "active": view["phase"] == "Running", "vcpus": view["vcpus"],
        "class": declared if declared in CLASSES else None,
        "cap_cpus": limit_state.cap_cpus(view), "desired": view["desired"], "desired_request": view["desired_request"],
        "throttle": shown(view["record"]),
        "applied": shown(view["applied"]), "pod": None, "compute_cpu_limit": None, "cpu_request": None,
        "policy": policy or {},
        # The kill switch: the label on the VMI or on its VirtualMachine.
        "paused": "true" in (labels.get(keys["paused"]), owner_labels.get(keys["paused"])),
        "started_at": running_since(vmi),
    }
    previous_request = view["record"].previous_request if view["record"] else None
    for field, text in (("previous_cpu_request", previous_request), ("desired_cpu_request", view["desired_request"])):
        try:
            entry[field] = quantity.cpu(field, text) if text is not None else None
        except ValueRangeError:
            # Hand-edited: no weight is known from it.
            entry[field] = None
    if declared and entry["class"] is None:
        entry["class_error"] = "class label %r is none of %s" % (declared, ", ".join(CLASSES))
    if policy_error:
        entry["policy_error"] = policy_error
    if pod is not None:
        current = limit_state.pod_view(pod)
        entry.update(pod=current["name"], compute_cpu_limit=current["limit_text"], cpu_request=current["cpu_request"])
    if usage_rounds is not None:
        entry["usage_rounds"] = usage_rounds
        entry["usage"] = dict(usage_rounds[-1], window_seconds=window) if usage_rounds else {}
    return entry
