# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the operator's report page shows, decided in Python so the page's
template only lays it out. Pure: the info modules' results in, rows of text
and chart series out.

Per hypervisor host: the rounds of libvirt_cputune_info and of
host_pressure_info playbooks/report.yml took, turned into the series of the
host's CPU pressure, each VM's CPUs used with its cap and its steal, and one
row per VM (class, vCPUs, use, steal, cap, and the throttle in force: why, by
whom, since when and what it replaced). Also the gated Kubernetes nodes and
the two-layer (Kubernetes on ESXi) rows. Every value the page prints is text
here; the template escapes it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.overcommit.control.plugins.module_utils.common import svg
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.common.record import unix_time
from ansible_collections.overcommit.control.plugins.module_utils.domain import cpu
from ansible_collections.overcommit.control.plugins.module_utils.domain import credits as credit_rules
from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans
from ansible_collections.overcommit.control.plugins.module_utils.domain.observed import observed_vm
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy import KUBEVIRT, LIBVIRT, PARAMETERS, vm_key
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import BURSTABLE as BURSTABLE_CLASS
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import DEFAULT_FLOOR_FRACTION

NONE = "n/a"
# The policy gates a host's node at this PSI cpu some (avg60 and avg10, %).
GATE_PRESSURE = PARAMETERS["gate_pressure"][0]
THRESHOLD_COLOUR = "#7f7f7f"


def utc_text(seconds):
    """A unix time as people read it: "2026-01-05 10:00:00 UTC"."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def clock_text(seconds):
    return time.strftime("%H:%M:%S", time.gmtime(seconds))


def duration_text(seconds):
    """How long, coarsely: "under a minute", "5 min", "2 h 5 min", "3 d 4 h"."""
    if seconds is None:
        return NONE
    minutes = int(max(seconds, 0) // 60)
    if minutes < 1:
        return "under a minute"
    if minutes < 60:
        return "%d min" % minutes
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return "%d h %d min" % (hours, minutes) if minutes else "%d h" % hours
    days, hours = divmod(hours, 24)
    return "%d d %d h" % (days, hours) if hours else "%d d" % days


def usage_text(value):
    """CPUs used (or stolen) to three decimals (an idle VM uses a few
    thousandths), or n/a."""
    return NONE if value is None else "%.3f" % value


def percent_text(value):
    return NONE if value is None else "%.1f %%" % value


def ratio_text(value, unit=""):
    return NONE if value is None else "%g%s" % (value, unit)


def spread(window, count, at_end):
    """`count` times spread evenly over window [start, end]: the ends of
    `count` back-to-back rounds (at_end), or `count` samples taken at the
    start, the end and evenly between."""
    if count <= 0:
        return []
    start, end = float(window[0]), float(window[1])
    if end < start:
        raise ValueRangeError("window", list(window), "[start, end] with end not before start")
    if at_end:
        return [start + (i + 1) * (end - start) / count for i in range(count)]
    if count == 1:
        return [start]
    return [start + i * (end - start) / (count - 1) for i in range(count)]


def _figure(value):
    """A number as it is, or None for anything else (a gap in a chart)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def replaced_text(record, vcpus):
    """What a throttle record says the cap replaced, as people read it
    ("unlimited", "2 CPU, shares 1024"); per target when live and the
    persistent config differed."""
    previous = (record or {}).get("previous") or {}
    texts = []
    for target in ("live", "config"):
        values = previous.get(target)
        if values is None:
            continue
        text = cpu.cap_text(values, vcpus or 1)
        if values.get("cpu_shares"):
            text += ", shares %s" % values["cpu_shares"]
        texts.append((target, text))
    if not texts:
        return NONE
    if len(set(text for _target, text in texts)) == 1:
        return texts[0][1]
    return "; ".join("%s: %s" % pair for pair in texts)


def credits_text(domain):
    """A burstable VM's credit balance as the closed loop keeps it in the
    policy's state on the VM, against its bank; n/a for other classes."""
    if domain.get("class") != BURSTABLE_CLASS:
        return NONE
    balance = _figure((domain.get("policy") or {}).get("credits"))
    if balance is None:
        return "none kept yet"
    baseline = _figure(domain.get("baseline_cpus")) or (_figure(domain.get("vcpus")) or 0) * DEFAULT_FLOOR_FRACTION
    return "%.1f of %.0f vCPU-min" % (balance, credit_rules.bank_cap(baseline))


def throttle_state(domain, now):
    """Whether the collection's throttle is in force on the domain, and its
    why, who, since when and what it replaced, as text. A cap without the
    collection's record was set by someone else: reported, not as ours."""
    record = domain.get("throttle")
    if record:
        started = unix_time(record.get("time"))
        cap = record.get("cpus")
        if cap is not None and record.get("scope") == "vcpu":
            cap_text = "%g CPU per vCPU" % cap
        else:
            cap_text = NONE if cap is None else "%g CPU" % cap
        return {"throttled": True, "kind": "throttled", "state": "throttled",
                "reason": str(record.get("reason") or NONE), "by": str(record.get("by") or NONE), "since": str(record.get("time") or NONE),
                "for": duration_text(now - started) if started is not None else NONE,
                "cap_asked": cap_text, "replaced": replaced_text(record, domain.get("vcpus"))}
    capped = domain.get("cap_cpus") is not None
    return {"throttled": False, "kind": "capped" if capped else "open",
            "state": "capped without a record of this collection" if capped else "not throttled",
            "reason": "", "by": "", "since": "", "for": "", "cap_asked": "", "replaced": ""}


def _chart(title, times, lines, y_label, y_max=None):
    return {"title": title, "times": times, "lines": lines, "y_label": y_label, "y_max": y_max}


def _window_text(times):
    if not times:
        return ""
    if len(times) == 1:
        return ", %s UTC" % clock_text(times[0])
    return ", %s to %s UTC" % (clock_text(times[0]), clock_text(times[-1]))


def _round_domains(round_result, index):
    if not isinstance(round_result, dict):
        raise ValueRangeError("vm_rounds[%d]" % index, round_result, "a libvirt_cputune_info result")
    domains = round_result.get("domains")
    if domains is None:
        return None
    if not isinstance(domains, list):
        raise ValueRangeError("vm_rounds[%d].domains" % index, domains, "a list of domains")
    out = {}
    for position, domain in enumerate(domains):
        if not isinstance(domain, dict) or not domain.get("name"):
            raise ValueRangeError("vm_rounds[%d].domains[%d]" % (index, position), domain,
                                  "a domain as libvirt_cputune_info returns it")
        out[domain["name"]] = domain
    return out


def _checked_rounds(name, measured):
    """The host's VM rounds and pressure rounds, each a list."""
    if not isinstance(measured, dict):
        raise ValueRangeError("hosts.%s" % name, measured, "the rounds the report playbook took on the host")
    vm_rounds = measured.get("vm_rounds") or []
    pressure_rounds = measured.get("pressure_rounds") or []
    for field, value in (("vm_rounds", vm_rounds), ("pressure_rounds", pressure_rounds)):
        if not isinstance(value, list):
            raise ValueRangeError("hosts.%s.%s" % (name, field), value, "a list of registered loop results")
    return vm_rounds, pressure_rounds


def _vm_series(rounds, vm):
    """A VM's CPUs used, steal and cap in each round (None where unknown)."""
    seen = [domains.get(vm) or {} for domains in rounds]
    return {"used": [_figure((d.get("usage") or {}).get("cpus_used")) for d in seen],
            "steal": [_figure((d.get("usage") or {}).get("steal_cpus")) for d in seen],
            "caps": [_figure(d.get("cap_cpus")) for d in seen]}


def _vm_row(vm, last, series, now):
    """The VM's row of the host's table, from its last reading and its series."""
    known_used = [v for v in series["used"] if v is not None]
    known_steal = [v for v in series["steal"] if v is not None]
    if last.get("failed"):
        running = "failed: %s" % (last.get("msg") or "unreadable")
    else:
        running = "running" if last.get("active") else "shut off"
    row = {"name": vm, "class": str(last.get("class") or NONE), "vcpus": str(last.get("vcpus") or NONE),
           "running": running,
           "used": usage_text(sum(known_used) / len(known_used)) if known_used else NONE,
           "used_max": usage_text(max(known_used)) if known_used else NONE,
           "steal": usage_text(sum(known_steal) / len(known_steal)) if known_steal else NONE,
           "steal_max": usage_text(max(known_steal)) if known_steal else NONE,
           "cap": NONE if last.get("cap_cpus") is None else "%g" % last["cap_cpus"],
           "credits": credits_text(last)}
    row.update(throttle_state(last, now))
    return row


def _vm_lines(position, vm, series):
    """The VM's lines on the used (its cap dashed) and steal charts."""
    colour = svg.colour(position)
    used, steal = [], []
    if any(v is not None for v in series["used"]):
        used.append({"label": vm, "values": series["used"], "colour": colour})
    if any(v is not None for v in series["caps"]):
        used.append({"label": "%s cap" % vm, "values": series["caps"], "colour": colour, "dashed": True, "step": True})
    if any(v is not None for v in series["steal"]):
        steal.append({"label": vm, "values": series["steal"], "colour": colour})
    return used, steal


def _host_pressure(name, pressure_rounds, errors):
    """The host's PSI, runnable tasks, CPUs and load over its pressure rounds."""
    found = {"avg10": [], "avg60": [], "running_tasks": [], "cpus": None, "load1": None}
    for index, round_result in enumerate(pressure_rounds):
        if not isinstance(round_result, dict):
            raise ValueRangeError("hosts.%s.pressure_rounds[%d]" % (name, index), round_result,
                                  "a host_pressure_info result")
        if round_result.get("failed"):
            errors.append("pressure round %d: %s" % (index + 1, round_result.get("msg") or "failed"))
        some = ((round_result.get("pressure") or {}).get("cpu") or {}).get("some") or {}
        found["avg10"].append(_figure(some.get("avg10")))
        found["avg60"].append(_figure(some.get("avg60")))
        found["running_tasks"].append(_figure(round_result.get("procs_running")))
        found["cpus"] = round_result.get("cpus", found["cpus"])
        found["load1"] = (round_result.get("load") or {}).get("load1", found["load1"])
    return found


def _host_facts(pressure, vms):
    known10 = [v for v in pressure["avg10"] if v is not None]
    known_tasks = [v for v in pressure["running_tasks"] if v is not None]
    facts = [("CPUs", NONE if pressure["cpus"] is None else str(pressure["cpus"])),
             ("PSI cpu some avg10, last", percent_text(known10[-1] if known10 else None)),
             ("PSI cpu some avg10, highest", percent_text(max(known10) if known10 else None)),
             ("runnable tasks, highest", NONE if not known_tasks else str(max(known_tasks))),
             ("load (1 min), last", ratio_text(pressure["load1"])),
             ("VMs throttled", "%d of %d" % (len([v for v in vms if v["throttled"]]), len(vms)))]
    return [{"name": key, "value": value} for key, value in facts]


def _host_charts(pressure, pressure_times, vm_times, used_lines, steal_lines):
    pressure_lines = [{"label": "PSI cpu some avg10", "values": pressure["avg10"]},
                      {"label": "PSI cpu some avg60", "values": pressure["avg60"], "dashed": True}]
    if pressure["avg10"]:
        pressure_lines.append({"label": "node gate at %g %%" % GATE_PRESSURE,
                               "values": [GATE_PRESSURE] * len(pressure_times), "dashed": True,
                               "colour": THRESHOLD_COLOUR})
    return [
        _chart("Host CPU pressure%s" % _window_text(pressure_times), pressure_times, pressure_lines,
               "% of time some task waited"),
        _chart("CPUs used per VM, caps dashed%s" % _window_text(vm_times), vm_times, used_lines, "CPUs"),
        _chart("Steal per VM%s" % _window_text(vm_times), vm_times, steal_lines, "CPUs waited for"),
    ]


def host_section(name, measured, now):
    """The report's section of one hypervisor host. measured: {vm_rounds:
    the registered loop results of libvirt_cputune_info, pressure_rounds:
    those of host_pressure_info, vm_window and pressure_window: [start, end]
    unix times of each loop}; None for a host that was not measured."""
    if not measured:
        return {"name": name, "measured": False, "errors": ["not measured (unreachable, or its play failed)"],
                "vms": [], "charts": [], "facts": []}
    vm_rounds, pressure_rounds = _checked_rounds(name, measured)
    errors = []
    vm_times = spread(measured.get("vm_window") or [0, 0], len(vm_rounds), at_end=True)
    pressure_times = spread(measured.get("pressure_window") or [0, 0], len(pressure_rounds), at_end=False)

    rounds = []
    for index, round_result in enumerate(vm_rounds):
        domains = _round_domains(round_result, index)
        if round_result.get("failed") and round_result.get("msg"):
            errors.append("VM round %d: %s" % (index + 1, round_result["msg"]))
        rounds.append(domains or {})
    names = sorted(set(n for domains in rounds for n in domains))
    series = dict((vm, _vm_series(rounds, vm)) for vm in names)
    vms, used_lines, steal_lines = [], [], []
    for position, vm in enumerate(names):
        last = [domains[vm] for domains in rounds if domains.get(vm) is not None][-1]
        vms.append(_vm_row(vm, last, series[vm], now))
        used, steal = _vm_lines(position, vm, series[vm])
        used_lines.extend(used)
        steal_lines.extend(steal)

    pressure = _host_pressure(name, pressure_rounds, errors)
    return {"name": name, "measured": True, "errors": errors, "vms": vms,
            "charts": _host_charts(pressure, pressure_times, vm_times, used_lines, steal_lines),
            "facts": _host_facts(pressure, vms),
            "rounds": len(vm_rounds),
            # What a plan's rows plot for the VM or the node they act on.
            "series": {"vm_times": vm_times, "pressure_times": pressure_times, "avg10": pressure["avg10"],
                       "avg60": pressure["avg60"], "vms": series}}


def gated_rows(nodes, now):
    """One row per Kubernetes node that carries the collection's gate: why,
    by whom, since when, which taints, whether it cordoned."""
    rows = []
    for index, node in enumerate(nodes or []):
        if not isinstance(node, dict) or not node.get("name"):
            raise ValueRangeError("nodes[%d]" % index, node, "a node as node_overcommit_info returns it")
        record = node.get("gate")
        if not record:
            continue
        started = unix_time(record.get("time"))
        rows.append({"node": str(node["name"]), "reason": str(record.get("reason") or NONE),
                     "by": str(record.get("by") or NONE), "since": str(record.get("time") or NONE),
                     "for": duration_text(now - started) if started is not None else NONE,
                     "taints": ", ".join(str(t) for t in record.get("taints") or []) or NONE,
                     "cordoned": "yes" if record.get("cordoned") else "no"})
    return sorted(rows, key=lambda row: row["node"])


def two_layer_rows(report):
    """The two_layer_report filter's node rows as text: both bets, the
    compound one, the host's pressure and the guard's decision."""
    rows = []
    for index, row in enumerate((report or {}).get("nodes") or []):
        if not isinstance(row, dict) or not row.get("node"):
            raise ValueRangeError("two_layer.nodes[%d]" % index, row, "a row of two_layer_report")
        if row.get("vm") is None:
            rows.append({"node": str(row["node"]), "host": str(row.get("host") or NONE), "vm": NONE,
                         "k8s_cpu": NONE, "k8s_memory": NONE, "esxi_cpu": NONE, "esxi_memory": NONE,
                         "compound_cpu": NONE, "compound_memory": NONE, "ready": NONE, "balloon": NONE,
                         "swap": NONE, "gate": "no ESXi VM found: %s" % (row.get("reason") or NONE)})
            continue
        k8s, esxi, both, gate = row["kubernetes"], row["esxi"], row["compound"], row["gate"]
        rows.append({"node": str(row["node"]), "host": str(row["host"]), "vm": str(row["vm"]),
                     "k8s_cpu": ratio_text((k8s.get("cpu") or {}).get("limits_ratio")),
                     "k8s_memory": ratio_text((k8s.get("memory") or {}).get("limits_ratio")),
                     "esxi_cpu": ratio_text(esxi.get("vcpu_per_core")),
                     "esxi_memory": ratio_text(esxi.get("memory_ratio")),
                     "compound_cpu": ratio_text(both.get("cpu")), "compound_memory": ratio_text(both.get("memory")),
                     "ready": ratio_text(esxi.get("cpu_ready_pct"), " %"),
                     "balloon": ratio_text(esxi.get("balloon_mb"), " MB"),
                     "swap": ratio_text(esxi.get("swapped_mb"), " MB"),
                     "gate": _gate_text(gate)})
    return sorted(rows, key=lambda row: row["node"])


def _gate_text(gate):
    text = {"gate": "gate (host over its watermark)", "open": "open",
            "keep": "keep (closed for another reason)"}.get(gate.get("action"), str(gate.get("action")))
    if gate.get("held"):
        text += ", held until under the reopen level"
    return text


def _signal_text(value):
    if isinstance(value, float):
        return "%g" % value
    if isinstance(value, (list, tuple)):
        return " ".join(str(item) for item in value)
    return str(value)


def _signals_text(signals):
    return ", ".join("%s %s" % (key.replace("_", " "), _signal_text(value))
                     for key, value in sorted((signals or {}).items()) if value is not None)


def _series_by_object(plan, sections, kubevirt):
    """{object: {used, steal, caps, times}}: what a plan's row plots for a
    VM, keyed as the plan names it (domain.observed), whichever platform:
    the hosts' libvirt domains over their rounds, and the KubeVirt VMs read
    at the plan's round times."""
    out = {}
    for view in sections:
        series = view.get("series")
        for name, vm in sorted(((series or {}).get("vms") or {}).items()):
            out[vm_key({"platform": LIBVIRT, "host": view["name"], "name": name})] = dict(vm, times=series["vm_times"])
    times = [r.get("time") for r in plan.get("rounds") or []]
    if isinstance(kubevirt, dict):
        kubevirt = kubevirt.get("vms")
    for reading in kubevirt or []:
        usage = (reading.get("usage_rounds") or [])[:len(times)] if isinstance(reading, dict) else []
        if usage and len(usage) == len(times):
            vm = observed_vm(KUBEVIRT, None, reading)
            out[vm["key"]] = {"used": [_figure((u or {}).get("cpus_used")) for u in usage],
                              "steal": [_figure((u or {}).get("steal_cpus")) for u in usage],
                              "caps": [_figure(vm["cap_cpus"])] * len(times), "times": times}
    return out


def plan_rows(plan, sections, kubevirt=None):
    """One row per action of a recommended plan: what it does, the rule and
    reason, the signals behind it, and the plot of the VM (CPUs used, steal,
    its cap and the planned one) or of its host's pressure (a node).
    kubevirt: kubevirt_vm_cpu_info's VMs read at the plan's round times."""
    views = dict((view["name"], view) for view in sections)
    vm_series = _series_by_object(plan, sections, kubevirt)
    gate_at = (plan.get("parameters") or {}).get("gate_pressure", GATE_PRESSURE)
    rows = []
    for action in plan.get("actions") or []:
        series = (views.get(action.get("host")) or {}).get("series")
        chart = None
        vm = vm_series.get(action["object"]) if action.get("vm") else None
        if vm is not None:
            times = vm["times"]
            lines = [{"label": "CPUs used", "values": vm["used"], "colour": svg.colour(0)},
                     {"label": "steal", "values": vm["steal"], "colour": svg.colour(1)},
                     {"label": "cap", "values": vm["caps"], "colour": svg.colour(2), "dashed": True, "step": True}]
            if action.get("cpus") is not None:
                lines.append({"label": "planned cap %g" % action["cpus"], "values": [action["cpus"]] * len(times),
                              "colour": THRESHOLD_COLOUR, "dashed": True})
            chart = _chart("%s: CPUs used, steal and cap" % action["vm"], times, lines, "CPUs")
        elif series and action.get("node"):
            times = series["pressure_times"]
            chart = _chart("%s on %s: CPU pressure" % (action["node"], action["host"]), times,
                           [{"label": "PSI cpu some avg10", "values": series["avg10"]},
                            {"label": "PSI cpu some avg60", "values": series["avg60"], "dashed": True},
                            {"label": "gate at %g %%" % gate_at, "values": [gate_at] * len(times), "dashed": True,
                             "colour": THRESHOLD_COLOUR}], "% of time some task waited")
        rows.append({"action": action["action"], "object": action["object"], "host": str(action.get("host") or NONE),
                     "change": action.get("change") or action["action"], "rule": action.get("rule") or NONE,
                     "reason": action.get("reason") or NONE, "signals": _signals_text(action.get("signals")),
                     "chart": chart})
    return rows


def plan_view(plan, sections, kubevirt=None):
    """The plan's part of the page: its id, times and rows, and what it held
    back or deferred."""
    if not isinstance(plan, dict) or "id" not in plan:
        raise ValueRangeError("plan", plan, "a plan made by the recommend_plan filter")
    return {"id": plan["id"], "created": plan.get("created"), "expires": utc_text(plan["expires_unix"]),
            "rows": plan_rows(plan, sections, kubevirt),
            "held": ["%s: %s" % (a["object"], a.get("held")) for a in plan.get("held") or []],
            "deferred": ["%s: %s" % (a["object"], a.get("deferred")) for a in plan.get("deferred") or []],
            "notes": ["%s: %s" % (n.get("object"), n.get("note")) for n in plan.get("notes") or []],
            "skipped": ["%s: %s" % (s.get("host"), s.get("reason")) for s in plan.get("skipped") or []],
            "proposals": [plans.proposal_line(p) for p in plan.get("proposals") or []]}


def page(hosts, generated, hypervisors=None, nodes=None, two_layer=None, plan=None, kubevirt=None):
    """The whole page's content. hosts: {name: what host_section takes};
    generated: unix time the report was made; hypervisors: the names the
    report should have (a name without measurements shows as not measured);
    nodes: node_overcommit_info's nodes, or None when Kubernetes is not
    reported; two_layer: the two_layer_report filter's result, or None."""
    if isinstance(generated, bool) or not isinstance(generated, (int, float)):
        raise ValueRangeError("generated", generated, "the unix time the report was made")
    if hosts is None:
        hosts = {}
    if not isinstance(hosts, dict):
        raise ValueRangeError("hosts", hosts, "a dict of host name to its rounds")
    names = list(hypervisors) if hypervisors is not None else sorted(hosts)
    names += sorted(set(hosts) - set(names))
    if isinstance(nodes, dict):
        nodes = nodes.get("nodes")
    if nodes is not None and not isinstance(nodes, list):
        raise ValueRangeError("nodes", nodes, "node_overcommit_info's nodes")
    if two_layer is not None and not isinstance(two_layer, dict):
        raise ValueRangeError("two_layer", two_layer, "the result of the two_layer_report filter")
    sections = [host_section(name, hosts.get(name), generated) for name in names]
    return {
        "generated": utc_text(generated),
        "hosts": sections,
        "plan": plan_view(plan, sections, kubevirt) if plan is not None else None,
        "kubernetes": nodes is not None,
        "nodes_total": len(nodes or []),
        "gated": gated_rows(nodes, generated) if nodes is not None else [],
        "vsphere": two_layer is not None,
        "two_layer": two_layer_rows(two_layer) if two_layer is not None else [],
        "unmatched": [str(n) for n in (two_layer or {}).get("unmatched") or []],
    }
