# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's own metrics in Prometheus' text exposition format, for
node_exporter's textfile collector. Pure: the info modules' results in, the
file's text out.

Named by Prometheus' conventions: one prefix (overcommit_), base units
(CPUs, seconds, unix time), 0/1 gauges for states. What node_exporter
already exports (the host's PSI totals as node_pressure_*) is not repeated."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.common.record import unix_time

# name: (type, help)
METRICS = {
    "overcommit_vm_cpus_used": ("gauge", "CPUs the VM used over the last sample (cpu.time rate)."),
    "overcommit_vm_steal_cpus": ("gauge", "CPUs' worth of time the VM's vCPUs waited for a host CPU (vcpu delay rate)."),
    "overcommit_vm_cap_cpus": ("gauge", "CPU cap in force for the whole VM, in CPUs; absent when there is none."),
    "overcommit_vm_class_info": ("gauge", "The VM's class (dedicated, shared, burstable) as a label; always 1."),
    "overcommit_vm_throttled": ("gauge", "1 when the VM carries a throttle of the collection, with its reason."),
    "overcommit_vm_throttle_start_time_seconds": ("gauge", "Unix time the throttle in force began."),
    "overcommit_node_gated": ("gauge", "1 when the node carries the collection's admission gate."),
}
# A reason is free text a person typed: keep the label short.
REASON_LENGTH = 120


def escape(value):
    """A label value as the exposition format wants it."""
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels):
    return "{%s}" % ",".join('%s="%s"' % (key, escape(value)) for key, value in labels)


def _sample_value(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


def samples(domains, host, nodes=None):
    """[(metric, labels, value)] for libvirt_cputune_info's domains of
    `host` and node_overcommit_info's nodes."""
    if not host:
        raise ValueRangeError("host", host, "the name of the host the domains run on")
    out = []
    for index, domain in enumerate(domains or []):
        if not isinstance(domain, dict) or not domain.get("name"):
            raise ValueRangeError("domains[%d]" % index, domain, "a domain as libvirt_cputune_info returns it")
        if domain.get("failed"):
            continue
        base = (("host", host), ("vm", domain["name"]), ("class", domain.get("class") or "shared"))
        out.append(("overcommit_vm_class_info", base, 1))
        usage = domain.get("usage") or {}
        for metric, key in (("overcommit_vm_cpus_used", "cpus_used"), ("overcommit_vm_steal_cpus", "steal_cpus")):
            if usage.get(key) is not None:
                out.append((metric, base, usage[key]))
        if domain.get("cap_cpus") is not None:
            out.append(("overcommit_vm_cap_cpus", base, domain["cap_cpus"]))
        record = domain.get("throttle")
        reason = ((record or {}).get("reason") or "")[:REASON_LENGTH]
        out.append(("overcommit_vm_throttled", base + (("reason", reason),), 1 if record else 0))
        started = unix_time((record or {}).get("time"))
        if started is not None:
            out.append(("overcommit_vm_throttle_start_time_seconds", base, started))
    for index, node in enumerate(nodes or []):
        if not isinstance(node, dict) or not node.get("name"):
            raise ValueRangeError("nodes[%d]" % index, node, "a node as node_overcommit_info returns it")
        out.append(("overcommit_node_gated", (("node", node["name"]),), 1 if node.get("gate") else 0))
    return out


def render(domains, host, nodes=None):
    """The textfile: each metric's HELP and TYPE once, then its samples."""
    by_metric = {}
    for metric, labels, value in samples(domains, host, nodes):
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            continue
        by_metric.setdefault(metric, []).append("%s%s %s" % (metric, _labels(labels), _sample_value(value)))
    lines = []
    for metric in METRICS:
        if metric in by_metric:
            kind, text = METRICS[metric]
            lines += ["# HELP %s %s" % (metric, text), "# TYPE %s %s" % (metric, kind)] + by_metric[metric]
    return "\n".join(lines) + "\n" if lines else ""
