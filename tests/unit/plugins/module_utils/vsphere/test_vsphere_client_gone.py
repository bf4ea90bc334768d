# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vSphere client with vCenter gone mid-task, on pyVmomi's own types
without a server: a call that gave up on a connection fault makes the calls
left fail at once, and reconfigure_many gives each VM a result."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.vsphere import client as vsphere


def offline_client():
    """A VsphereClient with no session (its constructor would log in)."""
    client = vsphere.VsphereClient.__new__(vsphere.VsphereClient)
    client.retry_log = vsphere.RetryLog()
    retrying = dict(retries=2, delay=0.1, max_delay=0.1, total_seconds=1.0, log=client.retry_log,
                    sleep=lambda seconds: None)
    client._read_retry = vsphere.jittered_backoff(is_transient=vsphere.transient_fault, **retrying)
    client._start_retry = vsphere.jittered_backoff(is_transient=vsphere.unstarted_fault, **retrying)
    client.stub = None
    return client


def test_after_a_call_gives_up_on_a_connection_fault_the_calls_left_fail_at_once():
    client, calls = offline_client(), []

    def refused():
        calls.append(1)
        raise ConnectionRefusedError(111, "Connection refused")

    with pytest.raises(ConnectionRefusedError):
        client.read(refused)
    tried = len(calls)
    assert tried == 3
    with pytest.raises(ConnectionRefusedError):
        client.read(refused)
    with pytest.raises(ConnectionRefusedError):
        client.start_task(refused)
    assert len(calls) == tried


def test_a_reconfigure_that_cannot_be_started_or_seen_to_end_is_that_vms_result():
    client, started = offline_client(), []

    def start_task(function, *args, **kwargs):
        started.append(function)
        if len(started) == 2:  # vm-2's: the connection is reset
            raise ConnectionResetError(104, "Connection reset by peer")
        return "a task"

    def wait(tasks):
        raise vsphere.VsphereClientError("cannot wait for the reconfigure tasks: connection dropped")

    client.start_task, client._wait_for_tasks = start_task, wait
    outcome = client.reconfigure_many({"vm-1": ({}, "v1"), "vm-2": ({}, "v2")})
    assert sorted(outcome) == ["vm-1", "vm-2"]
    assert outcome["vm-1"].fault == vsphere.UNKNOWN_END and "how it ended is unknown" in str(outcome["vm-1"])
    assert "cannot start the reconfigure" in str(outcome["vm-2"]) and outcome["vm-2"].fault != vsphere.UNKNOWN_END
