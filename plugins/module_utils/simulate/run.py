# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What policy_simulate does: take the traces (a file files.py read, or
generated scenarios), replay each against the policies, pool the figures,
and judge ours against the targets and the other policies; files.py writes
simulation.json and simulation.html. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import policy
from ansible_collections.overcommit.control.plugins.module_utils.simulate import engine, metrics, scenarios
from ansible_collections.overcommit.control.plugins.module_utils.simulate.controllers import CONTROLLERS, ORDER

ALL = "all"


def check_request(params):
    """The module's options, validated before anything is read or written
    (files.check_paths then looks at the paths). Raises ValueRangeError
    naming the field."""
    trace_path, hosts_path, names = params.get("trace"), params.get("trace_hosts"), params.get("scenario") or []
    if isinstance(names, str):
        names = [names]
    if trace_path and names:
        raise ValueRangeError("scenario", names, "nothing when trace is given (replay a file or scenarios, not both)")
    if trace_path and not hosts_path:
        raise ValueRangeError("trace_hosts", hosts_path, "a CSV with the header host,cpus (each host's CPUs)")
    if hosts_path and not trace_path:
        raise ValueRangeError("trace", trace_path, "the trace CSV the hosts file belongs to")
    if not trace_path and not names:
        raise ValueRangeError("scenario", names, "a scenario (%s, or %s) when no trace is given"
                              % (", ".join(sorted(scenarios.SCENARIOS)), ALL))
    if ALL in names:
        names = list(dict.fromkeys(list(scenarios.SMALL) + [name for name in names if name != ALL]))
    if trace_path and params.get("write_trace"):
        raise ValueRangeError("write_trace", True, "false when trace is given (it writes generated scenarios)")
    for name in names:
        if name not in scenarios.SCENARIOS:
            raise ValueRangeError("scenario", name, "one of %s, or %s" % (", ".join(sorted(scenarios.SCENARIOS)), ALL))
    seed = params.get("seed", 1)
    if seed is None or seed < 0:
        raise ValueRangeError("seed", seed, "a whole number of at least 0")
    report_dir = params.get("report_dir")
    if not report_dir:
        raise ValueRangeError("report_dir", report_dir, "a folder to write simulation.json and simulation.html to")
    policies = engine.check_policies(params.get("policies"))
    return {"trace": trace_path, "trace_hosts": hosts_path, "scenarios": names, "seed": seed,
            "report_dir": report_dir, "policies": policies,
            "parameters": policy.parameters(params.get("policy") or {}),
            "write_trace": bool(params.get("write_trace"))}


def generated(request):
    """The request's scenarios, generated: [(name, description, trace)]."""
    loaded = []
    for name in request["scenarios"]:
        loaded.append((name, " ".join(scenarios.SCENARIOS[name].__doc__.split()),
                       scenarios.generate(name, request["seed"])))
    return loaded


def simulate(request, loaded=None):
    """(the simulation's whole result, as simulation.json holds it; the
    traces replayed, by name). loaded: [(name, description, trace)] read
    from a file (files.load_trace); else the request's scenarios."""
    ours = policy.NAME
    per_scenario, raws, replayed = {}, dict((name, []) for name in request["policies"]), {}
    for name, description, trace in loaded if loaded is not None else generated(request):
        replayed[name] = trace
        result = engine.simulate(trace, request["policies"], request["parameters"])
        for policy_name, raw in result["raw"].items():
            raws[policy_name].append(raw)
        per_scenario[name] = {
            "description": description, "hosts": len(trace.hosts), "vms": len(trace.vms),
            "intervals": trace.count, "interval_seconds": trace.interval, "ground_truth": trace.has_ground_truth,
            "clamped_demands": trace.clamped,
            "policies": result["policies"], "series": result["series"],
        }
        if ours in result["policies"]:
            per_scenario[name]["verdict"] = metrics.verdict(result["policies"], ours,
                                                            [p for p in request["policies"] if p != ours])
    pooled = dict((name, metrics.figures(raw)) for name, raw in raws.items())
    simulation = {
        "generated_by": "overcommit.control.policy_simulate",
        "source": {"trace": request["trace"], "trace_hosts": request["trace_hosts"]} if request["trace"]
        else {"scenarios": request["scenarios"], "seed": request["seed"]},
        "parameters": request["parameters"],
        "descriptions": dict((name, CONTROLLERS[name].description) for name in ORDER if name in request["policies"]),
        "targets": dict((name, "%s %s" % target) for name, target in sorted(metrics.TARGETS.items())),
        "policies": pooled,
        "scenarios": per_scenario,
    }
    if ours in pooled:
        simulation["verdict"] = metrics.verdict(pooled, ours, [p for p in request["policies"] if p != ours])
    return simulation, replayed


def table(simulation):
    """The pooled figures as a plain-text table, one column per policy."""
    names = list(simulation["policies"])
    rows = [("metric",) + tuple(names)]
    for metric in metrics.METRICS:
        rows.append((metric,) + tuple(_cell(simulation["policies"][name].get(metric)) for name in names))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row))
            for row in rows]


def verdict_lines(simulation):
    """Our policy against each target and each other policy, for people."""
    verdict = simulation.get("verdict")
    if not verdict:
        return []
    lines = []
    if verdict.get("victim_wait_reduction") is not None:
        lines.append("victims' wait reduction against no control: %.1f %%" % (100 * verdict["victim_wait_reduction"]))
    for name, judged in sorted(verdict["targets"].items()):
        met = {True: "met", False: "NOT MET", None: "n/a (nothing to measure on these traces)"}[judged["met"]]
        lines.append("%s = %s (target %s): %s" % (name, _cell(judged["value"]), judged["target"], met))
    for other, versus in verdict["versus"].items():
        missed = versus.get("missed_where_it_meets") or []
        lines.append("versus %s: better on %s; worse on %s%s%s" % (
            other, ", ".join(versus["better"]) or "nothing", ", ".join(versus["worse"]) or "nothing",
            "; misses %s, which %s meets" % (", ".join(missed), other) if missed else "",
            " (wins)" if versus["wins"] else ""))
    return lines


def _cell(value):
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return "%.4g" % value
    return str(value)
