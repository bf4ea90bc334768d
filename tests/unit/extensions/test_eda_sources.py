# -*- coding: utf-8 -*-
"""The event sources, run with an asyncio queue as ansible-rulebook runs them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import asyncio
import base64
import json

import pytest

from ansible_collections.overcommit.control.extensions.eda.plugins.event_source import alertmanager, host_pressure
from ansible_collections.overcommit.control.plugins.module_utils.host.pressure import NoPressureInfo

PSI = "some avg10=%s avg60=%s avg300=1.00 total=535667579\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"


def host_tree(root, avg10, avg60, psi=True):
    files = {"proc/loadavg": "1.47 1.92 1.86 3/152 20172\n", "proc/stat": "procs_running 5\nprocs_blocked 1\n",
             "sys/devices/system/cpu/online": "0-1\n"}
    if psi:
        files.update(("proc/pressure/%s" % r, PSI % (avg10, avg60)) for r in ("cpu", "memory", "io"))
    for path, text in files.items():
        target = root.joinpath(*path.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def collect(source, args, until=None, timeout=5.0):
    """Runs a source's main() with a queue; returns the events put."""
    async def run():
        queue = asyncio.Queue()
        task = asyncio.ensure_future(source.main(queue, args))
        if until is not None:
            await until(queue)
            task.cancel()
        else:
            await asyncio.wait_for(task, timeout)
        out = []
        while not queue.empty():
            out.append(queue.get_nowait())
        return out
    return asyncio.run(run())


@pytest.mark.parametrize("args, expected", [
    ({}, 2),
    ({"min_cpu_some_avg60": 20}, 2),
    ({"min_cpu_some_avg60": 40}, 0),
    ({"min_cpu_some_avg10": 40, "min_cpu_some_avg60": 20}, 0),
])
def test_host_pressure_puts_an_event_a_round_over_the_thresholds(tmp_path, args, expected):
    host_tree(tmp_path, "35.00", "25.00")
    found = collect(host_pressure, dict(args, root=str(tmp_path), rounds=2, interval=0.01, host="hv-1"))
    assert len(found) == expected
    if found:
        event = found[0]["host_pressure"]
        assert event["host"] == "hv-1" and event["cpus"] == 2 and event["procs_running"] == 5
        assert event["pressure"]["cpu"]["some"]["avg60"] == 25.0


def test_host_pressure_ends_with_the_reason_on_a_host_without_psi(tmp_path):
    host_tree(tmp_path, "0", "0", psi=False)
    with pytest.raises(NoPressureInfo):
        collect(host_pressure, {"root": str(tmp_path), "rounds": 1})


NOTIFICATION = {
    "version": "4", "groupKey": "{}:{alertname=\"OvercommitVMStealHigh\"}", "status": "firing",
    "receiver": "overcommit", "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
    "externalURL": "http://127.0.0.1:9093", "truncatedAlerts": 0,
    "alerts": [
        {"status": "firing", "labels": {"alertname": "OvercommitVMStealHigh", "host": "hv-1", "vm": "web-1",
                                        "severity": "warning"},
         "annotations": {"summary": "web-1 waits"}, "startsAt": "2026-11-30T10:00:00Z",
         "endsAt": "0001-01-01T00:00:00Z", "fingerprint": "a1"},
        {"status": "resolved", "labels": {"alertname": "OvercommitHostCPUPressure", "instance": "hv-2:9100"},
         "annotations": {}, "startsAt": "2026-11-30T09:00:00Z", "endsAt": "2026-11-30T10:00:00Z",
         "fingerprint": "b2"},
    ],
}


async def post(port, body, path="/alerts", method="POST", authorization=None):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    extra = "Authorization: %s\r\n" % authorization if authorization else ""
    writer.write(("%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n"
                  % (method, path, len(body), extra)).encode() + body)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    writer.close()
    return status


def free_port():
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_alertmanager_puts_one_event_per_alert_firing_and_resolved():
    port = free_port()
    statuses = []

    async def exchange(queue):
        await asyncio.sleep(0.2)
        statuses.append(await post(port, json.dumps(NOTIFICATION).encode()))
        while queue.qsize() < 2:
            await asyncio.sleep(0.01)
    found = collect(alertmanager, {"port": port}, until=exchange)
    assert statuses == [202]
    firing, resolved = (event["overcommit_alert"] for event in found)
    assert firing["name"] == "OvercommitVMStealHigh" and firing["status"] == "firing"
    assert firing["host"] == "hv-1" and firing["vm"] == "web-1" and firing["node"] is None
    assert firing["annotations"]["summary"] == "web-1 waits" and firing["receiver"] == "overcommit"
    assert resolved["status"] == "resolved" and resolved["host"] == "hv-2" and resolved["ends_at"].startswith("2026")


@pytest.mark.parametrize("body, path, method, status", [
    (b"not json", "/alerts", "POST", 400),
    (json.dumps(dict(NOTIFICATION, version="3")).encode(), "/alerts", "POST", 400),
    (json.dumps({"version": "4", "alerts": "x"}).encode(), "/alerts", "POST", 400),
    (json.dumps(NOTIFICATION).encode(), "/other", "POST", 404),
    (b"", "/alerts", "GET", 405),
    (b"x" * 2048, "/alerts", "POST", 413),
])
def test_alertmanager_refuses_what_is_no_notification_and_puts_nothing(body, path, method, status):
    port = free_port()
    statuses = []

    async def exchange(queue):
        await asyncio.sleep(0.2)
        statuses.append(await post(port, body, path, method))
    found = collect(alertmanager, {"port": port, "max_body_bytes": 1024}, until=exchange)
    assert statuses == [status] and found == []


BASIC = "Basic " + base64.b64encode(b"alertmanager:s3cret").decode()


@pytest.mark.parametrize("args, authorization, body, status", [
    ({"token": "t0ken"}, None, None, 401),
    ({"token": "t0ken"}, "Bearer wrong", None, 401),
    ({"token": "t0ken"}, BASIC, None, 401),
    ({"token": "t0ken"}, None, b"x" * 4096, 401),  # too big, but the sender is told nothing but 401
    ({"token": "t0ken"}, "Bearer t0ken", b"x" * 4096, 413),
    ({"token": "t0ken"}, "Bearer t0ken", None, 202),
    ({"basic_auth_username": "alertmanager", "basic_auth_password": "s3cret"}, "Bearer t0ken", None, 401),
    ({"basic_auth_username": "alertmanager", "basic_auth_password": "s3cret"}, BASIC, None, 202),
    ({"token": "t0ken", "basic_auth_username": "alertmanager", "basic_auth_password": "s3cret"}, BASIC, None, 202),
])
def test_alertmanager_takes_posts_with_the_credentials_only_and_counts_the_refused(
        caplog, args, authorization, body, status):
    port = free_port()
    statuses = []

    async def exchange(queue):
        await asyncio.sleep(0.2)
        for _attempt in range(2):
            statuses.append(await post(port, body or json.dumps(NOTIFICATION).encode(), authorization=authorization))
        while status == 202 and queue.qsize() < 4:
            await asyncio.sleep(0.01)
    with caplog.at_level("WARNING"):
        found = collect(alertmanager, dict(args, port=port, max_body_bytes=2048), until=exchange)
    assert statuses == [status, status]
    assert len(found) == (4 if status == 202 else 0)
    refusals = [r.getMessage() for r in caplog.records if "refused a post" in r.getMessage()]
    if status == 202:
        assert refusals == []
    else:
        assert len(refusals) == 2 and "(HTTP %d): 2 refused so far" % status in refusals[1], refusals
        assert all("t0ken" not in r and "s3cret" not in r for r in refusals)


@pytest.mark.parametrize("args, field", [
    ({"basic_auth_username": "alertmanager"}, "basic_auth_password"),
    ({"basic_auth_password": "s3cret"}, "basic_auth_username"),
    ({"certfile": "/tmp/tls.crt"}, "keyfile"),
    ({"cafile": "/tmp/ca.pem"}, "certfile"),
    ({"max_body_bytes": 0}, "max_body_bytes"),
    ({"certfile": "/nonexistent/tls.crt", "keyfile": "/nonexistent/tls.key"}, "certfile"),
])
def test_alertmanager_refuses_arguments_that_do_not_go_together_before_listening(args, field):
    with pytest.raises(ValueError) as refused:
        collect(alertmanager, dict(args, port=free_port()))
    assert field in str(refused.value)


async def read_status(reader):
    line = await asyncio.wait_for(reader.readline(), 5)
    return int(line.split()[1]) if line else None


@pytest.mark.parametrize("sent", [
    b"POST /alerts HTTP/1.1\r\nHost: x\r\n",  # half a head, then nothing
    b"POST /alerts HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"version\"",  # half a body
])
def test_alertmanager_answers_a_stalled_sender_408_within_read_timeout_and_hangs_up(caplog, sent):
    port = free_port()
    outcome = {}

    async def exchange(queue):
        await asyncio.sleep(0.2)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(sent)
        await writer.drain()
        started = asyncio.get_running_loop().time()
        outcome["status"] = await read_status(reader)
        outcome["waited"] = asyncio.get_running_loop().time() - started
        outcome["closed"] = await asyncio.wait_for(reader.read(), 5) is not None
        writer.close()
    with caplog.at_level("WARNING"):
        found = collect(alertmanager, {"port": port, "read_timeout": 0.5}, until=exchange)
    assert outcome["status"] == 408 and outcome["closed"] and found == []
    # Answered after the timeout, not before it (and not never).
    assert 0.4 <= outcome["waited"] < 4, outcome
    assert any("(HTTP 408): 1 refused so far" in r.getMessage() for r in caplog.records)


def test_alertmanager_answers_503_past_max_connections_and_serves_again_once_they_close():
    port = free_port()
    statuses = []

    async def exchange(queue):
        await asyncio.sleep(0.2)
        held = [await asyncio.open_connection("127.0.0.1", port) for _connection in range(2)]
        await asyncio.sleep(0.1)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        statuses.append(await read_status(reader))
        writer.close()
        for _reader, held_writer in held:
            held_writer.close()
        await asyncio.sleep(0.2)
        statuses.append(await post(port, json.dumps(NOTIFICATION).encode()))
    collect(alertmanager, {"port": port, "max_connections": 2, "read_timeout": 30}, until=exchange)
    assert statuses == [503, 202]


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "hv-1.example.com"])
def test_alertmanager_refuses_to_listen_off_loopback_without_credentials(host):
    with pytest.raises(ValueError) as refused:
        alertmanager.Endpoint({"host": host, "port": free_port()})
    assert "host=%s is off loopback" % host in str(refused.value) and "allow_unauthenticated" in str(refused.value)


def test_alertmanager_off_loopback_says_what_is_exposed_each_start(caplog):
    with caplog.at_level("WARNING"):
        alertmanager.Endpoint({"host": "0.0.0.0", "allow_unauthenticated": True})
        alertmanager.Endpoint({"host": "0.0.0.0", "token": "t0ken"})
        alertmanager.Endpoint({"host": "127.0.0.1"})
        alertmanager.Endpoint({"host": "localhost"})
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3, messages
    assert "without credentials (allow_unauthenticated)" in messages[0]
    assert "without HTTPS" in messages[1] and "alerts travel in clear" in messages[1]
    assert "alerts and credentials travel in clear" in messages[2] and "t0ken" not in messages[2]


@pytest.mark.parametrize("args, field", [({"read_timeout": 0}, "read_timeout"),
                                         ({"max_connections": 0}, "max_connections")])
def test_alertmanager_refuses_bounds_that_bound_nothing(args, field):
    with pytest.raises(ValueError) as refused:
        alertmanager.Endpoint(args)
    assert field in str(refused.value)


@pytest.mark.parametrize("value, allowed", [("true", True), ("False", False), ("", False), (True, True)])
def test_alertmanager_takes_allow_unauthenticated_as_a_rulebook_renders_it(value, allowed):
    args = {"host": "0.0.0.0", "allow_unauthenticated": value}
    if allowed:
        assert alertmanager.Endpoint(args).credentials == []
    else:
        with pytest.raises(ValueError):
            alertmanager.Endpoint(args)
