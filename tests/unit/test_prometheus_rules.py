"""The shipped Prometheus rules: valid for promtool, passing their promtool unit
tests, and keeping to the collection's metric naming and alert conventions."""

import os
import re
import shutil
import subprocess

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RULES = "extensions/prometheus/overcommit-rules.yml"
RULE_TESTS = "extensions/prometheus/tests/overcommit-rules.test.yml"

# PromQL words that look like metric names but are not.
KEYWORDS = {"and", "or", "unless", "on", "ignoring", "by", "without", "group_left", "group_right",
            "bool", "offset", "inf", "nan"}


def promtool(*args):
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is not installed: scripts/bootstrap installs it with the Debian package "
                    "`prometheus` (or run `apt-get install prometheus`)")
    return subprocess.run([path, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def load_rules():
    with open(os.path.join(ROOT, RULES)) as handle:
        return [rule for group in yaml.safe_load(handle)["groups"] for rule in group["rules"]]


def metric_names(expr):
    """Metric names (and recorded series names) that a PromQL expression selects."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)  # string literals
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # range and subquery durations
    expr = re.sub(r"\b(?:on|ignoring|by|without|group_left|group_right)\s*\([^)]*\)", "", expr)  # label lists
    names = set()
    for match in re.finditer(r"(?<![\w.:])([a-zA-Z_:][\w:]*)(\s*\()?", expr):
        if match.group(2) is None and match.group(1).lower() not in KEYWORDS:
            names.add(match.group(1))
    return names


def test_promtool_check_rules():
    result = promtool("check", "rules", RULES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout, result.stdout + result.stderr


def test_promtool_unit_tests_pass():
    result = promtool("test", "rules", RULE_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout, result.stdout + result.stderr
    assert "FAILED" not in result.stdout + result.stderr


def test_metric_name_extraction():
    assert metric_names(
        'a_b:c:rate1m > 0.10 and on(host, vm) rate(x_total{file=~".*/y\\\\.prom"}[1m]) '
        "unless max by (host) (z == 1) or time() - w_seconds > 3600"
    ) == {"a_b:c:rate1m", "x_total", "z", "w_seconds"}


def test_every_metric_is_ours_or_node_exporters():
    rules = load_rules()
    recorded = {rule["record"] for rule in rules if "record" in rule}
    used = set()
    for rule in rules:
        names = metric_names(rule["expr"])
        assert names, "no metric found in %r" % rule["expr"]
        used |= names
    raw = used - recorded
    assert raw and [name for name in raw if not name.startswith(("overcommit_", "node_"))] == []
    # Recorded series follow level:metric:operations, with the metric ours or node_exporter's.
    for name in recorded:
        level, metric, operations = name.split(":")
        assert level and operations and metric.startswith(("overcommit_", "node_")), name


def test_every_alert_has_for_severity_summary_and_description():
    alerts = [rule for rule in load_rules() if "alert" in rule]
    assert {rule["alert"] for rule in alerts} == {
        "OvercommitHostCPUPressure", "OvercommitVMStealHigh", "OvercommitVMThrottledTooLong", "OvercommitTextfileStale",
    }
    for rule in alerts:
        assert rule.get("for"), rule["alert"]
        assert rule.get("labels", {}).get("severity"), rule["alert"]
        for annotation in ("summary", "description"):
            assert rule.get("annotations", {}).get(annotation), "%s: no %s" % (rule["alert"], annotation)


def test_every_alert_is_unit_tested_firing_and_not():
    with open(os.path.join(ROOT, RULE_TESTS)) as handle:
        cases = [case for test in yaml.safe_load(handle)["tests"] for case in test.get("alert_rule_test", [])]
    for alert in (rule["alert"] for rule in load_rules() if "alert" in rule):
        mine = [case for case in cases if case["alertname"] == alert]
        assert any(case.get("exp_alerts") for case in mine), "%s never expected to fire" % alert
        assert any(not case.get("exp_alerts") for case in mine), "%s never expected silent" % alert
