# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Replays a trace against several policies in lockstep. Pure: no I/O.

Each interval, every host's CPU is shared out by the host model under the
caps each policy has in force; the policy then sees what the interval did
(CPUs used and steal per VM, rounded as libvirt_cputune_info reports them,
the host's pressure averages) and its actions take effect from the next
interval, as a real cycle's would."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import policy
from ansible_collections.overcommit.control.plugins.module_utils.simulate.controllers import CONTROLLERS, ORDER
from ansible_collections.overcommit.control.plugins.module_utils.simulate.host_model import HostModel
from ansible_collections.overcommit.control.plugins.module_utils.simulate.metrics import Metrics

# Most points per plotted series; longer runs are averaged down to this.
PLOT_POINTS = 360
PLOTTED_VMS = 8


def check_policies(names):
    names = list(names or ORDER)
    for name in names:
        if name not in CONTROLLERS:
            raise ValueRangeError("policies", name, "any of %s" % ", ".join(ORDER))
    return names


class Run(object):
    """One policy's world: its caps, gates, observations and metrics."""

    def __init__(self, name, trace, params):
        self.name = name
        self.models = dict((host, HostModel(host, cpus, trace.interval)) for host, cpus in trace.hosts.items())
        self.views = []
        self.views_by_host = dict((host, []) for host in trace.hosts)
        for key, vm in trace.vms.items():
            view = {"key": key, "name": vm["name"], "host": vm["host"], "class": vm["class"],
                    "vcpus": float(vm["vcpus"]), "used": 0.0, "steal": 0.0, "cap": None, "pressure": None,
                    "state": {}, "floor": None, "baseline": vm["baseline_cpus"], "entitled": None,
                    "credits": None, "paused": False, "weight": vm.get("weight"), "usage_known": True}
            self.views.append(view)
            self.views_by_host[vm["host"]].append(view)
        self.views_index = dict((view["key"], view) for view in self.views)
        self.hosts = [{"name": host, "cpus": float(cpus), "avg10": 0.0, "avg60": 0.0}
                      for host, cpus in trace.hosts.items()]
        arguments = (self.hosts, self.views) + ((params,) if name == policy.NAME else ())
        self.controller = CONTROLLERS[name](*arguments)
        self.caps = {}
        self.rules = {}
        # CPU weights a policy set, by VM: in force until its restore.
        self.weights = {}
        self.gated = dict((host, False) for host in trace.hosts)
        # The metrics judge with their own fixed thresholds, never the policy's.
        self.metrics = Metrics(trace)
        # What the host model gave each VM in the last interval, unrounded.
        self.exact_used = {}


def simulate(trace, policies=None, params=None, plot_points=PLOT_POINTS):
    """{policies: {name: metrics}, series: {...}} for the trace."""
    names = check_policies(policies)
    runs = [Run(name, trace, params) for name in names]
    host_keys = dict((host, [key for key, vm in trace.vms.items() if vm["host"] == host]) for host in trace.hosts)
    specs, weighted = {}, {}
    for host, keys in host_keys.items():
        specs[host], weighted[host] = _specs(trace, keys)
    burstable = [(key, vm["baseline_cpus"]) for key, vm in trace.vms.items() if vm["class"] == "burstable"]
    plotted_host, plotted = _plotted(trace, host_keys)
    step = max(1, -(-trace.count // plot_points))
    series = _empty_series(trace, runs, plotted_host, plotted, step)
    demand, interval = trace.demand, trace.interval
    for index in range(trace.count):
        now = trace.time(index) + interval
        for host, keys in host_keys.items():
            demands = [demand[key][index] for key in keys]
            host_specs = specs[host]
            for run in runs:
                caps = [run.caps.get(key) for key in keys]
                model = run.models[host]
                run_specs = host_specs if not run.weights else \
                    [(vcpus, dedicated, run.weights.get(key, weight))
                     for key, (vcpus, dedicated, weight) in zip(keys, host_specs)]
                used, steal, contention = model.run(run_specs, demands, caps, weighted_queue=weighted[host])
                run.metrics.interval_of_host(host, index, keys, host_specs, demands, used, contention, caps,
                                             [run.rules.get(key) for key in keys], model.cpus,
                                             [key in run.weights for key in keys] if run.weights else None)
                views = run.views_index
                for offset, key in enumerate(keys):
                    view = views[key]
                    run.exact_used[key] = used[offset]
                    view["used"] = round(used[offset], 3)
                    view["steal"] = round(steal[offset], 3)
                    view["cap"] = caps[offset]
        for run in runs:
            for host in run.hosts:
                model = run.models[host["name"]]
                host["avg10"], host["avg60"] = round(model.avg10, 2), round(model.avg60, 2)
            actions = run.controller.decide(now, run.hosts, run.views_by_host)
            _apply(run, actions, trace)
            for key, baseline in burstable:
                run.metrics.credits(key, baseline, run.exact_used[key], run.controller.credits(key),
                                    index == 0)
        if index % step == step - 1 or index == trace.count - 1:
            _sample(series, runs, plotted_host, plotted, trace, index, step)
    return {"policies": dict((run.name, run.metrics.result()) for run in runs),
            "raw": dict((run.name, run.metrics.raw()) for run in runs), "series": series}


def _specs(trace, keys):
    """([(vcpus, dedicated, CPU weight)] of one host's VMs, weighted): the
    trace's weights when every shared VM has one, else vCPUs (as the policy
    weighs them). Only a host whose weights all come from the trace queues by
    weight: a policy demotes only weights it read."""
    vms = [trace.vms[key] for key in keys]
    weighted = all(vm.get("weight") is not None for vm in vms if vm["class"] != "dedicated")
    return ([(vm["vcpus"], vm["class"] == "dedicated", vm["weight"] if weighted else vm["vcpus"]) for vm in vms],
            weighted)


def _apply(run, actions, trace):
    metrics = run.metrics
    for kind, key, cpus, rule in actions:
        if kind in ("gate", "open"):
            if run.gated[key] != (kind == "gate"):
                run.gated[key] = kind == "gate"
                metrics.action(kind, key, rule, None)
            continue
        before = run.caps.get(key)
        metrics.action(kind, key, rule, trace.vms[key]["class"])
        view = run.views_index[key]
        if kind == "weight":
            # A demoted weight is a brake too: its reversals count as a cap's.
            if key not in run.weights and before is None:
                metrics.cap_moved(key, True)
            run.weights[key] = view["weight"] = cpus
            continue
        if kind == "lift" and key in run.weights:
            del run.weights[key]
            view["weight"] = trace.vms[key].get("weight")
            if before is None:
                metrics.cap_moved(key, False)
        if kind == "cap":
            run.caps[key] = cpus
            run.rules[key] = rule
            metrics.cap_moved(key, before is None or cpus < before)
        elif before is not None:
            del run.caps[key]
            run.rules.pop(key, None)
            metrics.cap_moved(key, False)


def _plotted(trace, host_keys):
    """The host with the most culprit intervals (else the busiest), and up to
    PLOTTED_VMS of its VMs: culprits first, then the most demanding."""
    def weight(host):
        keys = host_keys[host]
        return (sum(sum(trace.culprit[key]) for key in keys), sum(sum(trace.demand[key]) for key in keys))
    host = max(sorted(trace.hosts), key=weight)
    keys = sorted(host_keys[host], key=lambda key: (-sum(trace.culprit[key]), -sum(trace.demand[key])))
    return host, keys[:PLOTTED_VMS]


def _empty_series(trace, runs, host, keys, step):
    return {
        "host": host, "interval_seconds": trace.interval * step,
        "time": [],
        "demand": dict((trace.vms[key]["name"], []) for key in keys),
        "culprit": dict((trace.vms[key]["name"], []) for key in keys),
        "policies": dict((run.name, {
            "used": dict((trace.vms[key]["name"], []) for key in keys),
            "steal": dict((trace.vms[key]["name"], []) for key in keys),
            "cap": dict((trace.vms[key]["name"], []) for key in keys),
            "pressure": [], "gated_nodes": [],
        }) for run in runs),
    }


def _sample(series, runs, host, keys, trace, index, step):
    first = index - (index % step) if index % step != step - 1 else index - step + 1
    series["time"].append(round(trace.time(first), 1))
    for key in keys:
        name = trace.vms[key]["name"]
        window = trace.demand[key][first:index + 1]
        series["demand"][name].append(round(sum(window) / len(window), 3))
        series["culprit"][name].append(max(trace.culprit[key][first:index + 1]))
    for run in runs:
        out = series["policies"][run.name]
        for key in keys:
            view = run.views_index[key]
            name = trace.vms[key]["name"]
            out["used"][name].append(view["used"])
            out["steal"][name].append(view["steal"])
            out["cap"][name].append(run.caps.get(key))
        out["pressure"].append(run.models[host].avg10)
        out["gated_nodes"].append(sum(1 for gated in run.gated.values() if gated))
