"""playbooks/report.yml run by ansible-playbook on the lab, as operators run
it, and its page opened in a real headless browser (Debian's chromium): it
renders with no console error, the charts and the VM table are in the DOM,
every libvirt domain of the lab is in the table with its state, and a
screenshot is kept as a test artefact (tests/output/report/report.png).
Reads only: no guest is started, stopped or throttled."""

import os
import re

import pytest
from kubernetes import client

from browser import chromium, parse
from run_module import ROOT, run_playbook

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("libvirt")]

ARTEFACTS = os.path.join(ROOT, "tests", "output", "report")
RUNNING = ("oc-lab-idle-1", "oc-lab-idle-4", "oc-lab-dedicated-2")
GATE_RECORD = "overcommit.control/gate"


def make_report(tmp_path, env=None, **extra):
    report_dir = tmp_path / "report"
    extra_vars = dict({"report_dir": str(report_dir), "report_samples": 3, "report_interval": 1}, **extra)
    completed = run_playbook("report.yml", extra_vars, env=env)
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    path = report_dir / "report.html"
    assert path.is_file() and oct(path.stat().st_mode & 0o777) == "0o644"
    return path


def test_the_console_check_sees_a_console_error(tmp_path):
    """The check below is not vacuous: a page that logs an error is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>x</title></head>'
                   '<body><script>console.error("control error"); notDefined();</script></body></html>')
    _dom, console = chromium(bad.as_uri(), tmp_path, "--dump-dom")
    assert any("control error" in line for line in console) and any("Uncaught" in line for line in console)


def test_the_report_renders_in_a_browser_with_charts_and_every_vm(tmp_path, libvirt_conn):
    # Other tests may define or undefine domains meanwhile: those there before and after must be in it.
    before = set(domain.name() for domain in libvirt_conn.listAllDomains())
    path = make_report(tmp_path)
    there = before & set(domain.name() for domain in libvirt_conn.listAllDomains())
    html = path.read_text()
    assert html.startswith("<!DOCTYPE html>\n<html lang=\"en\">")
    source = parse(html)
    assert not source.problems and not source.stack, (source.problems, source.stack)
    # Self-contained: no script, no stylesheet or font to fetch, no address but SVG's namespace.
    assert not {"script", "link", "img", "iframe"} & set(source.tags)
    assert set(re.findall(r"https?://[^\"'\s<>]+", html)) <= {"http://www.w3.org/2000/svg"}

    os.makedirs(ARTEFACTS, exist_ok=True)
    shot = os.path.join(ARTEFACTS, "report.png")
    if os.path.exists(shot):
        os.unlink(shot)
    _out, console = chromium(path.as_uri(), tmp_path, "--screenshot=%s" % shot)
    assert not console, console
    with open(shot, "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(shot) > 20000  # a page with charts and tables, not a blank one

    dom, console = chromium(path.as_uri(), tmp_path, "--dump-dom")
    assert not console, console
    page = parse(dom)
    assert page.tags.count("svg") == 3 and page.tags.count("path") >= 3
    assert "h1" in page.tags and "CPU overcommit report" in dom and "Hypervisor lab-hypervisor" in dom

    rows = page.tables["vms"]
    header, body = rows[0], rows[1:]
    assert header[:4] == ["VM", "class", "vCPUs", "state"] and "reason" in header and "since" in header
    by_name = dict((row[0], dict(zip(header, row))) for row in body)
    # Every domain of the host, running or not, has its row.
    assert there <= set(by_name), (sorted(there), sorted(by_name))
    for name in RUNNING:
        row = by_name[name]
        assert row["state"] == "running" and row["vCPUs"] == str(libvirt_conn.lookupByName(name).vcpusFlags(0))
        assert re.match(r"^\d+\.\d{3} \(\d+\.\d{3}\)$", row["CPUs used (avg, max)"]), row
        assert row["throttled"] in ("not throttled", "throttled") or row["throttled"].startswith("capped")
    assert by_name["oc-lab-dedicated-2"]["class"] == "dedicated"


# The lab's own nodes: those no test makes for itself (tests on other workers create and delete theirs
# while the report runs, so the report is scoped with report_node_selector, which this also exercises).
LAB_NODES = "!overcommit.test/run,!overcommit.test/state-machine,!overcommit.test/esxi-guard"


def nodes_and_gated(core):
    """Names of the lab's nodes, and of those carrying node_admission's gate record."""
    nodes = core.list_node(label_selector=LAB_NODES).items
    return (set(node.metadata.name for node in nodes),
            set(node.metadata.name for node in nodes if GATE_RECORD in (node.metadata.annotations or {})))


def test_kubernetes_and_vsphere_sections(tmp_path, lab, kube_admin):
    env = dict(K8S_AUTH_KUBECONFIG=lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])
    for key in ("VMWARE_HOST", "VMWARE_PORT", "VMWARE_USER", "VMWARE_PASSWORD", "VMWARE_VALIDATE_CERTS"):
        env[key] = lab[key]
    core = client.CoreV1Api(kube_admin)
    before, gated_before = nodes_and_gated(core)
    path = make_report(tmp_path, env=env, report_samples=1, report_interval=0.5, report_kubernetes=True,
                       report_node_selector=LAB_NODES, report_vsphere=True, report_vsphere_samples=2)
    html = path.read_text()
    page = parse(html)
    assert not page.problems and "Gated Kubernetes nodes" in html and "Two layers" in html
    after, gated_after = nodes_and_gated(core)
    # Every lab node is in the two-layer table, and no other; tests on lab-node-a may gate it meanwhile.
    two_layer = set(row[0] for row in page.tables.get("two-layer", [])[1:])
    assert before == after == two_layer and "oc-lab-node" in two_layer
    gated = set(row[0] for row in page.tables.get("gated", [])[1:])
    assert gated_before & gated_after <= gated <= gated_before | gated_after


def test_without_report_dir_it_says_what_to_give_before_measuring(tmp_path):
    completed = run_playbook("report.yml", {"report_samples": 1, "report_interval": 1})
    assert completed.returncode != 0
    assert "report.yml needs report_dir (a non-empty text); pass it with -e" in completed.stdout
    assert "round 1 of 1" not in completed.stdout  # nothing was measured


def test_bad_sampling_is_refused_before_measuring(tmp_path):
    completed = run_playbook("report.yml", {"report_dir": str(tmp_path), "report_samples": 0})
    assert completed.returncode != 0
    assert "report_samples=0 is out of range: allowed a whole number, at least 1" in completed.stdout
    assert not os.listdir(str(tmp_path))
