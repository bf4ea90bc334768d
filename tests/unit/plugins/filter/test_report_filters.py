"""The report playbook's filters and its page: svg_line_chart's input checks,
report_rows' decisions (throttled, since when, what it replaced, gated nodes,
two layers), and the shipped template rendered as ansible.builtin.template
renders it, with HTML-significant text from the data escaped."""

import os
from xml.etree import ElementTree

import jinja2
import pytest
from ansible.errors import AnsibleFilterError
from markupsafe import Markup

from ansible_collections.overcommit.control.plugins.filter.report import FilterModule
from ansible_collections.overcommit.control.plugins.module_utils.monitoring import report

FILTERS = FilterModule().filters()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
TEMPLATE = os.path.join(ROOT, "roles", "report", "templates", "report.html.j2")
NASTY = '<script>alert("x")</script> & </td>'
NOW = 1767610800.0  # 2026-01-05T11:00:00Z


def domain(name, used, steal, cap=None, record=None, vcpus=2, klass="shared", active=True):
    entry = {"name": name, "active": active, "vcpus": vcpus, "class": klass, "cap_cpus": cap, "throttle": record}
    if active:
        entry["usage"] = {"cpus_used": used, "steal_cpus": steal, "sample_seconds": 5.0}
    return entry


def throttled_record(reason=NASTY):
    return {"reason": reason, "time": "2026-01-05T08:55:00Z", "by": "ops<1>", "class": "shared", "scope": "domain",
            "cpus": 0.5, "previous": {"live": {"global_period": 100000, "global_quota": -1},
                                      "config": {"global_period": 0, "global_quota": 0}}}


def measured(rounds=3):
    vm_rounds, pressure_rounds = [], []
    for i in range(rounds):
        vm_rounds.append({"changed": False, "item": i, "domains": [
            domain("web-1", 0.5 + 0.01 * i, 0.2, cap=0.5, record=throttled_record()),
            domain("db-<2>", 1.5, 0.01 * i, klass="dedicated"),
            domain("batch-3", None, None, active=False)]})
        pressure_rounds.append({"item": i, "pressure": {"cpu": {"some": {"avg10": 10.0 + i, "avg60": 22.5}}},
                                "cpus": 8, "procs_running": 3 + i, "load": {"load1": 4.5}})
    return {"vm_rounds": vm_rounds, "pressure_rounds": pressure_rounds,
            "vm_window": [NOW - 40, NOW - 25], "pressure_window": [NOW - 25, NOW - 10]}


def nodes():
    return [{"name": "worker-1", "gate": {"reason": "pressure <high>", "time": "2026-01-05T10:30:00Z", "by": "loop",
                                          "taints": ["overcommit.control/gated"], "cordoned": False}},
            {"name": "worker-2", "gate": None}]


def page(**extra):
    return FILTERS["report_rows"]({"hv-1": measured(), "hv-2": None}, NOW, hypervisors=["hv-1", "hv-2"], **extra)


# --- svg_line_chart -------------------------------------------------------------

def test_the_chart_is_svg_marked_safe_with_labels_escaped():
    chart = FILTERS["svg_line_chart"]([{"label": NASTY, "values": [1, None, 2.5]}], "t<i>", [0, 5, 10], "CPUs")
    assert isinstance(chart, Markup) and chart.startswith("<svg")
    assert "<script>" not in chart and "&lt;script&gt;" in chart and "t&lt;i&gt;" in chart
    ElementTree.fromstring(chart)  # well-formed
    # Marked safe: an autoescaping template or a stray | e leaves it as it is.
    assert str(jinja2.Environment(autoescape=True).from_string("{{ c }}").render(c=chart)) == str(chart)


@pytest.mark.parametrize("args, kwargs, named", [
    (("nope", "t", [0], "y"), {}, "lines='nope'"),
    (([{"values": [1]}], "t", [0], "y"), {}, "lines[0].label"),
    (([{"label": "a", "values": [1, 2]}], "t", [0], "y"), {}, "lines[0].values=[1, 2] is not a list of 1 values"),
    (([{"label": "a", "values": ["1"]}], "t", [0], "y"), {}, "lines[0].values[0]='1'"),
    (([{"label": "a", "values": [True]}], "t", [0], "y"), {}, "lines[0].values[0]=True"),
    (([], "t", "0,1", "y"), {}, "times='0,1'"),
    (([], "t", [0, "1"], "y"), {}, "times[1]='1'"),
    (([], "t", [5, 1], "y"), {}, "times=[5, 1] is not in order"),
    (([], None, [0], "y"), {}, "title=None"),
    (([], "t", [0], {"a": 1}), {}, "y_label="),
    (([], "t", [0], "y"), {"width": 10}, "width=10"),
    (([], "t", [0], "y"), {"height": "240"}, "height='240'"),
    (([], "t", [0], "y"), {"y_max": -1}, "y_max=-1"),
])
def test_bad_chart_input_names_the_argument(args, kwargs, named):
    with pytest.raises(AnsibleFilterError) as error:
        FILTERS["svg_line_chart"](*args, **kwargs)
    assert str(error.value).startswith("svg_line_chart: ") and named in str(error.value)


# --- report_rows ------------------------------------------------------------------

def test_a_throttled_vm_says_why_by_whom_since_when_and_what_it_replaced():
    rows = dict((vm["name"], vm) for vm in page()["hosts"][0]["vms"])
    web = rows["web-1"]
    assert web["throttled"] and web["kind"] == "throttled" and web["reason"] == NASTY and web["by"] == "ops<1>"
    assert web["since"] == "2026-01-05T08:55:00Z" and web["for"] == "2 h 5 min"
    assert web["cap"] == "0.5" and web["cap_asked"] == "0.5 CPU" and web["replaced"] == "unlimited"
    assert web["used"] == "0.510" and web["used_max"] == "0.520" and web["steal"] == "0.200"
    assert not rows["db-<2>"]["throttled"] and rows["db-<2>"]["state"] == "not throttled"
    assert rows["batch-3"]["running"] == "shut off" and rows["batch-3"]["used"] == "n/a"
    assert [vm["name"] for vm in page()["hosts"][0]["vms"]] == ["batch-3", "db-<2>", "web-1"]


def test_a_cap_without_the_collections_record_is_not_called_throttled():
    state = report.throttle_state(domain("x", 1, 0, cap=1.0), NOW)
    assert not state["throttled"] and state["kind"] == "capped" and "without a record" in state["state"]


def test_what_a_throttle_replaced_per_target_when_they_differ():
    record = {"previous": {"live": {"global_period": 100000, "global_quota": 200000, "cpu_shares": 512},
                           "config": {"global_period": 0, "global_quota": 0}}}
    assert report.replaced_text(record, 4) == "live: 2 CPU, shares 512; config: unlimited"
    assert report.replaced_text({}, 4) == "n/a"


def test_series_and_charts_of_a_host():
    host = page()["hosts"][0]
    pressure, used, steal = host["charts"]
    assert pressure["times"] == [NOW - 25, NOW - 17.5, NOW - 10]
    assert used["times"] == [NOW - 35, NOW - 30, NOW - 25]
    assert [line["label"] for line in used["lines"]] == ["db-<2>", "web-1", "web-1 cap"]
    cap = used["lines"][2]
    assert cap["dashed"] and cap["step"] and cap["values"] == [0.5, 0.5, 0.5]
    assert cap["colour"] == used["lines"][1]["colour"]  # a VM's cap is drawn in its colour
    assert pressure["lines"][0]["values"] == [10.0, 11.0, 12.0]
    assert pressure["lines"][2]["values"] == [report.GATE_PRESSURE] * 3
    facts = dict((fact["name"], fact["value"]) for fact in host["facts"])
    assert facts["VMs throttled"] == "1 of 3" and facts["PSI cpu some avg10, highest"] == "12.0 %"
    for chart in host["charts"]:
        FILTERS["svg_line_chart"](chart["lines"], chart["title"], chart["times"], chart["y_label"])


def test_a_host_not_measured_and_a_failed_round_are_shown():
    hosts = page()["hosts"]
    assert hosts[1]["name"] == "hv-2" and not hosts[1]["measured"] and "not measured" in hosts[1]["errors"][0]
    data = measured(2)
    data["vm_rounds"][1] = {"failed": True, "msg": "libvirt at qemu:///system: no connection"}
    host = report.page({"hv-1": data}, NOW)["hosts"][0]
    assert host["errors"] == ["VM round 2: libvirt at qemu:///system: no connection"]
    web = [line for line in host["charts"][1]["lines"] if line["label"] == "web-1"][0]
    assert web["values"] == [0.5, None]


def test_gated_nodes_and_two_layer_rows():
    shaped = page(nodes=nodes(), two_layer={"nodes": [
        {"node": "k-1", "host": "esx-1", "vm": "k-1-vm",
         "kubernetes": {"cpu": {"limits_ratio": 2.5}, "memory": {"limits_ratio": 1.2}},
         "esxi": {"vcpu_per_core": 3.0, "memory_ratio": 1.5, "cpu_ready_pct": 7.5, "balloon_mb": 0, "swapped_mb": None},
         "compound": {"cpu": 7.5, "memory": 1.8}, "gate": {"action": "gate", "held": False}},
        {"node": "k-0", "vm": None, "reason": "no VM with its system UUID"}], "unmatched": ["k-0"]})
    assert shaped["kubernetes"] and shaped["nodes_total"] == 2
    assert shaped["gated"] == [{"node": "worker-1", "reason": "pressure <high>", "by": "loop",
                                "since": "2026-01-05T10:30:00Z", "for": "30 min",
                                "taints": "overcommit.control/gated", "cordoned": "no"}]
    k0, k1 = shaped["two_layer"]
    assert k0["gate"] == "no ESXi VM found: no VM with its system UUID"
    shown = (k1["k8s_cpu"], k1["esxi_cpu"], k1["compound_cpu"], k1["ready"], k1["swap"])
    assert shown == ("2.5", "3", "7.5", "7.5 %", "n/a")
    assert k1["gate"] == "gate (host over its watermark)"
    assert not page()["kubernetes"] and not page()["vsphere"]


@pytest.mark.parametrize("args, named", [
    (("not a dict", NOW), "hosts='not a dict'"),
    (({}, "now"), "generated='now'"),
    (({"hv": {"vm_rounds": "x"}}, NOW), "hosts.hv.vm_rounds='x'"),
    (({"hv": {"vm_rounds": [{"domains": [{"vcpus": 1}]}]}}, NOW), "vm_rounds[0].domains[0]"),
    (({"hv": {"vm_rounds": [{"domains": []}], "vm_window": [5, 1]}}, NOW), "window=[5, 1]"),
])
def test_bad_report_input_names_the_argument(args, named):
    with pytest.raises(AnsibleFilterError) as error:
        FILTERS["report_rows"](*args)
    assert str(error.value).startswith("report_rows: ") and named in str(error.value)


def test_durations():
    assert [report.duration_text(s) for s in (None, -5, 30, 60, 3599, 3600, 7500, 86400, 90000)] == [
        "n/a", "under a minute", "under a minute", "1 min", "59 min", "1 h", "2 h 5 min", "1 d", "1 d 1 h"]


# --- the page -----------------------------------------------------------------------

def render(report_page):
    """The shipped template as ansible.builtin.template renders it: ansible-core
    forces autoescape off (ansible/_internal/_templating/_jinja_bits.py), so
    every value from the data must pass | e in the template."""
    environment = jinja2.Environment(autoescape=False, trim_blocks=True, undefined=jinja2.StrictUndefined)
    environment.filters["overcommit.control.svg_line_chart"] = FILTERS["svg_line_chart"]
    with open(TEMPLATE) as handle:
        return environment.from_string(handle.read()).render(report_page=report_page)


def test_html_significant_text_from_the_data_is_escaped_on_the_page():
    html = render(page(nodes=nodes(), two_layer={"nodes": [], "unmatched": []}))
    assert html.startswith("<!DOCTYPE html>\n<html lang=\"en\">")
    assert "<script" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;/td&gt;" in html
    assert "db-&lt;2&gt;" in html and "ops&lt;1&gt;" in html and "pressure &lt;high&gt;" in html
    assert html.count("<svg") == 3 and html.count("</svg>") == 3
    # One row per VM in the VM table, and the gated node's row.
    assert html.count('<tr class="throttled">') == 1 and html.count('<tr class="open">') == 2
    assert "<td>worker-1</td>" in html and "hv-2" in html and "not measured" in html


def test_an_autoescaping_environment_would_not_double_escape():
    environment = jinja2.Environment(autoescape=True, trim_blocks=True)
    environment.filters["overcommit.control.svg_line_chart"] = FILTERS["svg_line_chart"]
    with open(TEMPLATE) as handle:
        html = environment.from_string(handle.read()).render(report_page=page())
    assert html.count("<svg") == 3 and "&amp;lt;" not in html and "&lt;script&gt;" in html


def test_a_burstable_vms_credits_are_shown_against_its_bank():
    from ansible_collections.overcommit.control.plugins.module_utils.monitoring.report import credits_text
    assert credits_text({"class": "burstable", "vcpus": 2, "baseline_cpus": 0.5, "policy": {"credits": 12.25}}) == \
        "12.2 of 720 vCPU-min"
    # Without a baseline of its own: the class's floor share of its vCPUs (0.25 of 2 vCPUs = 0.5 CPU).
    assert credits_text({"class": "burstable", "vcpus": 2, "policy": {"credits": 1}}) == "1.0 of 720 vCPU-min"
    assert credits_text({"class": "burstable", "vcpus": 2, "policy": {}}) == "none kept yet"
    assert credits_text({"class": "shared", "vcpus": 2, "policy": {"credits": 3}}) == "n/a"
