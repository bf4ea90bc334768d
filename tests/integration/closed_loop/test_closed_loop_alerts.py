"""Stage 3 through the collection's monitoring path on the lab: the same
noisy neighbour as the polling test (test_closed_loop.py), contained by the
shipped alert rulebook instead.

Everything on the path is real: the three busy guests on the lab's libvirtd
(oc-lab-busy-1 the culprit, -2 and -3 the victims: three spinning vCPUs on
two cores), the metrics_textfile role writing the domains' measured usage
and steal every few seconds into node_exporter's textfile folder,
node_exporter, Prometheus evaluating the shipped rules
(extensions/prometheus/overcommit-rules.yml: OvercommitVMStealHigh needs its
condition for 1 minute), Alertmanager posting to the shipped rulebook
overcommit.control.closed_loop_alerts run by ansible-rulebook, and the cycle
(playbooks/closed_loop.yml) it runs, which measures again and throttles.
Then the alerts end (the steal alert's series leave node_exporter with the
textfile, the pressure falls with the guests off): Alertmanager posts them
resolved, the rulebook takes it as an event (printed
with --print-events) and runs a cycle for it too, as it documents.

The role runs on the inventory's hypervisor host, lab-hypervisor, so its
metrics carry host="lab-hypervisor", the inventory name a cycle needs (on
localhost they would say host="localhost"). The host pressure alert has no
host label: the alertmanager source falls back to node_exporter's instance,
127.0.0.1, which host_names maps to the same host.

The victims' steal is measured from domain stats with the rulebook and the
textfile writer stopped: in the lab both run their ansible-playbook on the
hypervisor's two cores (in production they run elsewhere, or are a small
share of a big host) and would be counted as contention."""

import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest
import yaml

from run_module import INVENTORY
from test_closed_loop import (BIN, CULPRIT, HOST, POLICY, VICTIMS, assert_relieved, contended_steal, cycles,
                              environment, record_of, run_rulebook, stop, wait_for)

pytestmark = [pytest.mark.e2e, pytest.mark.contention]

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


def test_the_alert_rulebook_contains_a_noisy_neighbour_through_prometheus_and_alertmanager(
        tmp_path, lab, libvirt_conn, guests):
    for key in ("OVERCOMMIT_RULEBOOK_PORT", "OVERCOMMIT_TEXTFILE_DIR", "OVERCOMMIT_NODE_EXPORTER_URL",
                "OVERCOMMIT_WEBHOOK_LOG"):
        if key not in lab:
            pytest.fail("lab.env has no %s: run tests/testbed/lab up monitoring" % key, pytrace=False)
    culprit = guests[CULPRIT]
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
    variables = {"alert_port": port, "samples": 2, "interval": 2, "policy": POLICY, "cycle_dir": str(cycle_dir),
                 "host_names": {"lab-hypervisor": HOST, "127.0.0.1": HOST}}
    process, log = run_rulebook("closed_loop_alerts", tmp_path, lab, variables)
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
        record = record_of(lab, CULPRIT)["throttle"]
        assert record["reason"].startswith("contain:") and record.get("plan") == throttling["cycle"], (
            record, throttling["cycle"])
        for name in VICTIMS:
            assert record_of(lab, name).get("throttle") is None, name
        # The victims got their CPU back (the rulebook and the writer stopped: see above).
        assert_relieved(libvirt_conn, guests, contended, throttling["lines"])

        # The alerts end: the steal alert's series leave node_exporter with the textfile, the host's
        # pressure falls with the guests off (either alert may be the one that fired first: the
        # pressure alert can have been pending since an earlier test loaded the host). Alertmanager
        # posts them resolved, and the shipped rulebook (started again) takes a resolved alert and
        # runs a cycle for it too (it may be the time to relax).
        done = len(cycles(cycle_dir))
        process, log = run_rulebook("closed_loop_alerts", tmp_path, lab, variables, "rulebook-resolved.log")
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
