"""The alertmanager event source off loopback, as docs/eda.md deploys it:
HTTPS and a bearer token, fed by a real Alertmanager whose webhook
`http_config` sends the token and trusts the source's CA.

Real: Alertmanager (the lab's Debian binary; a second instance started
here with its own configuration and ports, so the lab's shared one is left
alone), the source's own code (its main() with a queue, as ansible-rulebook
runs it, in a thread of the test). Made here: a self-signed certificate.
Alertmanager gets two alerts: one routed to a receiver with the right
token, one to a receiver with a wrong one (a sender that does not hold the
credential). Only the first becomes events, firing and then resolved; the
other is answered 401 and counted."""

import asyncio
import datetime
import json
import logging
import socket
import subprocess
import threading
import time
import urllib.request

import pytest
import yaml

from certificates import self_signed
from ansible_collections.overcommit.control.extensions.eda.plugins.event_source import alertmanager as source

pytestmark = [pytest.mark.e2e, pytest.mark.isolated]

ALERTMANAGER = "/usr/bin/prometheus-alertmanager"
TOKEN = "oc-test-webhook-token"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class SourceThread(object):
    """The event source's main() on its own event loop; events as they come."""

    def __init__(self, args):
        self.args, self.events = args, []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    class Queue(object):
        def __init__(self, events):
            self.events = events

        async def put(self, event):
            self.events.append(event)

    def __enter__(self):
        self.thread.start()
        self.task = asyncio.run_coroutine_threadsafe(source.main(self.Queue(self.events), self.args), self.loop)
        return self

    def __exit__(self, *exc):
        self.task.cancel()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


def alertmanager_config(source_url, ca_file):
    def receiver(name, token):
        return {"name": name, "webhook_configs": [{
            "url": source_url, "send_resolved": True,
            "http_config": {"authorization": {"type": "Bearer", "credentials": token},
                            "tls_config": {"ca_file": ca_file}}}]}
    return {"route": {"receiver": "holder", "group_by": ["alertname"], "group_wait": "0s", "group_interval": "1s",
                      "repeat_interval": "1h",
                      "routes": [{"receiver": "stranger", "matchers": ['sender="stranger"']}]},
            "receivers": [receiver("holder", TOKEN), receiver("stranger", "not-the-token")]}


def post_alerts(port, alerts):
    request = urllib.request.Request("http://127.0.0.1:%d/api/v2/alerts" % port, data=json.dumps(alerts).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError("waited %d s for %s" % (seconds, what))


def test_alertmanager_sends_the_token_over_tls_and_a_sender_without_it_is_refused(tmp_path, caplog):
    cert, key = self_signed(str(tmp_path), "oc-test-eda-source")
    source_port, am_port = free_port(), free_port()
    config = tmp_path / "alertmanager.yml"
    config.write_text(yaml.safe_dump(alertmanager_config("https://127.0.0.1:%d/alerts" % source_port, cert)))
    args = {"host": "127.0.0.1", "port": source_port, "certfile": cert, "keyfile": key, "token": TOKEN}
    log = open(str(tmp_path / "alertmanager.log"), "w")
    with caplog.at_level(logging.WARNING, logger=source.__name__), SourceThread(args) as listening:
        daemon = subprocess.Popen([ALERTMANAGER, "--config.file=%s" % config, "--storage.path=%s" % (tmp_path / "data"),
                                   "--web.listen-address=127.0.0.1:%d" % am_port, "--cluster.listen-address="],
                                  stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: subprocess.run(["curl", "-fsS", "http://127.0.0.1:%d/-/ready" % am_port],
                                            capture_output=True, check=False).returncode == 0, 30,
                     "Alertmanager to be ready")
            now = datetime.datetime.now(datetime.timezone.utc)
            firing = {"labels": {"alertname": "OcTestHolder", "sender": "holder", "host": "hv-1", "vm": "web-1"},
                      "annotations": {"summary": "web-1 waits"}, "startsAt": now.isoformat()}
            stranger = {"labels": {"alertname": "OcTestStranger", "sender": "stranger", "host": "hv-2"},
                        "startsAt": now.isoformat()}
            post_alerts(am_port, [firing, stranger])
            wait_for(lambda: listening.events and refused(caplog), 30,
                     "the holder's alert as an event and the stranger's post refused")
            # The same alert ended: Alertmanager sends it resolved.
            post_alerts(am_port, [dict(firing, endsAt=datetime.datetime.now(datetime.timezone.utc).isoformat())])
            wait_for(lambda: any(e["overcommit_alert"]["status"] == "resolved" for e in listening.events), 30,
                     "the resolved notification")
        finally:
            daemon.terminate()
            daemon.wait(timeout=10)
            log.close()
    alerts = [event["overcommit_alert"] for event in listening.events]
    assert set(a["name"] for a in alerts) == {"OcTestHolder"}, alerts
    assert [a["status"] for a in alerts][:1] == ["firing"] and alerts[-1]["status"] == "resolved", alerts
    assert (alerts[0]["host"], alerts[0]["vm"], alerts[0]["receiver"]) == ("hv-1", "web-1", "holder")
    assert alerts[0]["annotations"] == {"summary": "web-1 waits"}
    lines = refused(caplog)
    assert lines and all("(HTTP 401)" in line and TOKEN not in line for line in lines), lines


def refused(caplog):
    return [r.getMessage() for r in caplog.records if "refused a post" in r.getMessage()]
