# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SVG charts and the HTML page of the policy simulator: escaping, gaps,
steps, one chart per policy per scenario, n/a for missing figures, the
met / not met marks and a page without a verdict."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import re
from xml.etree import ElementTree

from ansible_collections.overcommit.control.plugins.module_utils.common import svg
from ansible_collections.overcommit.control.plugins.module_utils.simulate import report, run
from ansible_collections.overcommit.control.plugins.module_utils.simulate.metrics import METRICS

SVG = "{http://www.w3.org/2000/svg}"
TIMES = [0.0, 600.0, 1200.0, 1800.0, 2400.0, 3000.0, 3600.0]
POLICIES = ("none", "naive", "overcommit")


def paths(chart):
    """The d attribute of each series' path, parsed as XML (so the chart is well-formed)."""
    return [element.get("d") for element in ElementTree.fromstring(chart).iter(SVG + "path")]


def test_labels_and_titles_are_escaped():
    lines = [{"label": "<script>x</script>&", "values": [1.0] * 7}]
    chart = svg.line_chart('<script>alert("t")</script>', TIMES, lines, "<b>CPUs</b>")
    assert "<script>" not in chart and "<b>" not in chart
    assert "&lt;script&gt;x&lt;/script&gt;&amp;" in chart
    root = ElementTree.fromstring(chart)
    texts = [t.text for t in root.iter(SVG + "text") if "script" in (t.text or "")]
    assert texts == ['<script>alert("t")</script>', "<script>x</script>&"]


def test_none_is_a_gap():
    (data,) = paths(svg.line_chart("gap", TIMES, [{"label": "cap", "values": [1.0, 2.0, None, None, 2.0, 1.0, 0.5]}], "CPUs"))
    assert data.count("M") == 2


def test_no_none_is_one_segment_and_all_none_draws_nothing():
    chart = svg.line_chart("t", TIMES, [{"label": "a", "values": [0.5, 1.0, 1.5, 1.0, 0.5, 1.0, 2.0]},
                                        {"label": "b", "values": [None] * 7}], "CPUs")
    assert [d.count("M") for d in paths(chart)] == [1]


def test_step_holds_each_value_until_the_next_point():
    (data,) = paths(svg.line_chart("gated nodes", TIMES, [{"label": "p", "values": [0, 1, 1, 1, 0, 0, 0], "step": True}], "nodes"))
    points = [tuple(float(v) for v in pair.split(",")) for pair in re.findall(r"-?[\d.]+,-?[\d.]+", data)]
    # every move is horizontal or vertical, never a slope
    assert all(a[0] == b[0] or a[1] == b[1] for a, b in zip(points, points[1:]))
    assert len(set(point[1] for point in points)) == 2


def test_coordinates_stay_in_the_plot_and_have_one_decimal():
    chart = svg.line_chart("t", TIMES, [{"label": "a", "values": [0.0, 9.0, 3.3333, 1.0, 2.0, 1.0, 0.1]}], "CPUs", y_max=5)
    (data,) = paths(chart)
    numbers = re.findall(r"-?\d+(?:\.\d+)?", data)
    assert all(len(n.split(".")[1]) == 1 for n in numbers if "." in n)
    frame = ElementTree.fromstring(chart).find(SVG + "rect")
    top, bottom = float(frame.get("y")), float(frame.get("y")) + float(frame.get("height"))
    assert all(top <= float(y) <= bottom for y in re.findall(r",(-?[\d.]+)", data))


def test_time_axis_in_hours_and_minutes():
    chart = svg.line_chart("t", [0.0, 5400.0], [{"label": "a", "values": [1.0, 2.0]}], "CPUs")
    labels = [t.text for t in ElementTree.fromstring(chart).iter(SVG + "text")]
    assert "0:00" in labels and "1:30" in labels


def series(vms, n=6):
    per_policy = {"used": dict((vm, [0.5] * n) for vm in vms), "steal": dict((vm, [0.0] * n) for vm in vms),
                  "cap": dict((vm, [None] * n) for vm in vms), "pressure": [0.0] * n, "gated_nodes": [0] * n}
    return {"host": "hv-1", "interval_seconds": 10.0, "time": [10.0 * i for i in range(n)],
            "demand": dict((vm, [0.5] * n) for vm in vms), "culprit": dict((vm, [0] * n) for vm in vms),
            "policies": dict((name, copy.deepcopy(per_policy)) for name in POLICIES)}


def figures(value):
    return dict((metric, value) for metric in METRICS)


def verdict(met):
    return {"targets": {"culprit_precision": {"value": 1.0, "target": ">= 0.95", "met": met},
                        "dedicated_touched": {"value": 0, "target": "== 0", "met": True}},
            "versus": {"none": {"better": ["containment_p95_intervals"], "worse": [], "wins": True},
                       "naive": {"better": [], "worse": ["throttled_cpu_seconds"], "wins": False}}}


def make_simulation():
    scenario = {"description": "a <b>noisy</b> neighbour", "hosts": 1, "vms": 2, "intervals": 6, "interval_seconds": 10.0,
                "ground_truth": True, "policies": dict((name, figures(1.5)) for name in POLICIES),
                "verdict": verdict(False), "series": series(["web-1", "batch<1>"])}
    scenario["series"]["culprit"]["batch<1>"][3] = 1
    scenario["series"]["policies"]["overcommit"]["cap"]["batch<1>"][3:] = [1.0, 1.0, 1.0]
    return {"generated_by": "overcommit.control.policy_simulate", "source": {"scenarios": ["one", "two"], "seed": 1},
            "parameters": {"busy_share": 0.9}, "descriptions": dict((name, "the %s policy" % name) for name in POLICIES),
            "targets": {"culprit_precision": ">= 0.95", "dedicated_touched": "== 0"},
            "policies": dict((name, figures(2.0)) for name in POLICIES), "verdict": verdict(True),
            "scenarios": {"two": copy.deepcopy(scenario), "one": scenario}}


def test_page_is_html5_and_self_contained():
    simulation = make_simulation()
    page = report.render(simulation)
    assert page.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in page
    assert "<h1>Policy simulation</h1>" in page
    assert not re.search(r"<script|(?:src|href)=|@import|url\(", page)
    # scenarios in the order they were replayed
    assert page.index("Scenario one") < page.index("Scenario two")


def test_data_is_escaped():
    simulation = make_simulation()
    page = report.render(simulation)
    assert "<b>noisy</b>" not in page and "a &lt;b&gt;noisy&lt;/b&gt; neighbour" in page
    assert "batch<1>" not in page and "batch&lt;1&gt; (culprit)" in page and "batch&lt;1&gt; cap" in page


def test_culprit_marked_only_when_flagged():
    simulation = make_simulation()
    page = report.render(simulation)
    assert "web-1 (culprit)" not in page
    assert "web-1 cap" not in page  # never capped: no cap line


def test_sample_shape_one_chart_per_policy_per_scenario():
    simulation = make_simulation()
    page = report.render(simulation)
    for name in POLICIES:
        assert page.count("<title>%s: CPU used and caps</title>" % name) == 2
        assert page.count("<title>%s: steal of the VMs</title>" % name) == 2
    assert page.count("<title>host CPU pressure (PSI some avg10, %)</title>") == 2
    assert page.count("<title>gated nodes</title>") == 2
    for chart in re.findall(r"<svg.*?</svg>", page):
        ElementTree.fromstring(chart)


def test_metric_rows_in_order_and_columns_in_policy_order():
    simulation = make_simulation()
    page = report.render(simulation)
    first_table = page[page.index("<table>"):page.index("</table>")]
    assert [first_table.index('"metric">%s<' % m) for m in METRICS] == sorted(first_table.index('"metric">%s<' % m) for m in METRICS)
    header = first_table[:first_table.index("</tr>")]
    assert [header.index(">%s<" % name) for name in POLICIES] == sorted(header.index(">%s<" % name) for name in POLICIES)


def test_null_metric_is_na():
    simulation = make_simulation()
    simulation["policies"]["naive"]["credit_error"] = None
    page = report.render(simulation)
    row = re.search(r'"metric">credit_error</th>(.*?)</tr>', page).group(1)
    assert re.findall(r"<td[^>]*>([^<]*)</td>", row)[:3] == ["2", "n/a", "2"]


def test_met_and_not_met_marked_on_our_policy():
    simulation = make_simulation()
    page = report.render(simulation)
    pooled, scenario = page.split("Scenario one", 1)
    assert 'class="met"' in pooled and 'class="not-met"' not in pooled
    assert re.search(r'"metric">culprit_precision</th>.*?<td class="not-met"[^>]*>1.5</td>', scenario)
    # only our column is judged
    row = re.search(r'"metric">dedicated_touched</th>(.*?)</tr>', pooled).group(1)
    assert row.count('class="met"') == 1


def test_verdict_sentences():
    simulation = make_simulation()
    page = report.render(simulation)
    assert "Versus none, overcommit wins: better on containment_p95_intervals; worse on nothing." in page
    assert "Versus naive, overcommit does not win: better on nothing; worse on throttled_cpu_seconds." in page


def test_without_verdict_and_with_null_figures():
    simulation = make_simulation()
    del simulation["verdict"]
    for scenario in simulation["scenarios"].values():
        del scenario["verdict"]
    simulation["policies"] = dict((name, figures(None)) for name in ("none", "naive"))
    page = report.render(simulation)
    assert "No verdict" in page and 'class="met"' not in page and 'class="not-met"' not in page
    assert page.count(">n/a</td>") == 2 * len(METRICS)


def test_page_of_a_real_simulation():
    """Two scenarios through the simulator, round-tripped through JSON as
    simulation.json holds them: one chart per policy per scenario."""
    request = run.check_request({"scenario": ["noisy_neighbour", "several_culprits"], "report_dir": "unused", "seed": 1})
    simulation = json.loads(json.dumps(run.simulate(request)[0], sort_keys=True))
    page = report.render(simulation)
    charts = re.findall(r"<svg.*?</svg>", page)
    for chart in charts:
        ElementTree.fromstring(chart)
    policies = list(simulation["policies"])
    assert len(charts) == 2 * (2 * len(policies) + 2)
    for name in policies:
        assert page.count("<title>%s: CPU used and caps</title>" % name) == 2
    assert "batch-1 (culprit)" in page
    assert len(page) < len(json.dumps(simulation))


def test_a_short_span_counts_minutes_and_seconds():
    chart = svg.line_chart("short", [0, 10, 20, 30], [{"label": "a", "values": [1, 2, 3, 4]}], "CPUs")
    assert ">0:10<" in chart and ">0:30<" in chart and "time (m:ss)" in chart
    long_chart = svg.line_chart("long", [0, 3600], [{"label": "a", "values": [1, 2]}], "CPUs")
    assert "time (h:mm)" in long_chart and ">1:00<" in long_chart
