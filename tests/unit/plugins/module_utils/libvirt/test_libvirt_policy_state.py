import os
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import cputune, domain_xml, lock, plan
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import policy_state

NS = domain_xml.POLICY_NAMESPACE
STATE = {"rule": "throttle", "cap": 0.5, "hist": [0.9, 1.25], "cooldown": {"until": 1714557600}, "foreign": False}
PAUSE = {"reason": "INC-7 hands off", "by": "alice", "time": "2024-05-01T10:00:00Z"}
NEW_PAUSE = {"reason": None, "by": "bob", "time": "2024-05-02T08:00:00Z"}


def as_libvirt_keeps_it(element_xml):
    """A domain XML with the element as libvirt stores it: the element in the
    namespace under its prefix, its children unprefixed."""
    inner = element_xml.replace("<policy", '<ocpolicy:policy xmlns:ocpolicy="%s"' % NS, 1)
    inner = inner.replace("</policy>", "</ocpolicy:policy>")
    return "<domain><name>x</name><vcpu>2</vcpu><metadata>%s</metadata></domain>" % inner


def parsed(element_xml):
    return domain_xml.parse_policy_of(ET.fromstring(as_libvirt_keeps_it(element_xml)))


@pytest.mark.parametrize("state,pause", [(STATE, PAUSE), (STATE, None), (None, PAUSE), ({}, None)])
def test_the_element_reads_back_as_written(state, pause):
    assert parsed(domain_xml.policy_xml(state, pause)) == {"state": state, "pause": pause, "error": None}


def test_neither_state_nor_pause_means_no_element():
    assert domain_xml.policy_xml(None, None) is None
    root = ET.fromstring("<domain><vcpu>1</vcpu></domain>")
    assert domain_xml.parse_policy_of(root) == {"state": None, "pause": None, "error": None}
    assert domain_xml.describe("<domain><vcpu>1</vcpu></domain>")["policy"]["state"] is None


def test_the_state_text_is_the_same_for_the_same_state_and_escaped_in_xml():
    shuffled = dict(reversed(list(STATE.items())))
    assert domain_xml.state_text(STATE) == domain_xml.state_text(shuffled)
    element = domain_xml.policy_xml({"reason": "a < b & \"c\""}, None)
    assert parsed(element)["state"] == {"reason": "a < b & \"c\""}


def test_a_stored_state_that_is_not_json_or_not_a_mapping_is_an_error_not_a_crash():
    broken = parsed("<policy><pause by='x'/><state>{not json</state></policy>")
    assert broken["state"] is None and broken["pause"] == {"by": "x"} and "not JSON" in broken["error"]
    assert "a list, not a mapping" in parsed("<policy><state>[1, 2]</state></policy>")["error"]


def test_describe_reads_the_policy_beside_the_throttle_record():
    described = domain_xml.describe(as_libvirt_keeps_it(domain_xml.policy_xml(STATE, PAUSE)))
    assert described["policy"]["state"] == STATE and described["policy"]["pause"] == PAUSE
    assert described["record"] is None


@pytest.mark.parametrize("value,why", [
    ([1, 2], "a mapping"), ("cap=0.5", "a mapping"), (3, "a mapping"), ({"cap": float("nan")}, "NaN"),
    ({"cap": float("inf")}, "NaN"), ({"cap": object()}, "JSON"),
])
def test_a_state_that_is_not_a_json_mapping_is_refused_naming_its_domain(value, why):
    with pytest.raises(ValueRangeError) as error:
        policy_state.check_states({"web-1": STATE, "web-2": value})
    assert error.value.field == "states.web-2" and why in str(error.value)


def test_state_names_with_surrounding_spaces_are_refused():
    with pytest.raises(ValueRangeError) as error:
        policy_state.check_states({" web-1": STATE})
    assert error.value.field == "states" and "did you mean 'web-1'" in str(error.value)


def test_states_are_kept_as_they_read_back():
    assert policy_state.check_states({"web-1": {"hist": (1, 2)}, "web-2": None}) == {
        "web-1": {"hist": [1, 2]}, "web-2": None}


def plan_of(current, **wanted):
    now = dict({"state": None, "pause": None, "error": None}, **current)
    return policy_state.plan_policy(now, wanted, NEW_PAUSE)


def test_writing_the_state_keeps_the_pause_and_pausing_keeps_the_state():
    assert plan_of({"pause": PAUSE}, state=STATE) == {"state": STATE, "pause": PAUSE}
    assert plan_of({"state": STATE}, paused=True) == {"state": STATE, "pause": {"by": "bob", "time": NEW_PAUSE["time"]}}
    assert plan_of({"state": STATE, "pause": PAUSE}, paused=False) == {"state": STATE, "pause": None}
    assert plan_of({"state": STATE, "pause": PAUSE}, state=None) == {"state": None, "pause": PAUSE}


def test_pausing_what_is_paused_keeps_who_and_when_unless_the_reason_differs():
    assert plan_of({"pause": PAUSE}, paused=True) == {"state": None, "pause": PAUSE}
    same_reason = policy_state.plan_policy({"state": None, "pause": PAUSE, "error": None}, {"paused": True},
                                           dict(NEW_PAUSE, reason=PAUSE["reason"]))
    assert same_reason["pause"] == PAUSE
    other = policy_state.plan_policy({"state": None, "pause": PAUSE, "error": None}, {"paused": True},
                                     dict(NEW_PAUSE, reason="INC-8"))
    assert other["pause"] == {"reason": "INC-8", "by": "bob", "time": NEW_PAUSE["time"]}


def test_nothing_asked_leaves_the_target_as_it_is():
    current = {"state": STATE, "pause": PAUSE}
    assert plan_of(current) == current
    assert plan_of(current, state=STATE) == current


def test_an_unreadable_stored_state_is_replaced_or_refused():
    broken = {"error": "the stored policy state is not JSON (x)", "pause": PAUSE}
    assert plan_of(broken, state=None) == {"state": None, "pause": PAUSE}
    assert plan_of(broken, state=STATE) == {"state": STATE, "pause": PAUSE}
    with pytest.raises(plan.PlanError, match="not JSON .*new state, or null"):
        plan_of(broken, paused=False)


def test_report_lines():
    before = {"live": {"policy": None, "pause": None}}
    after = {"live": {"policy": STATE, "pause": PAUSE}}
    assert policy_state.report_line({"name": "web-1", "changed": True, "before": before, "after": after,
                                     "paused": True}) == "web-1: state written, paused"
    assert policy_state.report_line({"name": "web-1", "changed": True, "before": after, "after": before},
                                    True) == "web-1: would be: state removed, unpaused"
    assert policy_state.report_line({"name": "web-1", "changed": False, "paused": True}) == "web-1: unchanged (paused)"


def test_the_request_is_refused_before_any_connection():
    def refused(**params):
        with pytest.raises(ValueRangeError) as error:
            policy_state.check_request(dict({"domains": [], "lock_dir": "/x"}, **params), False)
        return error.value.field

    assert refused() == "states"
    assert refused(paused=True) == "domains"
    assert refused(states={}, domains=["web-1"]) == "paused"
    assert refused(states={"web-1": [1]}) == "states.web-1"


# ---------------------------------------------------------------- libvirt_cputune's expected


def test_expected_gets_both_keys_and_is_checked_naming_the_field():
    assert cputune.check_expected({"web-1": {"cap_cpus": 1}, "web-2": {}}, ["web-1", "web-2"], []) == {
        "web-1": {"cap_cpus": 1.0, "throttle_time": None}, "web-2": {"cap_cpus": None, "throttle_time": None}}
    for expected, field in [({"web-1": None}, "expected.web-1"), ({"web-1": [1]}, "expected.web-1"),
                            ({"web-1": {"cap": 1}}, "expected.web-1.cap"),
                            ({"web-1": {"cap_cpus": "1"}}, "expected.web-1.cap_cpus"),
                            ({"web-1": {"cap_cpus": True}}, "expected.web-1.cap_cpus"),
                            ({"web-1": {"cap_cpus": 0}}, "expected.web-1.cap_cpus"),
                            ({"web-1": {"throttle_time": 5}}, "expected.web-1.throttle_time"),
                            ({"web-9": {}}, "expected.web-9"), ({"web-1 ": {}}, "expected")]:
        with pytest.raises(ValueRangeError) as error:
            cputune.check_expected(expected, ["web-1"], [])
        assert error.value.field == field, expected
    # Domains selected by class are known only once read.
    assert "web-9" in cputune.check_expected({"web-9": {}}, [], ["shared"])


def domain_state(live=None, record=None, vcpus=2):
    return {"current": {"live": dict(plan.LIVE_UNSET, **(live or {}))}, "vcpus": vcpus, "record": record}


def test_a_domain_as_expected_is_no_conflict():
    seen, why = cputune.conflict("web-1", {"cap_cpus": None, "throttle_time": None}, domain_state())
    assert why is None and seen == {"cap_cpus": None, "throttle_time": None}
    capped = domain_state({"global_quota": 25000}, {"time": "2024-05-01T10:00:00Z"})
    assert cputune.conflict("web-1", {"cap_cpus": 0.2502, "throttle_time": "2024-05-01T10:00:00Z"}, capped)[1] is None


def test_a_domain_changed_since_it_was_read_is_a_conflict_saying_what_changed():
    capped = domain_state({"global_quota": 25000}, {"time": "2024-05-01T10:00:00Z"})
    seen, why = cputune.conflict("web-1", {"cap_cpus": None, "throttle_time": None}, capped)
    assert seen == {"cap_cpus": 0.25, "throttle_time": "2024-05-01T10:00:00Z"}
    assert why == "web-1 changed since it was read: cap_cpus was unlimited, is 0.25 CPU now"
    # Same cap, but a newer record: someone else throttled it again.
    _seen, why = cputune.conflict("web-1", {"cap_cpus": 0.25, "throttle_time": "2024-04-30T00:00:00Z"}, capped)
    assert why == ("web-1 changed since it was read: throttle_time was 2024-04-30T00:00:00Z, "
                   "is 2024-05-01T10:00:00Z now")


def test_the_cap_compared_is_the_config_one_for_a_shut_off_domain():
    shut_off = {"current": {"config": {"global_period": 100000, "global_quota": 50000}}, "vcpus": 2, "record": None}
    assert cputune.cap_cpus(shut_off) == 0.5
    assert cputune.seen_target({"active": False}) == "config" and cputune.seen_target({"active": True}) == "live"


def test_conflicts_are_an_outcome_of_their_own_not_unchanged_nor_failed():
    results = [{"name": "web-1", "changed": True}, {"name": "web-2", "changed": False},
               {"name": "web-3", "changed": False, "conflict": True, "msg": "web-3 changed since it was read: x"}]
    outcome = fleet.summary(results, lambda r: fleet.cap_line(r, False, "1 CPU", "unlimited"))
    assert outcome["conflict"] == ["web-3"] and outcome["unchanged"] == ["web-2"] and outcome["changed"] == ["web-1"]
    assert outcome["failure_msg"] is None
    assert outcome["report"][2] == "web-3: left alone: web-3 changed since it was read: x"


# ---------------------------------------------------------------- locks


def test_a_domain_lock_is_held_by_one_run_at_a_time(tmp_path):
    folder = str(tmp_path / "locks")
    ticks = iter(range(0, 1000, 10))
    first = lock.DomainLocks(folder)
    second = lock.DomainLocks(folder, timeout=30, clock=lambda: next(ticks), sleep=lambda seconds: None)
    with first.hold("uuid-1", "web-1") as path:
        assert path == os.path.join(folder, "uuid-1.lock")
        assert oct(os.stat(folder).st_mode & 0o777) == "0o700"
        with pytest.raises(lock.LockError, match="another run held the lock of web-1 .* for more than 30 s"):
            with second.hold("uuid-1", "web-1"):
                pass
        # Another domain's lock is free.
        with second.hold("uuid-2", "web-2"):
            pass
    with second.hold("uuid-1", "web-1"):
        pass


def test_a_lock_folder_others_may_write_or_that_is_a_file_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(lock.LockError, match="may be written by others"):
        lock.lock_dir(str(shared))
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(lock.LockError, match="lock_dir: .*(not a folder|cannot create)"):
        lock.lock_dir(str(afile / "sub"))


def test_the_default_folder_falls_back_to_the_temp_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(lock, "DEFAULT_LOCK_DIR", str(tmp_path / "file" / "locks"))
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setattr(lock.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert lock.lock_dir(lock.DEFAULT_LOCK_DIR) == str(tmp_path / "tmp" / "overcommit-control-locks")
