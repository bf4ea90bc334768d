"""libvirt_cputune and libvirt_cputune_info against the lab's real libvirtd
with running QEMU guests."""

import os
import time
import uuid
import xml.etree.ElementTree as ET
from urllib.parse import parse_qs, urlparse

import libvirt
import pytest

from lab_domain_type import lab_domain_type
from domain_records import KEYS, THROTTLE_NS, element_of, metadata_flags, planted
from measure import TOLERANCE_CPUS, check_braked, check_recovered, cpu_rate
from run_module import run_module, run_playbook

pytestmark = pytest.mark.xdist_group("libvirt")

HOST = "lab-hypervisor"
CLASS_NAMESPACE = "https://overcommit.control/xmlns/vm/1"
LIVE = libvirt.VIR_DOMAIN_AFFECT_LIVE
CONFIG = libvirt.VIR_DOMAIN_AFFECT_CONFIG


def cputune(args, **kwargs):
    return run_module("libvirt_cputune", args, host=HOST, **kwargs)


def sched(domain):
    tuning = {"live": domain.schedulerParametersFlags(LIVE)} if domain.isActive() else {}
    tuning["config"] = domain.schedulerParametersFlags(CONFIG)
    return tuning


def by_name(result):
    return dict((entry["name"], entry) for entry in result["domains"])


@pytest.fixture
def restore_after(libvirt_conn):
    """Domains a test throttles are restored by the module, or their tuning
    and record are reset, whatever the test did."""
    names = []
    yield names
    if names:
        cputune({"domains": names, "state": "restored"})


@pytest.fixture
def idle4(libvirt_conn, restore_after):
    restore_after.append("oc-lab-idle-4")
    return libvirt_conn.lookupByName("oc-lab-idle-4")


@pytest.mark.serial  # measures the guest's CPU rate against its own
def test_throttle_caps_measured_usage_and_restore_returns_exact_values_and_usage(libvirt_conn, busy_guest,
                                                                                 restore_after):
    restore_after.append("oc-lab-busy-1")
    # Someone's custom tuning before us: restore must return exactly this.
    busy_guest.setSchedulerParametersFlags({"cpu_shares": 2048, "vcpu_quota": 80000}, LIVE)
    busy_guest.setSchedulerParametersFlags({"cpu_shares": 2048, "vcpu_period": 100000, "vcpu_quota": 80000}, CONFIG)
    before = sched(busy_guest)
    # Rates are compared with this guest's own rate before the throttle, not with fixed figures.
    unthrottled = cpu_rate(libvirt_conn, busy_guest)
    assert unthrottled <= 0.8 + TOLERANCE_CPUS, unthrottled

    result = cputune({"domains": ["oc-lab-busy-1"], "cpus": 0.3, "reason": "INC-1 noisy neighbour"})
    assert result["changed"] and not result.get("failed"), result
    entry = by_name(result)["oc-lab-busy-1"]
    assert entry["throttle"]["reason"] == "INC-1 noisy neighbour"
    assert entry["throttle"]["previous"]["live"]["vcpu_quota"] == 80000
    live = busy_guest.schedulerParametersFlags(LIVE)
    assert (live["global_period"], live["global_quota"], live["cpu_shares"]) == (100000, 30000, 2048)
    # The looser per-vCPU cap is lowered to the domain cap (cgroup v1 needs it).
    assert live["vcpu_quota"] == 30000
    throttled = cpu_rate(libvirt_conn, busy_guest)
    check_braked(unthrottled, throttled, 0.3)

    info = run_module("libvirt_cputune_info", {"domains": ["oc-lab-busy-1"], "sample_seconds": 2}, host=HOST)
    reported = info["domains"][0]
    assert reported["cap_cpus"] == pytest.approx(0.3)
    assert reported["throttle"]["reason"] == "INC-1 noisy neighbour"
    # What the module measures is what the test measured under the same cap.
    assert reported["usage"]["cpus_used"] == pytest.approx(throttled, abs=TOLERANCE_CPUS)

    again = cputune({"domains": ["oc-lab-busy-1"], "cpus": 0.3, "reason": "INC-1 noisy neighbour"})
    assert not again["changed"]

    restored = cputune({"domains": ["oc-lab-busy-1"], "state": "restored"})
    assert restored["changed"] and by_name(restored)["oc-lab-busy-1"]["throttle"] is None
    assert sched(busy_guest) == before
    restored_rate = cpu_rate(libvirt_conn, busy_guest)
    check_recovered(unthrottled, throttled, restored_rate)
    assert restored_rate <= 0.8 + TOLERANCE_CPUS, restored_rate
    assert not cputune({"domains": ["oc-lab-busy-1"], "state": "restored"})["changed"]


@pytest.mark.serial  # measures the guest's CPU rate against its own
def test_cap_set_with_persistence_survives_a_guest_restart(libvirt_conn, busy_guest, restore_after):
    restore_after.append("oc-lab-busy-1")
    unthrottled = cpu_rate(libvirt_conn, busy_guest)
    result = cputune({"domains": ["oc-lab-busy-1"], "cpus": 0.4, "shares": 512, "reason": "restart test"})
    assert result["changed"], result
    busy_guest.destroy()
    busy_guest.create()
    live = busy_guest.schedulerParametersFlags(LIVE)
    assert (live["global_period"], live["global_quota"], live["cpu_shares"]) == (100000, 40000, 512)
    check_braked(unthrottled, cpu_rate(libvirt_conn, busy_guest), 0.4)
    restored = cputune({"domains": ["oc-lab-busy-1"], "state": "restored"})
    assert restored["changed"]
    assert busy_guest.schedulerParametersFlags(LIVE)["global_quota"] == -1
    config = busy_guest.schedulerParametersFlags(CONFIG)
    assert (config["global_quota"], config["cpu_shares"]) == (0, 0)
    # The restored persistent config starts again as it did before the throttle.
    busy_guest.destroy()
    busy_guest.create()
    assert busy_guest.schedulerParametersFlags(LIVE)["cpu_shares"] == 1024


def test_the_ladder_weight_then_quota_restores_both_exactly_in_one_restore(libvirt_conn, idle4):
    """The loop's rungs on one domain: a demoted weight (the weight rung),
    then a cap on top (the quota rung); the one restore puts both back."""
    before = sched(idle4)
    weight = cputune({"domains": ["oc-lab-idle-4"], "shares": 293, "reason": "contain: weight rung"})
    assert weight["changed"] and idle4.schedulerParametersFlags(LIVE)["cpu_shares"] == 293, weight
    # A throttle sets the whole brake: the loop's cap keeps the demoted weight with it.
    capped = cputune({"domains": ["oc-lab-idle-4"], "cpus": 1.5, "shares": 293, "reason": "contain: quota rung"})
    assert capped["changed"], capped
    live = idle4.schedulerParametersFlags(LIVE)
    assert (live["cpu_shares"], live["global_quota"]) == (293, 150000), live
    restored = cputune({"domains": ["oc-lab-idle-4"], "state": "restored"})
    assert restored["changed"] and sched(idle4) == before, restored
    # Nothing of the record is left, not even its namespace in the persistent definition.
    assert not throttle_record_in_xml(idle4)


def test_switching_per_vcpu_cap_to_whole_domain_cap_in_one_task(libvirt_conn, idle4):
    per_vcpu = cputune({"domains": ["oc-lab-idle-4"], "scope": "vcpu", "cpus": 0.5})
    assert per_vcpu["changed"], per_vcpu
    assert idle4.schedulerParametersFlags(LIVE)["vcpu_quota"] == 50000
    # On cgroup v1 writing the domain cap first would fail: its vCPUs hold 0.5 each.
    whole = cputune({"domains": ["oc-lab-idle-4"], "scope": "domain", "cpus": 1.2})
    assert whole["changed"] and not whole.get("failed"), whole
    live = idle4.schedulerParametersFlags(LIVE)
    assert (live["vcpu_quota"], live["global_quota"]) == (-1, 120000)
    restored = cputune({"domains": ["oc-lab-idle-4"], "state": "restored"})
    assert restored["changed"]
    live = idle4.schedulerParametersFlags(LIVE)
    assert (live["vcpu_quota"], live["global_quota"]) == (-1, -1)


def test_check_mode_changes_nothing_and_diff_shows_before_and_after(idle4):
    before = sched(idle4)
    result = cputune({"domains": ["oc-lab-idle-4"], "cpus": 2}, check=True, diff=True)
    assert result["changed"]
    assert sched(idle4) == before
    diff = result["diff"][0]
    assert diff["before"]["live"]["global_quota"] == -1 and diff["after"]["live"]["global_quota"] == 200000
    assert diff["before"]["throttle"] is None and diff["after"]["throttle"]["cpus"] == 2


def test_one_failing_domain_neither_hides_nor_stops_the_others(libvirt_conn, idle4):
    result = cputune({"domains": ["oc-lab-no-such-domain", "oc-lab-idle-4", "oc-lab-dedicated-2"], "cpus": 2})
    assert result["failed"]
    entries = by_name(result)
    assert entries["oc-lab-idle-4"]["changed"] and not entries["oc-lab-idle-4"].get("failed")
    assert idle4.schedulerParametersFlags(LIVE)["global_quota"] == 200000
    assert entries["oc-lab-no-such-domain"]["failed"] and "not found" in entries["oc-lab-no-such-domain"]["msg"]
    assert "dedicated" in entries["oc-lab-dedicated-2"]["msg"] and "pinned" in entries["oc-lab-dedicated-2"]["msg"]
    assert "oc-lab-no-such-domain" in result["msg"] and "oc-lab-dedicated-2" in result["msg"]


def test_dedicated_domain_only_with_force(libvirt_conn, restore_after):
    restore_after.append("oc-lab-dedicated-2")
    dedicated = libvirt_conn.lookupByName("oc-lab-dedicated-2")
    refused = cputune({"domains": ["oc-lab-dedicated-2"], "cpus": 1})
    assert refused["failed"] and dedicated.schedulerParametersFlags(LIVE)["global_quota"] == -1
    forced = cputune({"domains": ["oc-lab-dedicated-2"], "cpus": 1, "force": True})
    assert forced["changed"] and dedicated.schedulerParametersFlags(LIVE)["global_quota"] == 100000


def test_cap_under_the_shared_floor_only_with_force(idle4):
    refused = cputune({"domains": ["oc-lab-idle-4"], "cpus": 0.5})
    assert refused["failed"] and "under the shared floor of 1 CPUs" in refused["domains"][0]["msg"]
    assert idle4.schedulerParametersFlags(LIVE)["global_quota"] == -1
    assert cputune({"domains": ["oc-lab-idle-4"], "cpus": 0.5, "force": True})["changed"]


@pytest.mark.parametrize("args,field", [
    ({"cpus": 0.001}, "cpus"),
    ({"cpus": 1, "period": 500}, "period"),
    ({"quota": 10}, "quota"),
    ({"shares": 1}, "shares"),
    ({"cpus": 1, "floor": 2}, "floor"),
])
def test_out_of_range_values_are_refused_before_any_change(idle4, args, field):
    before = sched(idle4)
    result = cputune(dict(args, domains=["oc-lab-idle-4"]))
    assert result["failed"] and result["field"] == field
    assert result["msg"].startswith(field + "=") and "allowed" in result["msg"]
    assert sched(idle4) == before


def throttle_record_in_xml(domain):
    """Whether the live or persistent XML of a domain carries a throttle record."""
    xmls = [domain.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)] + ([domain.XMLDesc(0)] if domain.isActive() else [])
    return any("xmlns/throttle" in xml for xml in xmls)


def test_a_cap_that_caps_nothing_fails_that_domain_before_any_write(libvirt_conn, idle4):
    idle1 = libvirt_conn.lookupByName("oc-lab-idle-1")
    before = sched(idle1)
    # 1000 meant as 1000m: on a 1-vCPU guest it would be no brake at all.
    result = cputune({"domains": ["oc-lab-idle-1", "oc-lab-idle-4"], "cpus": 1000, "reason": "INC-9"})
    assert result["failed"], result
    entries = by_name(result)
    msg = entries["oc-lab-idle-1"]["msg"]
    assert msg.startswith("cpus=1000.0 is out of range") and "1 vCPU" in msg and "caps nothing" in msg, msg
    assert entries["oc-lab-idle-4"]["failed"] and "4 vCPUs" in entries["oc-lab-idle-4"]["msg"]
    assert sched(idle1) == before and not throttle_record_in_xml(idle1)
    assert not throttle_record_in_xml(idle4)

    # The same task shape with a cap that brakes the 4-vCPU guest: only the 1-vCPU one is refused.
    mixed = cputune({"domains": ["oc-lab-idle-1", "oc-lab-idle-4"], "cpus": 1, "reason": "INC-9"})
    entries = by_name(mixed)
    assert mixed["failed"] and entries["oc-lab-idle-1"]["failed"] and "1 vCPU" in entries["oc-lab-idle-1"]["msg"]
    assert entries["oc-lab-idle-4"]["changed"] and idle4.schedulerParametersFlags(LIVE)["global_quota"] == 100000
    assert sched(idle1) == before and not throttle_record_in_xml(idle1)


def test_a_per_vcpu_cap_of_one_cpu_or_more_fails_before_any_write(idle4):
    before = sched(idle4)
    for args in ({"scope": "vcpu", "cpus": 1}, {"scope": "vcpu", "quota": 150000}):
        result = cputune(dict(args, domains=["oc-lab-idle-4"]))
        assert result["failed"] and not result["changed"], result
        field = "cpus" if "cpus" in args else "quota"
        msg = result["domains"][0]["msg"]
        assert msg.startswith(field + "=") and "per vCPU" in msg and "4 vCPUs" in msg, msg
        assert sched(idle4) == before and not throttle_record_in_xml(idle4)


def test_a_name_with_surrounding_spaces_fails_the_task_before_any_domain_changes(libvirt_conn, idle4):
    idle1 = libvirt_conn.lookupByName("oc-lab-idle-1")
    before = (sched(idle4), sched(idle1))
    # "oc-lab-idle-4, oc-lab-idle-1" split on the comma by Ansible's list handling.
    result = cputune({"domains": "oc-lab-idle-4, oc-lab-idle-1".split(","), "cpus": 0.9, "reason": "INC-11"})
    assert result["failed"] and result["field"] == "domains" and not result.get("changed"), result
    assert result["msg"].startswith("domains[1]=' oc-lab-idle-1' has surrounding spaces"), result["msg"]
    assert (sched(idle4), sched(idle1)) == before
    assert not throttle_record_in_xml(idle4) and not throttle_record_in_xml(idle1)
    info = run_module("libvirt_cputune_info", {"domains": ["oc-lab-idle-4 "], "sample_seconds": 0}, host=HOST)
    assert info["failed"] and info["field"] == "domains" and info["domains"] == []


def test_shut_off_domain_live_only_fails_and_config_is_changed(libvirt_conn, restore_after):
    restore_after.append("oc-lab-busy-2")
    shut_off = libvirt_conn.lookupByName("oc-lab-busy-2")
    assert not shut_off.isActive()
    live_only = cputune({"domains": ["oc-lab-busy-2"], "cpus": 1, "apply": "live"})
    assert live_only["failed"] and "shut off" in live_only["domains"][0]["msg"]
    by_default = cputune({"domains": ["oc-lab-busy-2"], "cpus": 1})
    assert by_default["changed"]
    assert shut_off.schedulerParametersFlags(CONFIG)["global_quota"] == 100000


def test_per_vcpu_cap_above_an_existing_domain_cap_cannot_hold(idle4):
    idle4.setSchedulerParametersFlags({"global_quota": 30000}, LIVE)
    try:
        result = cputune({"domains": ["oc-lab-idle-4"], "scope": "vcpu", "cpus": 0.5, "apply": "live"})
        assert result["failed"] and "exceeds the whole-domain cap" in result["domains"][0]["msg"]
        assert idle4.schedulerParametersFlags(LIVE)["vcpu_quota"] == -1
    finally:
        idle4.setSchedulerParametersFlags({"global_quota": -1}, LIVE)


def test_host_without_cgroup_cpu_controller_fails_per_domain_and_writes_nothing(lab):
    uri = lab["OVERCOMMIT_LIBVIRT_NOCGROUP_URI"]
    result = cputune({"uri": uri, "domains": ["oc-lab-nocgroup-1"], "cpus": 1})
    assert result["failed"] and "cgroup CPU controller is not mounted" in result["domains"][0]["msg"]
    assert not result["changed"]
    # No throttle record was left behind, live or persistent: the domain needs no restore. Read from
    # the embedded driver's own files: a second process on the same root (virsh) crashed once here.
    root = parse_qs(urlparse(uri).query)["root"][0]
    for kept in ("run", "etc"):
        with open(os.path.join(root, kept, "qemu", "oc-lab-nocgroup-1.xml")) as handle:
            xml = handle.read()
        assert "<cputune>" not in xml and "xmlns/throttle" not in xml, kept
    info = run_module("libvirt_cputune_info", {"uri": uri, "domains": ["oc-lab-nocgroup-1"]}, host=HOST)
    assert info["failed"] and "cgroup CPU controller" in info["domains"][0]["msg"]


def test_classes_select_domains_across_the_host():
    info = run_module("libvirt_cputune_info", {"classes": ["dedicated"], "sample_seconds": 0}, host=HOST)
    assert [d["name"] for d in info["domains"]] == ["oc-lab-dedicated-2"]
    assert info["domains"][0]["class_reason"] == "its vCPUs are pinned"


def test_the_cpus_a_running_domain_may_run_on_are_reported_from_its_live_pinning(libvirt_conn):
    """The shared pool is read from these: the lab's dedicated guest pins its
    vCPUs to CPUs 0 and 1 (its definition says so), an unpinned guest may run
    on every CPU of the host."""
    info = run_module("libvirt_cputune_info", {"domains": ["oc-lab-idle-4", "oc-lab-dedicated-2"],
                                               "sample_seconds": 0}, host=HOST)
    assert not info.get("failed"), info
    by_name = dict((d["name"], d) for d in info["domains"])
    host_cpus = libvirt_conn.getInfo()[2]
    assert by_name["oc-lab-idle-4"]["cpus_allowed"] == list(range(host_cpus))
    root = ET.fromstring(libvirt_conn.lookupByName("oc-lab-dedicated-2").XMLDesc(0))
    pinned = sorted(set(int(pin.get("cpuset")) for pin in root.findall("cputune/vcpupin")))
    assert pinned == [0, 1] and by_name["oc-lab-dedicated-2"]["cpus_allowed"] == pinned


def test_a_running_domain_says_when_it_started(libvirt_conn):
    """libvirt's API has no start time: the module reads the QEMU process's
    (the policy judges no VM a culprit in its first minute). A transient
    domain started by the test started between the test's two clocks."""
    name = "oc-started-%s" % uuid.uuid4().hex[:8]
    before = time.time()
    domain = libvirt_conn.createXML("<domain type='%s'><name>%s</name><memory unit='MiB'>32</memory><vcpu>1</vcpu>"
                                    "<os><type arch='x86_64'>hvm</type></os></domain>" % (lab_domain_type(), name), 0)
    after = time.time()
    try:
        info = run_module("libvirt_cputune_info", {"domains": [name], "sample_seconds": 0}, host=HOST)
    finally:
        domain.destroy()
    started_at = info["domains"][0]["started_at"]
    # /proc gives the start in clock ticks after boot, and btime in whole seconds.
    assert before - 1.5 <= started_at <= after + 1.5, (before, info, after)


def test_raw_quota_with_its_own_period_and_an_emulator_cap(idle4):
    before = sched(idle4)
    result = cputune({"domains": ["oc-lab-idle-4"], "quota": 150000, "period": 50000, "emulator_cpus": 0.5})
    assert result["changed"] and not result.get("failed"), result
    live = idle4.schedulerParametersFlags(LIVE)
    assert (live["global_period"], live["global_quota"]) == (50000, 150000)
    assert (live["emulator_period"], live["emulator_quota"]) == (50000, 25000)
    assert by_name(result)["oc-lab-idle-4"]["throttle"]["cpus"] == 3
    assert cputune({"domains": ["oc-lab-idle-4"], "state": "restored"})["changed"]
    assert sched(idle4) == before


def domains_of_class(libvirt_conn, vm_class):
    """The host's domains whose persistent definition names `vm_class`, read
    from their XML, not through the collection."""
    names = []
    for domain in libvirt_conn.listAllDomains():
        root = ET.fromstring(domain.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))
        if [e.text for e in root.iterfind("metadata/{%s}vm/{%s}class" % (CLASS_NAMESPACE, CLASS_NAMESPACE))] == [vm_class]:
            names.append(domain.name())
    return sorted(names)


def test_class_selection_throttles_every_domain_of_the_class(libvirt_conn, restore_after):
    burstable = domains_of_class(libvirt_conn, "burstable")
    # The lab defines two; another test's throwaway domain of the class, if
    # any, is selected too, and put back with them.
    assert {"oc-lab-busy-2", "oc-lab-busy-3"} <= set(burstable), burstable
    restore_after.extend(burstable)
    result = cputune({"classes": ["burstable"], "cpus": 1, "reason": "burstable at zero credits"})
    assert sorted(entry["name"] for entry in result["domains"]) == burstable, result
    assert sorted(result["summary"]["changed"]) == burstable
    for name in burstable:
        config = libvirt_conn.lookupByName(name).schedulerParametersFlags(CONFIG)
        assert (config["global_period"], config["global_quota"]) == (100000, 100000)


# A name no host of the inventory has: the lab's one hypervisor host is all of it.
NOWHERE = "found on no host of hypervisors: oc-lab-not-on-this-host (a typo, or a VM that is gone?)"


def test_an_incident_can_demote_the_cpu_weight_alone_and_restore_gives_it_back(idle4):
    """throttle.yml with `shares` and no `cpus`: the weight a noisy VM yields
    with, no cap (it keeps all the CPU no one else wants)."""
    before = sched(idle4)
    demoted = run_playbook("throttle.yml", {"domains": ["oc-lab-idle-4"], "shares": 64, "reason": "INC-14 weight"})
    assert demoted.returncode == 0, demoted.stdout[-3000:]
    after = sched(idle4)
    assert after["live"]["cpu_shares"] == 64 and after["config"]["cpu_shares"] == 64, after
    for where in ("live", "config"):
        assert [after[where][key] == before[where][key] for key in ("global_quota", "vcpu_quota")] == [True, True]
    neither = run_playbook("throttle.yml", {"domains": ["oc-lab-idle-4"], "reason": "INC-14"})
    assert neither.returncode != 0 and "cpus" in neither.stdout and "shares" in neither.stdout, neither.stdout[-3000:]
    restored = run_playbook("restore.yml", {"domains": ["oc-lab-idle-4"]})
    assert restored.returncode == 0 and sched(idle4) == before, restored.stdout[-3000:]


HAND_EDITED = '<throttle reason="INC-3" cpus="half"><previous target="config" global_quota="0"/></throttle>'


def test_a_hand_edited_throttle_record_fails_that_domain_alone_naming_the_field(libvirt_conn, idle4,
                                                                                restore_after):
    idle1 = libvirt_conn.lookupByName("oc-lab-idle-1")
    restore_after.append("oc-lab-idle-1")
    before = sched(idle4)
    with planted(idle4, HAND_EDITED):
        record = element_of(idle4)
        for state in ({"cpus": 0.5, "reason": "INC-13"}, {"state": "restored"}):
            result = cputune(dict(state, domains=["oc-lab-idle-4", "oc-lab-idle-1"], force=True))
            assert result["failed"] and "module_stderr" not in result and "Traceback" not in str(result), result
            entries = by_name(result)
            assert entries["oc-lab-idle-4"]["failed"], entries
            assert "throttle.cpus='half' is out of range" in entries["oc-lab-idle-4"]["msg"], entries
            assert not entries["oc-lab-idle-1"].get("failed"), entries
            assert sched(idle4) == before and element_of(idle4) == record
        assert idle1.schedulerParametersFlags(LIVE)["global_quota"] == -1
        info = run_module("libvirt_cputune_info", {"classes": ["shared"], "sample_seconds": 0}, host=HOST)
        assert info["failed"] and "Traceback" not in str(info)
        entries = by_name(info)
        assert entries["oc-lab-idle-4"]["failed"] and "throttle.cpus" in entries["oc-lab-idle-4"]["msg"]
        assert entries["oc-lab-idle-1"]["class"] == "shared" and not entries["oc-lab-idle-1"].get("failed")


def rewritten(domain, element_xml):
    """The domain's throttle record (live and persistent) replaced by `element_xml`."""
    domain.setMetadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, element_xml, KEYS[THROTTLE_NS], THROTTLE_NS,
                       metadata_flags(domain))


def test_a_record_in_an_older_shape_restores_exactly_and_one_of_a_newer_schema_is_refused(idle4):
    """A throttle in flight across an upgrade: the record as builds before
    records carried a schema (or `owns`) wrote it still restores exactly what
    it recorded; a record of a newer schema than this collection reads is
    refused for that domain, nothing changed."""
    before = sched(idle4)
    throttled = cputune({"domains": ["oc-lab-idle-4"], "cpus": 1.5, "reason": "INC-20"})
    assert throttled["changed"] and not throttled.get("failed"), throttled
    current = element_of(idle4)["live"]
    assert 'schema="1"' in current and "owns=" in current, current
    capped = sched(idle4)

    newer = current.replace('schema="1"', 'schema="2"')
    rewritten(idle4, newer)
    refused = cputune({"domains": ["oc-lab-idle-4"], "state": "restored"})
    entry = by_name(refused)["oc-lab-idle-4"]
    assert refused["failed"] and entry["failed"] and "Traceback" not in str(refused), refused
    assert "throttle.schema" in entry["msg"] and "newer overcommit.control" in entry["msg"], entry
    assert sched(idle4) == capped and element_of(idle4)["live"] == newer

    # The older shape: no schema, no owns (restore then writes back every value recorded).
    older = current.replace(' schema="1"', "")
    older = older[:older.index(" owns=")] + older[older.index('"', older.index(" owns=") + 8) + 1:]
    assert "schema" not in older and "owns" not in older, older
    rewritten(idle4, older)
    restored = cputune({"domains": ["oc-lab-idle-4"], "state": "restored"})
    assert restored["changed"] and not restored.get("failed"), restored
    assert sched(idle4) == before and element_of(idle4) == {"live": None, "config": None}


VANISHING = ("<domain type='qemu'><name>%s</name><memory unit='MiB'>32</memory><vcpu>1</vcpu>"
             "<os><type arch='x86_64'>hvm</type></os></domain>")


def test_a_domain_undefined_while_classes_are_listed_is_left_out_and_the_others_are_handled(lab, libvirt_conn):
    from ansible_collections.overcommit.control.plugins.module_utils.libvirt.client import LibvirtClient
    from ansible_collections.overcommit.control.plugins.module_utils.libvirt.cputune import check_request
    from ansible_collections.overcommit.control.plugins.module_utils.libvirt.cputune_runner import CpuTuneRunner
    from ansible_collections.overcommit.control.plugins.module_utils.libvirt.reader import describe_domains

    name = "oc-it-vanishing-%d" % os.getpid()
    vanishing = libvirt_conn.defineXML(VANISHING % name)
    client = LibvirtClient(lab["OVERCOMMIT_LIBVIRT_URI"])
    try:
        listed = client.all_domains()
        assert name in [domain.name() for domain in listed]
        vanishing.undefine()
        # The list as libvirtd gave it before the domain went: every later call is the real server's.
        client.all_domains = lambda: listed
        params = {"domains": [], "classes": ["shared"], "class_namespace": CLASS_NAMESPACE, "state": "restored",
                  "apply": "auto", "missing": "fail", "lock_dir": "", "shares": None, "floor": 0.25,
                  "expected": None}
        runner = CpuTuneRunner(client, check_request(params, True), now="2026-01-01T00:00:00Z", requested_by="test")
        results = runner.run()
        names = [result["name"] for result in results]
        assert name not in names and "oc-lab-idle-1" in names, results
        assert not [result for result in results if result["name"] == "oc-lab-idle-1" and result.get("failed")]
        described = describe_domains(client, [], ["shared"], CLASS_NAMESPACE, 0, None)
        assert name not in [result["name"] for result in described] and "oc-lab-idle-1" in [
            result["name"] for result in described]
    finally:
        client.close()
        try:
            libvirt_conn.lookupByName(name).undefine()
        except libvirt.libvirtError:
            pass
