"""Stage 3 on the lab's real libvirtd: the closed loop run by the shipped
rulebooks under ansible-rulebook, on one noisy neighbour: Prometheus ->
Alertmanager -> the alert rulebook contains it, the polling rulebook releases
it and restores it exactly once it stops, and the alerts' end reaches the
alert rulebook as events. (The cycle itself, run by ansible-playbook
directly, is test_cycle_safety.py's: kill switch, dry run, two cycles at
once.) The loop brakes the culprit weight first (its CPU weight demoted),
then with a quota only while the victims still wait.

The noisy neighbour is real contention: oc-lab-busy-1, a one-vCPU shared
guest that wants far more than its share of the two cores, starts spinning beside
two burstable guests that want their CPU (oc-lab-busy-2 and -3), three
spinning vCPUs on the machine's two cores. Steal is what the kernel
measures (domain stats' vcpu.N.delay), judged against the policy's own
target (victim_steal_ratio) to set the scene, and the containment judged
against the victims' own contended steal, the median of several readings
each. The culprit "stops" by being paused (virsh suspend), so it stays a
running domain that wants no CPU and the loop can release and restore it. The policy parameters are shortened (calm and
cooldown in seconds, bigger relax steps, a lower floor so that a cap can
free enough for two victims on two cores) as an operator may set them.

Everything on the alert path is real: the metrics_textfile role writing the
domains' measured usage and steal every few seconds into node_exporter's
textfile folder, node_exporter, Prometheus evaluating the shipped rules
(extensions/prometheus/overcommit-rules.yml: OvercommitVMStealHigh needs its
condition for 1 minute), Alertmanager posting to the shipped rulebook
overcommit.control.closed_loop_alerts, and the cycle (playbooks/closed_loop.yml)
it runs, which measures again and throttles. At the end the alerts end (the
steal alert's series leave node_exporter with the textfile, the pressure
falls with the guests off): Alertmanager posts them resolved, the rulebook
takes it as an event (printed with --print-events) and runs a cycle for it
too, as it documents.

The textfile role runs on the inventory's hypervisor host, lab-hypervisor,
so its metrics carry host="lab-hypervisor", the inventory name a cycle needs
(on localhost they would say host="localhost"). The host pressure alert has
no host label: the alertmanager source falls back to node_exporter's
instance, 127.0.0.1, which host_names maps to the same host.

The victims' steal is measured from domain stats with the rulebooks and the
textfile writer stopped: in the lab they run their ansible-playbook on the
hypervisor's two cores (in production they run elsewhere, or are a small
share of a big host) and would be counted as contention."""


import glob
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

import libvirt
import pytest
import yaml

from libvirt_reads import cputune_info
from run_module import INVENTORY, ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.contention]

BIN = os.path.dirname(sys.executable)
HOST = "lab-hypervisor"
CULPRIT = "oc-lab-busy-1"
VICTIMS = ("oc-lab-busy-2", "oc-lab-busy-3")
# The test starts its guests a moment before the cycles: the policy's first
# minute of grace (culprit_min_age_seconds) is for booting guests, and the
# lab's boot sectors are past their firmware in seconds.
POLICY = {"relax_calm_seconds": 5, "cooldown_seconds": 5, "relax_step_share": 0.5, "floor_fraction": 0.05,
          "pressure_relax": 100.0, "culprit_min_age_seconds": 0}
TARGET = 0.10  # the policy's victim_steal_ratio
# Containment must take at least this share of the victims' own contended
# steal away (the median of READINGS readings before and after).
RELIEF = 0.5
READINGS = 3
LIVE = libvirt.VIR_DOMAIN_AFFECT_LIVE
CONFIG = libvirt.VIR_DOMAIN_AFFECT_CONFIG


def environment(lab):
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1",
               K8S_AUTH_KUBECONFIG=lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])
    return env


def steal_ratios(conn, domains, seconds):
    """steal / (used + steal) of each domain over the same `seconds`, from
    domain stats (one call for all domains at each end)."""
    def sample():
        stats = conn.domainListGetStats(list(domains.values()),
                                        libvirt.VIR_DOMAIN_STATS_VCPU | libvirt.VIR_DOMAIN_STATS_CPU_TOTAL)
        out = {}
        for domain, values in stats:
            delay = sum(v for k, v in values.items() if k.startswith("vcpu.") and k.endswith(".delay"))
            out[domain.name()] = (values["cpu.time"], delay)
        return out
    before = sample()
    time.sleep(seconds)
    after = sample()
    ratios = {}
    for name in domains:
        used, delay = (after[name][i] - before[name][i] for i in (0, 1))
        ratios[name] = delay / float(used + delay) if used + delay else 0.0
    return ratios


def median_steal(conn, domains, readings=READINGS, seconds=2.0):
    """Each domain's median steal ratio over `readings` windows of `seconds`:
    one window spoiled by another process on the two cores does not decide."""
    taken = [steal_ratios(conn, domains, seconds) for _reading in range(readings)]
    return dict((name, statistics.median(reading[name] for reading in taken)) for name in domains)


def contended_steal(conn, guests):
    """The victims' own median steal beside the spinning culprit, before any
    loop runs (the culprit is off again afterwards); each must be a victim by
    the policy's target, or the scene is not set."""
    culprit = guests[CULPRIT]
    culprit.create()
    time.sleep(2)
    contended = median_steal(conn, dict((name, guests[name]) for name in VICTIMS))
    culprit.destroy()
    assert all(ratio >= TARGET for ratio in contended.values()), contended
    return contended


def assert_relieved(conn, guests, contended, context=None):
    """The victims' median steal now is at most (1 - RELIEF) of their own
    contended steal."""
    now = median_steal(conn, dict((name, guests[name]) for name in VICTIMS))
    assert all(now[name] <= (1 - RELIEF) * contended[name] for name in VICTIMS), (contended, now, context)
    return now


def tuning(domain):
    return domain.schedulerParametersFlags(LIVE), domain.schedulerParametersFlags(CONFIG)


def record_of(lab, name):
    """libvirt_cputune_info's entry for `name`, read in-process: the tests
    poll it while the guests compete for the cores."""
    return cputune_info(lab["OVERCOMMIT_LIBVIRT_URI"], name)


def cycles(cycle_dir):
    found = []
    for path in sorted(glob.glob(os.path.join(str(cycle_dir), "cycle-*.json"))):
        with open(path) as handle:
            found.append(json.load(handle))
    return found


def wait_for(what, check, seconds, log=None):
    deadline = time.time() + seconds
    while time.time() < deadline:
        result = check()
        if result:
            return result
        time.sleep(2)
    tail = open(log).read()[-5000:] if log else ""
    pytest.fail("%s did not happen within %d s\n%s" % (what, seconds, tail), pytrace=False)


def run_rulebook(name, tmp_path, lab, variables, log_name="rulebook.log"):
    """The shipped rulebook `name` under ansible-rulebook, printing each event
    it takes into `log_name` beside its own output."""
    (tmp_path / "vars.yml").write_text(yaml.safe_dump(variables))
    log = str(tmp_path / log_name)
    command = [os.path.join(BIN, "ansible-rulebook"), "-i", INVENTORY, "-r", "overcommit.control." + name,
               "-e", str(tmp_path / "vars.yml"), "--print-events"]
    with open(log, "w") as out:
        process = subprocess.Popen(command, env=environment(lab), stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    return process, log


def stop(process):
    """The rulebook and the cycle it may be running, all of its processes."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    except ProcessLookupError:
        pass
    time.sleep(2)


TEXTFILE = "overcommit-closed-loop.prom"  # its own file: the eda test writes overcommit.prom
ALERTS = ("OvercommitVMStealHigh", "OvercommitHostCPUPressure")


class TextfileWriter(threading.Thread):
    """The metrics_textfile role on lab-hypervisor, as users run it, again and
    again until stopped: the alerts' `for` needs fresh values all along."""

    def __init__(self, tmp_path, lab):
        super(TextfileWriter, self).__init__(name="textfile writer", daemon=True)
        self.play = str(tmp_path / "textfile.yml")
        with open(self.play, "w") as handle:
            yaml.safe_dump([{"hosts": HOST, "gather_facts": False, "roles": [
                {"role": "overcommit.control.metrics_textfile",
                 "vars": {"metrics_textfile_dir": lab["OVERCOMMIT_TEXTFILE_DIR"], "metrics_textfile_file": TEXTFILE,
                          "metrics_textfile_sample_seconds": 2}}]}], handle)
        self.env = environment(lab)
        self.halt = threading.Event()
        self.writes = 0
        self.failure = None
        self.process = None

    def run(self):
        while not self.halt.is_set():
            self.process = subprocess.Popen([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, self.play],
                                            env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                            text=True, start_new_session=True)
            try:
                output = self.process.communicate(timeout=300)[0]
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                output = self.process.communicate()[0] + "\n(killed after 300 s)"
                if not self.halt.is_set():
                    self.failure = output[-3000:]
                return
            if self.process.returncode == 0:
                self.writes += 1
            elif not self.halt.is_set():
                self.failure = output[-3000:]
                return
            self.halt.wait(1)

    def stop(self):
        """No more writes, the one under way ended with all of its processes."""
        self.halt.set()
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if self.is_alive():
            self.join(60)


def running(process, log):
    if process.poll() is not None:
        pytest.fail("the rulebook exited (%s):\n%s" % (process.returncode, open(log).read()[-5000:]), pytrace=False)


def listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


def notified(webhook_log, offset, since, status="firing"):
    """Alerts about lab-hypervisor in `status` that Alertmanager posted (to the
    lab's webhook receiver and, by the same route, to the rulebook) after
    `offset` bytes of its log and which started after `since`."""
    found = []
    with open(webhook_log) as handle:
        handle.seek(offset)
        for line in handle:
            try:
                notification = json.loads(line)
            except ValueError:
                continue
            for alert in notification.get("alerts", []):
                labels = alert.get("labels", {})
                host = labels.get("host") or labels.get("instance", "").rsplit(":", 1)[0]
                if (labels.get("alertname") in ALERTS and alert.get("status") == status
                        and host in ("lab-hypervisor", "127.0.0.1") and alert.get("startsAt", "") >= since):
                    found.append((alert["startsAt"], labels["alertname"], labels.get("vm")))
    return sorted(found)


def test_the_alert_rulebook_contains_a_noisy_neighbour_and_the_polling_rulebook_releases_it_exactly(
        tmp_path, lab, libvirt_conn, guests):
    for key in ("OVERCOMMIT_RULEBOOK_PORT", "OVERCOMMIT_TEXTFILE_DIR", "OVERCOMMIT_NODE_EXPORTER_URL",
                "OVERCOMMIT_WEBHOOK_LOG"):
        if key not in lab:
            pytest.fail("lab.env has no %s: run tests/testbed/lab up monitoring" % key, pytrace=False)
    culprit = guests[CULPRIT]
    config_before = culprit.schedulerParametersFlags(CONFIG)
    port = int(lab["OVERCOMMIT_RULEBOOK_PORT"])
    if listening(port):
        pytest.fail("127.0.0.1:%d, where Alertmanager posts to a rulebook, is taken: another lab test runs a "
                    "rulebook" % port, pytrace=False)
    textfile = os.path.join(lab["OVERCOMMIT_TEXTFILE_DIR"], TEXTFILE)
    webhook_log = lab["OVERCOMMIT_WEBHOOK_LOG"]
    offset = os.path.getsize(webhook_log) if os.path.exists(webhook_log) else 0
    # The victims' own steal beside the spinning culprit, before anything else runs.
    contended = contended_steal(libvirt_conn, guests)

    cycle_dir = tmp_path / "cycles"
    cycle_dir.mkdir()
    alert_variables = {"alert_port": port, "samples": 2, "interval": 2, "policy": POLICY,
                       "cycle_dir": str(cycle_dir), "host_names": {"lab-hypervisor": HOST, "127.0.0.1": HOST}}
    process, log = run_rulebook("closed_loop_alerts", tmp_path, lab, alert_variables)
    writer = TextfileWriter(tmp_path, lab)
    try:
        wait_for("the rulebook listening on 127.0.0.1:%d" % port,
                 lambda: process.poll() is not None or listening(port), 60, log)
        running(process, log)
        # Alertmanager retries what it could not post to an earlier rulebook (an earlier run's
        # resolved alerts) every few seconds: let that land, and the cycle it runs end, while
        # the culprit is off, so that the cycle that throttles it is one this run's alert ran.
        time.sleep(15)
        wait_for("the end of the cycles an earlier run's alerts started", lambda: open(log).read().count(
            "PLAY [Check the cycle's variables") == len(cycles(cycle_dir)), 60, log)
        earlier = len(cycles(cycle_dir))

        culprit.create()
        live_before = culprit.schedulerParametersFlags(LIVE)
        since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 1))
        writer.start()
        key = "%s/%s" % (HOST, CULPRIT)

        def throttled():
            running(process, log)
            assert writer.failure is None, "the metrics_textfile role failed:\n%s" % writer.failure
            return [c for c in cycles(cycle_dir) if key in c["outcome"]["applied"]]
        throttling = wait_for("an alert about %s reaching the rulebook and a cycle that throttled %s" % (HOST, CULPRIT),
                              throttled, 180, log)[0]
        stop(process)
        writer.stop()
        # What ran it: a shipped alert about this host that fired after the culprit started.
        alerts = notified(webhook_log, offset, since)
        assert alerts, "Alertmanager posted no firing %s about %s since %s" % (" or ".join(ALERTS), HOST, since)
        assert alerts[0][0][:19] <= throttling["time"][:19], (alerts, throttling["time"])
        assert writer.writes >= 2, writer.writes
        # The culprit alone: no cycle acted on another VM, and only it has a throttle record,
        # set by that cycle.
        acted = [a for c in cycles(cycle_dir)[earlier:] for a in c["actions"] if a.get("vm")]
        assert set(a["vm"] for a in acted) == {CULPRIT}, acted
        # Weight first: the culprit's CPU weight is demoted before any quota.
        assert acted[0]["action"] == "weight" and acted[0]["shares"] < live_before["cpu_shares"], acted
        assert culprit.schedulerParametersFlags(LIVE)["cpu_shares"] == acted[0]["shares"]
        record = record_of(lab, CULPRIT)["throttle"]
        assert record["reason"].startswith("contain:") and record.get("plan") == throttling["cycle"], (
            record, throttling["cycle"])
        for name in VICTIMS:
            assert record_of(lab, name).get("throttle") is None, name
        # The victims got their CPU back (the rulebook and the writer stopped: see above).
        assert_relieved(libvirt_conn, guests, contended, throttling["lines"])

        # The polling rulebook takes over. The culprit stops wanting CPU: no culprit in 2 of
        # its last cycles, it is released (restored exactly) without waiting out the calm
        # period or relaxing in steps.
        polling_variables = {"cycle_host": HOST, "pressure_interval": 2, "samples": 2, "interval": 2,
                             "policy": POLICY, "cycle_dir": str(cycle_dir)}
        process, log = run_rulebook("closed_loop_polling", tmp_path, lab, polling_variables, "polling.log")
        culprit.suspend()
        caps = []

        def restored():
            info = record_of(lab, CULPRIT)
            if info.get("cap_cpus") is not None and (not caps or caps[-1] != info["cap_cpus"]):
                caps.append(info["cap_cpus"])
            return info.get("throttle") is None and info.get("cap_cpus") is None
        wait_for("the culprit released and restored", restored, 300, log)
        # Any cap the quota rung added was only ever raised on the way out.
        assert caps == sorted(caps), caps
        assert tuning(culprit) == (live_before, config_before)
        # The cycle's summary is written after its records: wait for the restoring one.
        wait_for("the restoring cycle's summary", lambda: [
            c for c in cycles(cycle_dir) if any("restore exactly" in line for line in c["lines"])], 60, log)
        lines = [line for c in cycles(cycle_dir) for line in c["lines"]]
        assert any("restore exactly" in line and line.endswith("(release)") for line in lines), lines
        stop(process)

        # The alerts end: the steal alert's series leave node_exporter with the textfile, the host's
        # pressure falls with the guests off (either alert may be the one that fired first: the
        # pressure alert can have been pending since an earlier test loaded the host). Alertmanager
        # posts them resolved, and the shipped alert rulebook (started again) takes a resolved alert
        # and runs a cycle for it too (it may be the time to relax).
        done = len(cycles(cycle_dir))
        process, log = run_rulebook("closed_loop_alerts", tmp_path, lab, alert_variables, "rulebook-resolved.log")
        wait_for("the rulebook listening again", lambda: process.poll() is not None or listening(port), 60, log)
        running(process, log)
        os.unlink(textfile)
        for domain in guests.values():
            if domain.isActive():
                domain.destroy()
        ended = wait_for("Alertmanager posting one of %s resolved" % (alerts,), lambda: set(alerts) & set(
            notified(webhook_log, offset, since, status="resolved")), 150, log)

        def resolved_and_cycled():
            running(process, log)
            taken = open(log).read()  # the events ansible-rulebook printed, and the cycle's output
            started = any("'starts_at': '%s'" % alert[0] in taken for alert in ended)
            return ("'status': 'resolved'" in taken and started
                    and "PLAY RECAP" in taken and len(cycles(cycle_dir)) > done)
        wait_for("the resolved alert in the rulebook and the cycle it ran", resolved_and_cycled, 90, log)
    finally:
        stop(process)
        writer.stop()
        if os.path.exists(textfile):
            os.unlink(textfile)
