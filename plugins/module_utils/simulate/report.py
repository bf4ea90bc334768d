# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""simulation.html: the simulation's result (the dict simulation.json
holds) as one self-contained page: tables of the figures, the verdict and,
per scenario, charts of the plotted host. Pure: no I/O, no JavaScript, no
external resources; everything taken from the data is escaped."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from html import escape

from ansible_collections.overcommit.control.plugins.module_utils.common import svg
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy import NAME as OURS
from ansible_collections.overcommit.control.plugins.module_utils.simulate.metrics import METRICS

CHART_WIDTH, CHART_HEIGHT = 640, 240
STYLE = """
body { font-family: sans-serif; margin: 24px; color: #222; max-width: 1360px; }
h1 { margin-bottom: 4px; } h2 { margin-top: 40px; border-bottom: 1px solid #ccc; } h3 { margin-top: 24px; }
table { border-collapse: collapse; margin: 8px 0; font-size: 14px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; } td { text-align: right; } th { background: #f3f3f3; }
th.metric { text-align: left; font-weight: normal; font-family: monospace; } th.ours { background: #e3ecf7; }
td.met { background: #dff0d8; } td.not-met { background: #f2dede; font-weight: bold; } td.target { color: #555; }
.muted { color: #666; } dt { font-weight: bold; font-family: monospace; } dd { margin: 0 0 6px 16px; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; } svg.chart { max-width: 100%; height: auto; }
"""


def render(simulation):
    """The whole HTML page, as a string, for the dict simulation.json holds."""
    policies = list(simulation.get("policies") or {})
    targets = simulation.get("targets") or {}
    out = ['<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
           '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
           "<title>Policy simulation</title>\n<style>%s</style>\n</head>\n<body>\n" % STYLE,
           "<h1>Policy simulation</h1>\n",
           '<p class="muted">%s by %s.</p>\n' % (
               escape(_source(simulation.get("source") or {})), escape(str(simulation.get("generated_by", "?")))),
           "<h2>All scenarios pooled</h2>\n",
           _table(simulation.get("policies") or {}, policies, targets, simulation.get("verdict")),
           _verdict(simulation.get("verdict"), policies),
           "<h3>Policies</h3>\n<dl>\n"]
    for name, text in (simulation.get("descriptions") or {}).items():
        out.append("<dt>%s</dt><dd>%s</dd>\n" % (escape(name), escape(str(text))))
    out.append("</dl>\n<details><summary>Parameters of %s</summary>\n<table>\n" % escape(OURS))
    for name, value in sorted((simulation.get("parameters") or {}).items()):
        out.append('<tr><th class="metric">%s</th><td>%s</td></tr>\n' % (escape(name), escape(_value(value))))
    out.append("</table>\n</details>\n")
    scenarios = simulation.get("scenarios") or {}
    replayed = (simulation.get("source") or {}).get("scenarios") or []
    for name in [n for n in replayed if n in scenarios] + [n for n in scenarios if n not in replayed]:
        out.append(_scenario(name, scenarios[name], targets))
    out.append("</body>\n</html>\n")
    return "".join(out)


def _source(source):
    if source.get("scenarios"):
        return "Replayed the scenarios %s (seed %s)" % (", ".join(source["scenarios"]), source.get("seed"))
    if source.get("trace"):
        return "Replayed the trace %s (hosts %s)" % (source["trace"], source.get("trace_hosts"))
    return "Replayed %s" % ", ".join("%s %s" % item for item in sorted(source.items()))


def _value(value):
    """A figure as the tables show it."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "%.0f" % value if abs(value) >= 10000 else "%.4g" % value
    return str(value)


def _table(figures, policies, targets, verdict):
    """Rows: the metrics; columns: the policies, then the target. Our
    policy's cells of metrics with a target are marked met or not met."""
    judged = (verdict or {}).get("targets") or {}
    out = ['<table>\n<tr><th>metric</th>']
    out.extend('<th%s>%s</th>' % (' class="ours"' if name == OURS else "", escape(name)) for name in policies)
    out.append("<th>target</th></tr>\n")
    for metric in METRICS:
        out.append('<tr><th class="metric">%s</th>' % escape(metric))
        for name in policies:
            met = judged.get(metric, {}).get("met") if name == OURS else None
            css = {True: ' class="met" title="target met"', False: ' class="not-met" title="target not met"'}.get(met, "")
            out.append("<td%s>%s</td>" % (css, escape(_value((figures.get(name) or {}).get(metric)))))
        out.append('<td class="target">%s</td></tr>\n' % escape(str(targets.get(metric, ""))))
    out.append("</table>\n")
    return "".join(out)


def _verdict(verdict, policies):
    """The verdict in sentences: the targets met, then versus each other policy."""
    if not verdict:
        return '<p class="muted">No verdict: the policy %s was not simulated.</p>\n' % escape(OURS)
    judged = verdict.get("targets") or {}
    missed = [metric for metric, entry in judged.items() if entry.get("met") is False]
    unknown = [metric for metric, entry in judged.items() if entry.get("met") is None]
    text = "%s meets %d of %d targets" % (OURS, len(judged) - len(missed) - len(unknown), len(judged))
    if missed:
        text += "; misses %s" % ", ".join(missed)
    if unknown:
        text += "; n/a (nothing to measure): %s" % ", ".join(unknown)
    out = ["<ul>\n<li>%s.</li>\n" % escape(text)]
    versus = verdict.get("versus") or {}
    for other in [name for name in policies if name in versus] + sorted(set(versus) - set(policies)):
        entry = versus[other]
        out.append("<li>%s</li>\n" % escape("Versus %s, %s %s: better on %s; worse on %s." % (
            other, OURS, "wins" if entry.get("wins") else "does not win",
            ", ".join(entry.get("better") or []) or "nothing", ", ".join(entry.get("worse") or []) or "nothing")))
    out.append("</ul>\n")
    return "".join(out)


def _scenario(name, scenario, targets):
    policies = list(scenario.get("policies") or {})
    out = ["<h2>Scenario %s</h2>\n" % escape(name),
           "<p>%s</p>\n" % escape(str(scenario.get("description", ""))),
           '<p class="muted">Hosts: %s; VMs: %s; intervals: %s of %s s; ground truth (who is noisy): %s.</p>\n' % tuple(
               escape(_value(scenario.get(key))) for key in ("hosts", "vms", "intervals", "interval_seconds", "ground_truth")),
           _table(scenario.get("policies") or {}, policies, targets, scenario.get("verdict")),
           _verdict(scenario.get("verdict"), policies)]
    series = scenario.get("series")
    if series and series.get("time"):
        out.append(_charts(series))
    return "".join(out)


def _charts(series):
    """Per policy, CPU used and caps, and steal, of each VM of the plotted
    host; then the host's pressure and the gated nodes, one line per policy."""
    times, runs = series["time"], series.get("policies") or {}
    vms = sorted(set(series.get("demand") or {}).union(*[set(run.get("used") or {}) for run in runs.values()]))
    culprits = set(vm for vm, flags in (series.get("culprit") or {}).items() if any(flags))
    colours = dict((vm, svg.colour(index)) for index, vm in enumerate(vms))
    labels = dict((vm, "%s (culprit)" % vm if vm in culprits else vm) for vm in vms)
    cpu_max = _largest([run.get(kind) or {} for run in runs.values() for kind in ("used", "cap")])
    steal_max = _largest([run.get("steal") or {} for run in runs.values()])
    out = ["<h3>Host %s</h3>\n" % escape(str(series.get("host", "?"))),
           '<p class="muted">One point every %s s; caps dashed, in the colour of their VM (none drawn: no cap).</p>\n'
           % escape(_value(series.get("interval_seconds")))]
    for policy, run in runs.items():
        used, caps, steal = run.get("used") or {}, run.get("cap") or {}, run.get("steal") or {}
        cpu = [{"label": labels[vm], "values": used[vm], "colour": colours[vm]} for vm in vms if vm in used]
        cpu += [{"label": "%s cap" % vm, "values": caps[vm], "colour": colours[vm], "dashed": True, "step": True}
                for vm in vms if vm in caps and any(v is not None for v in caps[vm])]
        stolen = [{"label": labels[vm], "values": steal[vm], "colour": colours[vm]} for vm in vms if vm in steal]
        out.append('<h4>%s</h4>\n<div class="charts">\n%s\n%s\n</div>\n' % (
            escape(policy), svg.line_chart("%s: CPU used and caps" % policy, times, cpu, "CPUs", CHART_WIDTH, CHART_HEIGHT, cpu_max),
            svg.line_chart("%s: steal of the VMs" % policy, times, stolen, "CPUs", CHART_WIDTH, CHART_HEIGHT, steal_max)))
    pressure = [{"label": policy, "values": run.get("pressure") or []} for policy, run in runs.items()]
    gated = [{"label": policy, "values": run.get("gated_nodes") or [], "step": True} for policy, run in runs.items()]
    out.append('<h4>All policies</h4>\n<div class="charts">\n%s\n%s\n</div>\n' % (
        svg.line_chart("host CPU pressure (PSI some avg10, %)", times, pressure, "%", CHART_WIDTH, CHART_HEIGHT, 100),
        svg.line_chart("gated nodes", times, gated, "nodes", CHART_WIDTH, CHART_HEIGHT)))
    return "".join(out)


def _largest(groups):
    """The largest value of any series in the groups (dicts of series), or
    None (let the chart choose) when there is none."""
    values = [v for group in groups for values in group.values() for v in values if v is not None]
    return max(values) if values and max(values) > 0 else None
