import xml.etree.ElementTree as ET

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import cpu
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml, plan

LIVE_DEFAULT = dict(plan.LIVE_UNSET, cpu_shares=1024)
CONFIG_DEFAULT = dict((key, 0) for key in plan.TUNE_KEYS)


def state(live=None, config=None, record=None, active=True):
    current = {}
    if live is not None:
        current["live"] = live
    if config is not None:
        current["config"] = config
    return {"current": current, "record": record, "active": active}


def apply_writes(current, writes):
    result = dict(current)
    for key, value in writes:
        result[key] = value
        assert plan.hierarchy_violation(result) is None, (key, result)
    return result


def test_cap_values_for_domain_and_vcpu_scopes():
    assert plan.cap_values(4, cpus=2) == {"global_period": 100000, "global_quota": 200000}
    assert plan.cap_values(4, cpus=0.5, scope="vcpu", period=50000) == {"vcpu_period": 50000, "vcpu_quota": 25000}
    assert plan.cap_values(1, quota=-7, shares=512) == {"global_period": 100000, "global_quota": -1, "cpu_shares": 512}
    assert cpu.domain_cpus({"vcpu_period": 100000, "vcpu_quota": 50000}, 4) == 2
    assert cpu.domain_cpus({"cpu_shares": 512}, 4) is None


@pytest.mark.parametrize("cap_args,vcpus,field,value", [
    ({"cpus": 1000}, 1, "cpus", 1000),
    ({"cpus": 1}, 1, "cpus", 1),
    ({"cpus": 2}, 2, "cpus", 2),
    ({"cpus": 1, "scope": "vcpu"}, 4, "cpus", 1),
    ({"quota": 400000}, 4, "quota", 400000),
    ({"quota": 100000, "period": 50000, "scope": "vcpu"}, 2, "quota", 100000),
    # libvirt's largest quota, which it reads back as no limit on cgroup v2: asked for, it caps nothing.
    ({"quota": 17592186044415}, 4, "quota", 17592186044415),
])
def test_a_cap_that_caps_nothing_is_refused_before_any_plan(cap_args, vcpus, field, value):
    cap = plan.cap_values(1, **cap_args)
    with pytest.raises(ValueRangeError) as error:
        plan.check_cap_brakes(cap, vcpus, field, value)
    assert error.value.field == field and "%d vCPU" % vcpus in str(error.value)


@pytest.mark.parametrize("cap_args,vcpus", [
    ({"cpus": 0.5}, 1), ({"cpus": 3.9}, 4), ({"cpus": 0.9, "scope": "vcpu"}, 1), ({"quota": -1}, 1),
    ({"shares": 512}, 1), ({"emulator_cpus": 2}, 1),
])
def test_a_cap_under_the_vcpus_or_no_cpu_cap_passes(cap_args, vcpus):
    plan.check_cap_brakes(plan.cap_values(1, **cap_args), vcpus, "cpus", cap_args.get("cpus"))


def test_switching_from_per_vcpu_to_whole_domain_cap_orders_writes_for_cgroup_v1():
    current = dict(LIVE_DEFAULT, vcpu_quota=50000)
    target = dict(LIVE_DEFAULT, global_quota=30000)
    writes = plan.live_write_order(current, target)
    assert [key for key, _value in writes] == ["vcpu_quota", "global_quota"]
    assert apply_writes(current, writes) == target


def test_raising_a_parent_and_its_child_writes_the_parent_first():
    current = dict(LIVE_DEFAULT, global_quota=30000, vcpu_quota=20000)
    target = dict(LIVE_DEFAULT, global_quota=80000, vcpu_quota=60000)
    writes = plan.live_write_order(current, target)
    assert writes[0] == ("global_quota", 80000)
    assert apply_writes(current, writes) == target


def test_a_period_change_that_would_transiently_break_the_hierarchy_is_ordered_around():
    current = dict(LIVE_DEFAULT, global_quota=60000, vcpu_quota=50000)
    target = dict(LIVE_DEFAULT, global_quota=60000, vcpu_period=20000, vcpu_quota=10000)
    assert apply_writes(current, plan.live_write_order(current, target)) == target


def test_a_child_cap_above_the_domain_cap_is_refused_with_the_reason():
    with pytest.raises(plan.PlanError, match="vcpu cap .0.5 CPU. exceeds the whole-domain cap .0.3 CPU"):
        plan.live_write_order(LIVE_DEFAULT, dict(LIVE_DEFAULT, global_quota=30000, vcpu_quota=50000))


def test_domain_cap_lowers_a_looser_custom_vcpu_cap_and_restore_brings_it_back():
    custom = dict(LIVE_DEFAULT, vcpu_quota=80000, cpu_shares=2048)
    planned = plan.plan_throttle(state(live=custom), plan.cap_values(2, cpus=0.5), ["live"], {"reason": "x"})
    after = planned["changes"]["live"]["after"]
    assert after["global_quota"] == 50000 and after["vcpu_quota"] == 50000 and after["cpu_shares"] == 2048
    assert planned["record_after"]["previous"]["live"] == custom

    throttled = state(live=after, record=planned["record_after"])
    restored = plan.plan_restore(throttled, ["live"])
    assert restored["changes"]["live"]["after"] == custom
    assert restored["record_after"] is None


def test_rethrottle_keeps_the_first_previous_values_and_same_cap_is_a_no_op():
    first = plan.plan_throttle(state(live=LIVE_DEFAULT, config=CONFIG_DEFAULT), plan.cap_values(2, cpus=1),
                               ["live", "config"], {"reason": "first"})
    throttled = state(live=first["changes"]["live"]["after"], config=first["changes"]["config"]["after"],
                      record=first["record_after"])
    again = plan.plan_throttle(throttled, plan.cap_values(2, cpus=1), ["live", "config"], {"reason": "again"})
    assert again["record_after"] is first["record_after"]
    assert not any(plan.changed(c["before"], c["after"]) for c in again["changes"].values())
    tighter = plan.plan_throttle(throttled, plan.cap_values(2, cpus=0.5), ["live", "config"], {"reason": "tighter"})
    assert tighter["record_after"]["previous"] == {"live": LIVE_DEFAULT, "config": CONFIG_DEFAULT}
    assert tighter["record_after"]["reason"] == "tighter"


def test_the_record_owns_what_the_throttle_set_and_restore_leaves_a_value_it_never_set_as_someone_else_changed_it():
    first = plan.plan_throttle(state(live=LIVE_DEFAULT, config=CONFIG_DEFAULT), plan.cap_values(2, cpus=1),
                               ["live", "config"], {"reason": "first"})
    assert first["record_after"]["owns"] == ["global_period", "global_quota"]
    # Someone else raises the shares meanwhile, live and persistent.
    live = dict(first["changes"]["live"]["after"], cpu_shares=4096)
    config = dict(first["changes"]["config"]["after"], cpu_shares=4096)
    throttled = state(live=live, config=config, record=first["record_after"])

    # A tighter throttle keeps their shares, records them as they are, and owns the same keys.
    tighter = plan.plan_throttle(throttled, plan.cap_values(2, cpus=0.5), ["live", "config"], {"reason": "tighter"})
    assert tighter["changes"]["live"]["after"]["cpu_shares"] == 4096
    assert tighter["changes"]["config"]["after"]["cpu_shares"] == 4096
    assert tighter["record_after"]["previous"]["live"] == dict(LIVE_DEFAULT, cpu_shares=4096)
    assert tighter["record_after"]["owns"] == ["global_period", "global_quota"]

    restored = plan.plan_restore(throttled, ["live", "config"])
    assert restored["changes"]["live"]["after"] == dict(LIVE_DEFAULT, cpu_shares=4096)
    assert restored["changes"]["config"]["after"] == dict(CONFIG_DEFAULT, cpu_shares=4096)
    assert restored["record_after"] is None


def test_switching_scope_owns_both_and_restore_returns_both():
    first = plan.plan_throttle(state(live=LIVE_DEFAULT), plan.cap_values(2, cpus=1), ["live"], {"reason": "x"})
    after = first["changes"]["live"]["after"]
    switched = plan.plan_throttle(state(live=after, record=first["record_after"]),
                                  plan.cap_values(2, cpus=0.25, scope="vcpu"), ["live"], {"reason": "y"})
    assert switched["changes"]["live"]["after"]["global_quota"] == plan.LIVE_UNSET["global_quota"]
    # Live periods are 100000 already: only the quotas were set.
    assert switched["record_after"]["owns"] == ["vcpu_quota", "global_quota"]
    restored = plan.plan_restore(state(live=switched["changes"]["live"]["after"], record=switched["record_after"]),
                                 ["live"])
    assert restored["changes"]["live"]["after"] == LIVE_DEFAULT


def test_a_record_without_owns_restores_all_it_recorded():
    record = {"reason": "x", "previous": {"live": LIVE_DEFAULT}}
    live = dict(LIVE_DEFAULT, global_quota=50000, cpu_shares=4096)
    restored = plan.plan_restore(state(live=live, record=record), ["live"])
    assert restored["changes"]["live"]["after"] == LIVE_DEFAULT


def test_restoring_a_domain_never_throttled_changes_nothing():
    assert plan.plan_restore(state(live=LIVE_DEFAULT), ["live"]) == {
        "changes": {}, "record_before": None, "record_after": None}


def test_domain_throttled_while_shut_off_restores_live_from_its_recorded_config():
    config_custom = dict(CONFIG_DEFAULT, global_period=100000, global_quota=150000)
    record = {"reason": "x", "previous": {"config": config_custom}}
    running = state(live=dict(LIVE_DEFAULT, global_quota=50000), config=dict(config_custom, global_quota=50000),
                    record=record)
    restored = plan.plan_restore(running, ["live", "config"])
    assert restored["changes"]["live"]["after"]["global_quota"] == 150000
    assert restored["changes"]["config"]["after"] == config_custom


@pytest.mark.parametrize("apply,active,persistent,expected", [
    ("auto", True, True, ["live", "config"]),
    ("auto", True, False, ["live"]),
    ("auto", False, True, ["config"]),
    ("config", True, True, ["config"]),
])
def test_apply_targets(apply, active, persistent, expected):
    assert plan.targets_for(apply, active, persistent) == expected


def test_live_on_a_shut_off_domain_is_refused():
    with pytest.raises(plan.PlanError, match="shut off"):
        plan.targets_for("live", False, True)
    with pytest.raises(plan.PlanError, match="transient"):
        plan.targets_for("both", True, False)


def test_record_round_trips_through_domain_xml():
    record = {"reason": "INC-1 <noisy> & \"loud\"", "time": "2026-11-29T10:00:00Z", "by": "sre", "class": "shared",
              "scope": "domain", "cpus": 2.0, "owns": ["global_period", "global_quota"],
              "previous": {"live": LIVE_DEFAULT, "config": CONFIG_DEFAULT}}
    element = domain_xml.record_xml(record)
    xml = ("<domain><vcpu current='2'>4</vcpu><metadata>%s</metadata></domain>"
           % element.replace("<throttle", "<oc:throttle xmlns:oc='%s'" % domain_xml.THROTTLE_NAMESPACE, 1)
           .replace("</throttle>", "</oc:throttle>").replace("<previous", "<oc:previous")
           .replace("</previous>", "</oc:previous>"))
    described = domain_xml.describe(xml)
    assert described["record"] == record
    assert described["vcpus"] == 2 and described["max_vcpus"] == 4


def test_class_pinning_and_realtime_are_read_from_domain_xml():
    xml = """<domain><vcpu>2</vcpu><cputune><vcpupin vcpu='0' cpuset='1'/><vcpusched vcpus='0' scheduler='fifo'/>
             </cputune><metadata><vm xmlns='%s'><class>burstable</class></vm></metadata></domain>""" % (
        domain_xml.CLASS_NAMESPACE)
    described = domain_xml.describe(xml)
    assert described["pinned"] and described["realtime"] and described["declared_class"] == "burstable"


def domain_with_record(attributes, previous=""):
    return ("<domain><vcpu>2</vcpu><metadata><oc:throttle xmlns:oc='%s' %s>%s</oc:throttle></metadata></domain>"
            % (domain_xml.THROTTLE_NAMESPACE, attributes, previous))


@pytest.mark.parametrize("attributes,previous,field", [
    ("cpus='lots'", "", "throttle.cpus"),
    ("cpus='0'", "", "throttle.cpus"),
    ("cpus='nan'", "", "throttle.cpus"),
    ("cpus='-2'", "", "throttle.cpus"),
    ("cpus='1'", "<oc:previous target='live' global_quota='unlimited'/>", "throttle.previous.live.global_quota"),
    ("cpus='1'", "<oc:previous target='live' global_quota='5'/>", "throttle.previous.live.global_quota"),
    ("cpus='1'", "<oc:previous target='config' vcpu_period='50'/>", "throttle.previous.config.vcpu_period"),
    ("cpus='1'", "<oc:previous target='config' cpu_shares='-3'/>", "throttle.previous.config.cpu_shares"),
    ("cpus='1'", "<oc:previous target='live' emulator_period='1.5'/>", "throttle.previous.live.emulator_period"),
    ("cpus='1' owns='global_quota memory'", "", "throttle.owns"),
    ("cpus='1' owns='%s'" % ("global_quota " * 20000), "", "throttle.owns"),
])
def test_a_hand_edited_record_restore_could_not_write_back_is_refused_naming_its_field(attributes, previous, field):
    with pytest.raises(domain_xml.RecordError) as error:
        domain_xml.describe(domain_with_record(attributes, previous))
    assert error.value.field == field
    assert str(error.value).startswith("the throttle record in the domain's metadata cannot be used: %s=" % field)
    # The class is still told from the same XML: selection by class does not need the record.
    facts = domain_xml.class_facts(ET.fromstring(domain_with_record(attributes, previous)))
    assert facts == {"pinned": False, "realtime": False, "declared_class": None, "baseline_cpus": None}


def test_recorded_values_as_libvirt_reports_them_are_accepted():
    previous = ("<oc:previous target='live' global_period='100000' global_quota='-1' cpu_shares='1024'/>"
                "<oc:previous target='config' global_period='0' global_quota='0' vcpu_quota='-1' cpu_shares='0'/>")
    record = domain_xml.describe(domain_with_record("cpus='0.5' reason='INC-1'", previous))["record"]
    assert record["cpus"] == 0.5 and record["previous"]["live"]["global_quota"] == -1
    assert record["previous"]["config"] == {"cpu_shares": 0, "vcpu_quota": -1, "global_period": 0, "global_quota": 0}


DEFINITION = """<domain type='qemu'>
  <name>web-1</name>
  <metadata>
    <octhrottle:throttle xmlns:octhrottle="https://overcommit.control/xmlns/throttle/1" schema="1"/>
  </metadata>
  <vcpu placement='static'>2</vcpu>
  <cputune>
    <shares>293</shares>
    <period>100000</period>
  </cputune>
  <devices><disk type='file'><blkiotune><shares>5</shares></blkiotune></disk></devices>
</domain>
"""


def test_the_config_shares_are_taken_out_by_a_text_edit_of_that_element_alone():
    edited = domain_xml.without_config_shares(DEFINITION)
    assert "<shares>293</shares>" not in edited and "<shares>5</shares>" in edited
    assert "<cputune>\n    <period>100000</period>\n  </cputune>" in edited
    # Everything else is byte for byte as libvirt wrote it: the metadata keeps its own prefix.
    assert edited.replace("<cputune>\n    <period>100000</period>\n  </cputune>", "") == \
        DEFINITION.replace("<cputune>\n    <shares>293</shares>\n    <period>100000</period>\n  </cputune>", "")
    only_shares = DEFINITION.replace("\n    <period>100000</period>", "")
    assert "<cputune>" not in domain_xml.without_config_shares(only_shares)
    assert domain_xml.without_config_shares(domain_xml.without_config_shares(only_shares)) == \
        domain_xml.without_config_shares(only_shares)


@pytest.mark.parametrize("pins, host_cpus, pinned", [
    ("", 4, False),
    ("<vcpupin vcpu='0' cpuset='2'/>", 4, True),
    ("<vcpupin vcpu='0' cpuset='0-3'/>", 4, False),
    ("<vcpupin vcpu='0' cpuset='0-3'/><vcpupin vcpu='1' cpuset='0-3'/>", 4, False),
    ("<vcpupin vcpu='0' cpuset='0-3'/><vcpupin vcpu='1' cpuset='1'/>", 4, True),
    ("<vcpupin vcpu='0' cpuset='0-3,^2'/>", 4, True),
    ("<vcpupin vcpu='0' cpuset='0,1,2,3'/>", 4, False),
    # A set that cannot be read, or a host of unknown size: a pin is a pin.
    ("<vcpupin vcpu='0' cpuset='0-x'/>", 4, True),
    ("<vcpupin vcpu='0' cpuset='0-3'/>", None, True),
])
def test_a_vcpu_pinned_to_every_host_cpu_is_not_pinned(pins, host_cpus, pinned):
    root = ET.fromstring("<domain><vcpu>2</vcpu><cputune>%s</cputune></domain>" % pins)
    assert domain_xml.class_facts(root, host_cpus=host_cpus)["pinned"] is pinned
