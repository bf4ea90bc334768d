"""The lab's monitoring stack end to end: samples written to overcommit.prom are
read by node_exporter and scraped by Prometheus, which has the shipped rules
loaded; the shipped throttle-age alert goes pending on them, and a test rule
without `for` fires through Alertmanager to the webhook receiver, then resolves
once the samples are gone from the textfile."""

import json
import os
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pytest
import yaml

from lab_logs import fail_with_log

# In the libvirt group with the eda alert test: both write overcommit.prom
# and wait on the lab's one Alertmanager.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("libvirt")]

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SHIPPED_RULES = os.path.join(ROOT, "extensions", "prometheus", "overcommit-rules.yml")
WAIT = 60  # seconds; scrapes and evaluations run every 2 s in the lab

VM_LABELS = {"host": "lab", "vm": "oc-lab-test", "class": "shared"}
THROTTLED_LABELS = dict(VM_LABELS, reason="test")
TEST_ALERT = "OvercommitLabTestThrottled"

SERVERS = {  # log name: (lab.env key, health path)
    "node-exporter": ("OVERCOMMIT_NODE_EXPORTER_URL", "/metrics"),
    "prometheus": ("OVERCOMMIT_PROMETHEUS_URL", "/-/ready"),
    "alertmanager": ("OVERCOMMIT_ALERTMANAGER_URL", "/-/ready"),
    "webhook-receiver": ("OVERCOMMIT_WEBHOOK_URL", "/"),
}


class Stack:
    """The lab's monitoring servers as lab.env names them."""

    def __init__(self, lab):
        self.lab = lab
        self.state = os.path.join(lab["OVERCOMMIT_LAB_HOME"], "state", "monitoring")
        keys = [key for key, _path in SERVERS.values()] + ["OVERCOMMIT_TEXTFILE_DIR", "OVERCOMMIT_WEBHOOK_LOG"]
        missing = [key for key in keys if key not in lab]
        if missing:
            pytest.fail("lab.env has no %s: it was written by a lab without the monitoring group "
                        "(run tests/testbed/lab up monitoring)" % ", ".join(missing), pytrace=False)
        for server, (_key, path) in SERVERS.items():
            self.http(server, path)

    def fail(self, server, error):
        fail_with_log(server, error, self.lab["OVERCOMMIT_LAB_HOME"])

    def http(self, server, path, method="GET", data=None):
        request = urllib.request.Request(self.lab[SERVERS[server][0]] + path, data=data, method=method)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.read().decode()
        except (urllib.error.URLError, OSError) as exc:
            body = exc.read().decode(errors="replace") if isinstance(exc, urllib.error.HTTPError) else ""
            self.fail(server, "%s %s: %s %s" % (method, path, exc, body))

    def api(self, server, path, **query):
        if query:
            path += "?" + urllib.parse.urlencode(query)
        return json.loads(self.http(server, path))

    def wait_for(self, server, what, probe):
        """Calls probe() until it returns (True, seen); on timeout fails with
        what was seen last and the server's log."""
        deadline = time.monotonic() + WAIT
        while True:
            done, seen = probe()
            if done:
                return seen
            if time.monotonic() > deadline:
                self.fail(server, "%s not seen within %ss; last seen: %s" % (what, WAIT, json.dumps(seen, default=str)[:3000]))
            time.sleep(0.5)


def write_atomically(path, text):
    """A temp file in the same folder, renamed over the target: node_exporter
    never reads half a file (and ignores names not ending in .prom)."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.rename(tmp, path)


def labels_text(labels):
    return ",".join('%s="%s"' % item for item in labels.items())


def has_labels(metric, wanted):
    return all(metric.get(key) == value for key, value in wanted.items())


@pytest.fixture
def stack(lab):
    return Stack(lab)


@pytest.fixture
def textfile(stack):
    """overcommit.prom in the lab's textfile folder; whatever was there before
    is put back afterwards."""
    path = os.path.join(stack.lab["OVERCOMMIT_TEXTFILE_DIR"], "overcommit.prom")
    before = None
    if os.path.exists(path):
        with open(path) as handle:
            before = handle.read()
    yield path
    if before is None:
        if os.path.exists(path):
            os.remove(path)
    else:
        write_atomically(path, before)


@pytest.fixture
def test_rules(stack):
    """A rule file beside the lab's Prometheus config (matched by its
    rules-*.yml entry); removed and Prometheus reloaded afterwards."""
    path = os.path.join(stack.state, "rules-test.yml")
    yield path
    if os.path.exists(path):
        os.remove(path)
    stack.http("prometheus", "/-/reload", method="POST")


def test_a_throttle_sample_goes_through_prometheus_and_alertmanager_to_the_webhook(stack, textfile, test_rules):
    run = uuid.uuid4().hex[:12]
    started = int(time.time()) - 7200  # a throttle two hours old
    throttled = "overcommit_vm_throttled{%s} 1" % labels_text(THROTTLED_LABELS)
    start_time = "overcommit_vm_throttle_start_time_seconds{%s} %d" % (labels_text(VM_LABELS), started)
    header = ("# HELP overcommit_vm_throttled 1 if the VM has a CPU cap in force.\n"
              "# TYPE overcommit_vm_throttled gauge\n"
              "# HELP overcommit_vm_throttle_start_time_seconds When the cap was applied, Unix seconds.\n"
              "# TYPE overcommit_vm_throttle_start_time_seconds gauge\n")
    write_atomically(textfile, header + throttled + "\n" + start_time + "\n")

    # (a) node_exporter reads the file (labels come back sorted).
    def exported():
        text = stack.http("node-exporter", "/metrics")
        lines = [line for line in text.splitlines() if line.startswith("overcommit_vm_") or line.startswith("node_textfile_scrape_error")]
        found = [line for line in lines if line.startswith("overcommit_vm_throttled{") and 'vm="oc-lab-test"' in line]
        return bool(found) and all('%s="%s"' % item in found[0] for item in THROTTLED_LABELS.items()), lines
    stack.wait_for("node-exporter", "the textfile sample in /metrics", exported)

    # (b) Prometheus scrapes it.
    def queried():
        result = stack.api("prometheus", "/api/v1/query", query='overcommit_vm_throttled{vm="oc-lab-test"}')["data"]["result"]
        return any(has_labels(r["metric"], THROTTLED_LABELS) and r["value"][1] == "1" for r in result), result
    stack.wait_for("prometheus", "overcommit_vm_throttled from /api/v1/query", queried)

    # (c) The shipped rule group is loaded with all its alerts.
    with open(SHIPPED_RULES) as handle:
        shipped = yaml.safe_load(handle)
    shipped_alerts = {rule["alert"] for group in shipped["groups"] for rule in group["rules"] if "alert" in rule}
    assert shipped_alerts == {"OvercommitHostCPUPressure", "OvercommitVMStealHigh",
                              "OvercommitVMThrottledTooLong", "OvercommitTextfileStale"}
    groups = stack.api("prometheus", "/api/v1/rules")["data"]["groups"]
    overcommit = [g for g in groups if g["name"] == "overcommit" and os.path.basename(g["file"]) == "overcommit-rules.yml"]
    assert overcommit, "shipped group not loaded: %s" % [(g["name"], g["file"]) for g in groups]
    assert {r["name"] for r in overcommit[0]["rules"] if r["type"] == "alerting"} == shipped_alerts
    assert all(r["health"] == "ok" for r in overcommit[0]["rules"]), overcommit[0]["rules"]

    # (d) The two-hour-old throttle makes the shipped alert pending (its `for` is 5m).
    def too_long_pending():
        alerts = stack.api("prometheus", "/api/v1/alerts")["data"]["alerts"]
        mine = [a for a in alerts if a["labels"].get("alertname") == "OvercommitVMThrottledTooLong" and has_labels(a["labels"], VM_LABELS)]
        return any(a["state"] == "pending" for a in mine), alerts
    stack.wait_for("prometheus", "OvercommitVMThrottledTooLong pending", too_long_pending)

    # (e) A test rule without `for` fires at once and goes through Alertmanager
    # to the webhook receiver.
    offset = os.path.getsize(stack.lab["OVERCOMMIT_WEBHOOK_LOG"])  # posts of earlier runs are not ours
    rules = {"groups": [{"name": "overcommit-lab-test", "rules": [{
        "alert": TEST_ALERT,
        "expr": 'overcommit_vm_throttled{vm="oc-lab-test"} == 1',
        "for": "0s",
        "labels": {"severity": "info", "test_run": run},
        "annotations": {"summary": "lab test: VM {{ $labels.vm }} on {{ $labels.host }} is throttled"},
    }]}]}
    write_atomically(test_rules, yaml.safe_dump(rules))
    stack.http("prometheus", "/-/reload", method="POST")
    wanted = dict(THROTTLED_LABELS, alertname=TEST_ALERT, test_run=run)

    def firing_in_prometheus():
        alerts = stack.api("prometheus", "/api/v1/alerts")["data"]["alerts"]
        return any(has_labels(a["labels"], wanted) and a["state"] == "firing" for a in alerts), alerts
    stack.wait_for("prometheus", "%s firing" % TEST_ALERT, firing_in_prometheus)

    def in_alertmanager():
        alerts = stack.api("alertmanager", "/api/v2/alerts", filter='test_run="%s"' % run)
        return any(has_labels(a["labels"], wanted) and a["status"]["state"] == "active" for a in alerts), alerts
    stack.wait_for("alertmanager", "%s active in /api/v2/alerts" % TEST_ALERT, in_alertmanager)

    def posted(status):
        def probe():
            with open(stack.lab["OVERCOMMIT_WEBHOOK_LOG"], "rb") as handle:
                handle.seek(offset)
                lines = handle.read().decode().splitlines()
            for line in lines:
                body = json.loads(line)
                mine = [a for a in body.get("alerts", []) if has_labels(a["labels"], wanted) and a["status"] == status]
                if mine and body["version"] == "4" and body["status"] == status and '"status": "%s"' % status in line:
                    return True, body
            return False, lines
        return probe
    body = stack.wait_for("webhook-receiver", "a firing post for %s" % TEST_ALERT, posted("firing"))
    assert body["receiver"] == "lab-webhook" and body["groupLabels"] == {"alertname": TEST_ALERT}
    assert body["commonAnnotations"]["summary"] == "lab test: VM oc-lab-test on lab is throttled"

    # The samples leave the textfile: the alert resolves and the webhook hears so.
    write_atomically(textfile, header)
    stack.wait_for("webhook-receiver", "a resolved post for %s" % TEST_ALERT, posted("resolved"))

    def gone():
        alerts = stack.api("prometheus", "/api/v1/alerts")["data"]["alerts"]
        return not any(has_labels(a["labels"], VM_LABELS) for a in alerts), alerts
    stack.wait_for("prometheus", "no alert left on oc-lab-test", gone)
