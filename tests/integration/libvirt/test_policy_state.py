"""libvirt_policy_state, what libvirt_cputune_info reports of it, and
libvirt_cputune's `expected` (conflicts, and two runs at once) against the
lab's real libvirtd. Only the idle guests are used."""

import json
import os
import subprocess
import sys
import tempfile

import libvirt
import pytest
import yaml

from run_module import INVENTORY, ROOT, run_module

pytestmark = pytest.mark.xdist_group("libvirt")

HOST = "lab-hypervisor"
LIVE = libvirt.VIR_DOMAIN_AFFECT_LIVE
CONFIG = libvirt.VIR_DOMAIN_AFFECT_CONFIG
NS = "https://overcommit.control/xmlns/policy/1"
STATE = {"rule": "throttle", "cap": 0.5, "hist": [0.91, 1.2], "capped_at": 1714557600, "cooldown": {"until": 1}}


def policy_state(args, **kwargs):
    return run_module("libvirt_policy_state", args, host=HOST, **kwargs)


def cputune(args, **kwargs):
    return run_module("libvirt_cputune", args, host=HOST, **kwargs)


def info(name):
    result = run_module("libvirt_cputune_info", {"domains": [name], "sample_seconds": 0}, host=HOST)
    assert not result.get("failed"), result
    return result["domains"][0]


def by_name(result):
    return dict((entry["name"], entry) for entry in result["domains"])


def xmls(domain):
    """The persistent definition (as `virsh dumpxml --inactive` gives it) and the running one."""
    return {"config": domain.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE), "live": domain.XMLDesc(0)}


def sched(domain):
    return {"live": domain.schedulerParametersFlags(LIVE), "config": domain.schedulerParametersFlags(CONFIG)}


def no_traceback(result):
    # ansible-core marks every failed task with exception "(traceback unavailable)" when there was none.
    assert "module_stderr" not in result and result.get("exception") in (None, "(traceback unavailable)"), result
    assert "Traceback" not in json.dumps(result)


@pytest.fixture
def lab_domains(libvirt_conn):
    """oc-lab-idle-1 and oc-lab-idle-4, left as they were: caps restored
    and the policy element removed, whatever the test did."""
    domains = dict((name, libvirt_conn.lookupByName(name)) for name in ("oc-lab-idle-1", "oc-lab-idle-4"))
    before = dict((name, sched(domain)) for name, domain in domains.items())
    for domain in domains.values():
        assert NS not in domain.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE) and NS not in domain.XMLDesc(0)
    yield domains
    cputune({"domains": list(domains), "state": "restored"})
    for domain in domains.values():
        for flags in (LIVE, CONFIG):
            try:
                domain.setMetadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, None, None, NS, flags)
            except libvirt.libvirtError:
                pass
    for name, domain in domains.items():
        assert sched(domain) == before[name]
        assert NS not in domain.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE) and NS not in domain.XMLDesc(0)


def test_state_is_stored_read_back_persistent_idempotent_and_removed_with_null(lab_domains):
    idle1 = lab_domains["oc-lab-idle-1"]
    stored = policy_state({"states": {"oc-lab-idle-1": STATE}})
    assert stored["changed"] and stored["summary"]["changed"] == ["oc-lab-idle-1"], stored
    entry = by_name(stored)["oc-lab-idle-1"]
    assert entry["policy"] == STATE and entry["paused"] is False
    assert info("oc-lab-idle-1")["policy"] == STATE
    # In the persistent definition too (the domain is persistent and runs: apply auto is both).
    for target, xml in xmls(idle1).items():
        assert NS in xml and '"capped_at":1714557600' in xml, target
    assert '"capped_at":1714557600' in subprocess.run(
        ["virsh", "-c", "qemu:///system", "dumpxml", "--inactive", "oc-lab-idle-1"],
        capture_output=True, text=True, timeout=60, check=True).stdout

    again = policy_state({"states": {"oc-lab-idle-1": dict(reversed(list(STATE.items())))}})
    assert not again["changed"] and again["summary"]["unchanged"] == ["oc-lab-idle-1"], again

    changed = policy_state({"states": {"oc-lab-idle-1": dict(STATE, cap=0.75)}})
    assert changed["changed"] and info("oc-lab-idle-1")["policy"]["cap"] == 0.75

    removed = policy_state({"states": {"oc-lab-idle-1": None}})
    assert removed["changed"] and by_name(removed)["oc-lab-idle-1"]["policy"] is None
    assert info("oc-lab-idle-1")["policy"] is None
    assert all(NS not in xml for xml in xmls(idle1).values())
    assert not policy_state({"states": {"oc-lab-idle-1": None}})["changed"]


def test_pause_and_state_keep_each_other(lab_domains):
    paused = policy_state({"domains": ["oc-lab-idle-4"], "paused": True, "reason": "INC-7 hands off",
                           "requested_by": "alice"})
    assert paused["changed"], paused
    seen = info("oc-lab-idle-4")
    assert seen["paused"] is True and seen["policy"] is None
    assert seen["pause"]["reason"] == "INC-7 hands off" and seen["pause"]["by"] == "alice" and seen["pause"]["time"]
    # Pausing again keeps who and when: nothing to write.
    assert not policy_state({"domains": ["oc-lab-idle-4"], "paused": True})["changed"]

    written = policy_state({"states": {"oc-lab-idle-4": STATE}})
    assert written["changed"]
    seen_after = info("oc-lab-idle-4")
    assert seen_after["policy"] == STATE and seen_after["pause"] == seen["pause"]
    assert "INC-7 hands off" in xmls(lab_domains["oc-lab-idle-4"])["config"]

    resumed = policy_state({"domains": ["oc-lab-idle-4"], "paused": False})
    assert resumed["changed"]
    seen_resumed = info("oc-lab-idle-4")
    assert seen_resumed["paused"] is False and seen_resumed["pause"] is None and seen_resumed["policy"] == STATE
    assert "INC-7" not in xmls(lab_domains["oc-lab-idle-4"])["config"]

    # Both in one task, on two domains.
    both = policy_state({"states": {"oc-lab-idle-4": None, "oc-lab-idle-1": {"rule": "relax"}},
                         "domains": ["oc-lab-idle-1"], "paused": True})
    entries = by_name(both)
    assert entries["oc-lab-idle-1"]["policy"] == {"rule": "relax"} and entries["oc-lab-idle-1"]["paused"]
    assert entries["oc-lab-idle-4"]["policy"] is None and not entries["oc-lab-idle-4"]["paused"]
    assert NS not in xmls(lab_domains["oc-lab-idle-4"])["config"]


def test_check_mode_changes_nothing_and_diff_shows_before_and_after(lab_domains):
    before = xmls(lab_domains["oc-lab-idle-1"])
    result = policy_state({"states": {"oc-lab-idle-1": STATE}, "domains": ["oc-lab-idle-1"], "paused": True},
                          check=True, diff=True)
    assert result["changed"] and result["summary"]["report"] == ["oc-lab-idle-1: would be: state written, paused"]
    diff = result["diff"][0]
    assert diff["before"]["live"] == {"policy": None, "pause": None}
    assert diff["after"]["config"]["policy"] == STATE and diff["after"]["config"]["pause"]["by"]
    assert xmls(lab_domains["oc-lab-idle-1"]) == before


@pytest.mark.parametrize("args,field,words", [
    ({"states": ["oc-lab-idle-1"]}, "states", "dict"),
    ({"states": {"oc-lab-idle-1": [1, 2]}}, "states.oc-lab-idle-1", "a mapping of the policy state"),
    ({"states": {"oc-lab-idle-1": STATE, "oc-lab-idle-4": "paused"}}, "states.oc-lab-idle-4", "or null"),
    ({"states": {" oc-lab-idle-1": STATE}}, "states", "surrounding spaces"),
    ({"domains": "oc-lab-idle-1, oc-lab-idle-4", "paused": True}, "domains[1]", "surrounding spaces"),
    ({"domains": ["oc-lab-idle-1"], "paused": True, "states": {"oc-lab-idle-4": {"cap": float("nan")}}},
     "states.oc-lab-idle-4", "NaN"),
])
def test_bad_input_is_refused_naming_the_field_before_any_change(lab_domains, args, field, words):
    before = dict((name, xmls(domain)) for name, domain in lab_domains.items())
    result = policy_state(args)
    assert result["failed"] and not result.get("changed"), result
    no_traceback(result)
    if field:
        assert field in result["msg"] and words in result["msg"], result["msg"]
    assert words in result["msg"], result["msg"]
    assert dict((name, xmls(domain)) for name, domain in lab_domains.items()) == before


def test_an_unknown_domain_fails_alone_and_missing_ignore_skips_it(lab_domains):
    result = policy_state({"states": {"oc-lab-no-such-domain": STATE, "oc-lab-idle-1": STATE}})
    assert result["failed"], result
    no_traceback(result)
    entries = by_name(result)
    assert entries["oc-lab-no-such-domain"]["failed"] and "not found" in entries["oc-lab-no-such-domain"]["msg"]
    assert "oc-lab-no-such-domain" in result["msg"]
    assert entries["oc-lab-idle-1"]["changed"] and info("oc-lab-idle-1")["policy"] == STATE
    ignored = policy_state({"states": {"oc-lab-no-such-domain": None}, "missing": "ignore"})
    assert not ignored.get("failed") and ignored["summary"]["skipped"] == ["oc-lab-no-such-domain"]


# ---------------------------------------------------------------- libvirt_cputune's expected

def test_a_domain_changed_since_it_was_read_is_left_alone_as_a_conflict(lab_domains):
    idle4 = lab_domains["oc-lab-idle-4"]
    seen = info("oc-lab-idle-4")
    assert seen["cap_cpus"] is None and seen["throttle"] is None
    expected = {"oc-lab-idle-4": {"cap_cpus": None, "throttle_time": None}}
    # Someone throttles it by hand after the cycle read it.
    assert cputune({"domains": ["oc-lab-idle-4"], "cpus": 2, "reason": "by hand"})["changed"]
    record = info("oc-lab-idle-4")["throttle"]

    result = cputune({"domains": ["oc-lab-idle-4", "oc-lab-idle-1"], "cpus": 0.5, "expected": expected,
                      "reason": "loop"}, diff=True)
    assert not result.get("failed") and result["changed"], result
    entry = by_name(result)["oc-lab-idle-4"]
    assert entry["conflict"] is True and entry["changed"] is False
    assert entry["msg"] == "oc-lab-idle-4 changed since it was read: cap_cpus was unlimited, is 2 CPU now"
    assert entry["seen"] == {"cap_cpus": 2.0, "throttle_time": record["time"]}
    assert result["summary"]["conflict"] == ["oc-lab-idle-4"]
    assert "oc-lab-idle-4: left alone: oc-lab-idle-4 changed since it was read" in result["summary"]["report"][0]
    # oc-lab-idle-1 is not named in expected: it is throttled without a check.
    assert by_name(result)["oc-lab-idle-1"]["changed"] and "oc-lab-idle-1" in result["summary"]["changed"]
    assert idle4.schedulerParametersFlags(LIVE)["global_quota"] == 200000
    assert info("oc-lab-idle-4")["throttle"] == record

    # What the caller sees now is what it expects: the change goes through.
    now = info("oc-lab-idle-4")
    agreed = cputune({"domains": ["oc-lab-idle-4"], "cpus": 1.5, "reason": "loop", "expected": {
        "oc-lab-idle-4": {"cap_cpus": now["cap_cpus"], "throttle_time": now["throttle"]["time"]}}})
    assert agreed["changed"] and not by_name(agreed)["oc-lab-idle-4"].get("conflict"), agreed
    assert idle4.schedulerParametersFlags(LIVE)["global_quota"] == 150000


@pytest.mark.parametrize("expected,field", [
    ({"oc-lab-idle-4": {"cap_cpus": "none"}}, "expected.oc-lab-idle-4.cap_cpus"),
    ({"oc-lab-idle-4": {"cap": None}}, "expected.oc-lab-idle-4.cap"),
    ({"oc-lab-idle-1": {}}, "expected.oc-lab-idle-1"),
])
def test_bad_expected_is_refused_naming_the_field_before_any_change(lab_domains, expected, field):
    before = sched(lab_domains["oc-lab-idle-4"])
    result = cputune({"domains": ["oc-lab-idle-4"], "cpus": 2, "expected": expected})
    assert result["failed"] and result["field"] == field and result["msg"].startswith(field + "="), result
    no_traceback(result)
    assert sched(lab_domains["oc-lab-idle-4"]) == before


def start_playbook(args):
    """ansible-playbook running libvirt_cputune once, started, not waited for."""
    play = [{"hosts": HOST, "gather_facts": False, "tasks": [{"name": "run", "overcommit.control.libvirt_cputune": args}]}]
    handle, path = tempfile.mkstemp(suffix=".yml")
    with os.fdopen(handle, "w") as stream:
        yaml.safe_dump(play, stream)
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"))
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY, path]
    return path, subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_runs_started_together_with_the_same_expected_throttle_the_domain_once(lab_domains):
    idle4 = lab_domains["oc-lab-idle-4"]
    expected = {"oc-lab-idle-4": {"cap_cpus": None, "throttle_time": None}}
    runs = [start_playbook({"domains": ["oc-lab-idle-4"], "cpus": cpus, "reason": "runner %g" % cpus,
                            "expected": expected}) for cpus in (1.5, 2.5)]
    results = {}
    for (path, process), cpus in zip(runs, (1.5, 2.5)):
        stdout, stderr = process.communicate(timeout=300)
        os.unlink(path)
        try:
            results[cpus] = json.loads(stdout)["plays"][0]["tasks"][0]["hosts"][HOST]
        except (ValueError, KeyError, IndexError):
            raise AssertionError("no result (rc %d):\n%s\n%s" % (process.returncode, stdout[-2000:], stderr[-2000:]))
    entries = dict((cpus, by_name(result)["oc-lab-idle-4"]) for cpus, result in results.items())
    winners = [cpus for cpus, entry in entries.items() if entry["changed"]]
    losers = [cpus for cpus, entry in entries.items() if entry.get("conflict")]
    assert len(winners) == 1 and len(losers) == 1, results
    winner, loser = winners[0], losers[0]
    assert not results[loser].get("failed") and results[loser]["summary"]["conflict"] == ["oc-lab-idle-4"]
    assert entries[loser]["msg"] == ("oc-lab-idle-4 changed since it was read: cap_cpus was unlimited, is %g CPU now"
                                     % winner)
    # One record, the winner's, and the winner's cap in force.
    record = info("oc-lab-idle-4")["throttle"]
    assert record["reason"] == "runner %g" % winner and record["cpus"] == winner
    assert record["previous"]["live"]["global_quota"] == -1
    for xml in xmls(idle4).values():
        assert xml.count("xmlns/throttle/1") == 1
    assert idle4.schedulerParametersFlags(LIVE)["global_quota"] == int(winner * 100000)


def test_an_unreadable_stored_state_is_reported_and_can_be_replaced(lab_domains):
    idle1 = lab_domains["oc-lab-idle-1"]
    idle1.setMetadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, "<policy><state>{not json</state></policy>", "ocpolicy",
                      NS, LIVE | CONFIG)
    seen = info("oc-lab-idle-1")
    assert seen["policy"] is None and "not JSON" in seen["policy_error"] and seen["paused"] is False
    refused = policy_state({"domains": ["oc-lab-idle-1"], "paused": True})
    assert refused["failed"] and "not JSON" in refused["msg"] and "null to remove it" in refused["msg"], refused
    no_traceback(refused)
    replaced = policy_state({"states": {"oc-lab-idle-1": STATE}})
    assert replaced["changed"] and info("oc-lab-idle-1")["policy"] == STATE
