from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.module_utils.domain import cpu
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import plan

UNSET = dict(plan.LIVE_UNSET, cpu_shares=1024)


def domain(name="web-17", before=None, after=None, changed=True, vcpus=4, **extra):
    result = {"name": name, "changed": changed, "vcpus": vcpus, "before": {"live": before or UNSET},
              "after": {"live": after or UNSET}}
    result.update(extra)
    return result


def test_cap_text_says_what_the_whole_domain_or_each_vcpu_may_use():
    assert cpu.cap_text(UNSET, 4) == "unlimited"
    assert cpu.cap_text(dict(UNSET, global_quota=50000), 4) == "0.5 CPU"
    assert cpu.cap_text(dict(UNSET, vcpu_quota=50000), 4) == "0.5 CPU per vCPU (2 CPU in all)"
    # The tighter of the two caps is the one in force.
    assert cpu.cap_text(dict(UNSET, vcpu_quota=50000, global_quota=150000), 4) == "1.5 CPU"
    assert cpu.cap_text({"global_period": 0, "global_quota": 0, "cpu_shares": 0}, 2) == "unlimited"


def test_throttle_lines_give_the_cap_in_force_and_what_it_replaced():
    capped = dict(UNSET, global_quota=50000)
    assert plan.report_line(domain(after=capped), restore=False) == "web-17: 0.5 CPU, was unlimited"
    tighter = dict(UNSET, global_quota=30000)
    assert plan.report_line(domain(before=capped, after=tighter), False) == "web-17: 0.3 CPU, was 0.5 CPU"
    assert plan.report_line(domain(before=capped, after=capped, changed=False), False) == "web-17: 0.5 CPU, unchanged"
    assert plan.report_line(domain(after=capped), False, check_mode=True) == "web-17: would be 0.5 CPU, was unlimited"
    shares = dict(capped, cpu_shares=512)
    assert plan.report_line(domain(after=shares), False) == "web-17: 0.5 CPU, shares 512, was unlimited, shares 1024"


def test_restore_lines_give_what_came_back_and_what_was_lifted():
    capped = dict(UNSET, global_quota=50000)
    assert plan.report_line(domain(before=capped), restore=True) == "web-17: restored to unlimited (was 0.5 CPU)"
    assert plan.report_line(domain(changed=False), True) == "web-17: unlimited, nothing to restore"
    # A domain never throttled: restore plans nothing and reads no tuning.
    never = {"name": "web-18", "changed": False, "vcpus": 1, "before": {"throttle": None}, "after": {"throttle": None}}
    assert plan.report_line(never, True) == "web-18: nothing to restore"


def test_a_shut_off_domain_reports_its_persistent_config():
    config_before = {"global_period": 0, "global_quota": 0, "cpu_shares": 0}
    config_after = dict(config_before, global_period=100000, global_quota=100000)
    result = {"name": "batch-3", "changed": True, "vcpus": 2, "before": {"config": config_before, "throttle": None},
              "after": {"config": config_after, "throttle": {"reason": "x"}}}
    assert plan.report_line(result, False) == "batch-3: 1 CPU from its next start (persistent config), was unlimited"


def test_failed_and_skipped_domains_and_the_whole_report():
    results = [domain(after=dict(UNSET, global_quota=100000)),
               {"name": "batch-3", "changed": False, "failed": True, "msg": "Domain not found"},
               {"name": "web-99", "changed": False, "skipped": True, "msg": "not defined on this host"},
               {"name": "web-98", "changed": False, "skipped": True, "msg": "not defined on this host"}]
    outcome = fleet.summary(results, lambda result: plan.report_line(result, False))
    assert outcome["report"] == ["web-17: 1 CPU, was unlimited", "batch-3: failed: Domain not found",
                                 "2 skipped (not defined on this host)"]
    # The names per outcome stay as they were (set_stats keeps them).
    assert outcome["changed"] == ["web-17"] and outcome["skipped"] == ["web-99", "web-98"]
    assert "report" not in fleet.summary(results)


def test_each_object_runs_on_its_own_and_a_refusal_is_that_objects_result():
    from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal, ValueRangeError
    from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import Refusal
    from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.plan import ChangedSinceRead

    def one(name, result):
        result["class"] = "shared"  # filled before the refusal: kept
        if name == "dedicated-1":
            raise Refusal("class dedicated: not capped without force")
        if name == "edited-1":
            raise ChangedSinceRead("its cap changed since it was read", {"cap_cpus": 2})
        if name == "bad-record":
            raise ValueRangeError("record", "x", "a throttle record")
        if name == "early":
            return {"name": name, "skipped": True}
        result["changed"] = True

    names = ["web-1", "dedicated-1", "edited-1", "bad-record", "early", "web-2"]
    for workers in (1, 3):
        results = fleet.each(names, one, workers=workers)
        assert [r["name"] for r in results] == names
        by_name = dict((r["name"], r) for r in results)
        assert by_name["web-1"] == {"name": "web-1", "changed": True, "class": "shared"}
        assert by_name["dedicated-1"] == {"name": "dedicated-1", "changed": False, "class": "shared", "failed": True,
                                          "msg": "class dedicated: not capped without force"}
        assert by_name["edited-1"]["conflict"] and by_name["edited-1"]["seen"] == {"cap_cpus": 2}
        assert not by_name["edited-1"].get("failed")
        assert by_name["bad-record"]["failed"] and "record=" in by_name["bad-record"]["msg"]
        assert by_name["early"] == {"name": "early", "skipped": True}
    summary = fleet.summary(results)
    assert summary["changed"] == ["web-1", "web-2"] and summary["conflict"] == ["edited-1"]
    assert sorted(summary["failed"]) == ["bad-record", "dedicated-1"]
    assert issubclass(Refusal, ObjectRefusal)


def test_each_lets_anything_that_is_no_refusal_through():
    """A bug is no object's refusal: it ends the task (and shows), it is not
    turned into one VM's failed result."""
    import pytest

    def one(name, result):
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        fleet.each(["web-1"], one)


def test_every_per_object_error_of_the_collection_is_an_object_refusal_or_a_field_error():
    from ansible_collections.overcommit.control.plugins.module_utils.common.errors import PER_OBJECT
    from ansible_collections.overcommit.control.plugins.module_utils.common.untrusted import UntrustedValueError
    from ansible_collections.overcommit.control.plugins.module_utils.domain.plan import PlanExpired
    from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.state import LimitRefusal
    from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import K8sClientError
    from ansible_collections.overcommit.control.plugins.module_utils.k8s.gate.plan import GateRefusal
    from ansible_collections.overcommit.control.plugins.module_utils.k8s.static.instancetypes import NotOurs
    from ansible_collections.overcommit.control.plugins.module_utils.k8s.static.vm_resources import VmRefusal
    from ansible_collections.overcommit.control.plugins.module_utils.libvirt.client import LibvirtClientError
    from ansible_collections.overcommit.control.plugins.module_utils.libvirt.lock import LockError
    from ansible_collections.overcommit.control.plugins.module_utils.prometheus.client import PrometheusError
    from ansible_collections.overcommit.control.plugins.module_utils.vsphere.client import VsphereClientError
    for error in (UntrustedValueError, plan.PlanError, PlanExpired, LimitRefusal, K8sClientError, GateRefusal,
                  NotOurs, VmRefusal, LibvirtClientError, LockError, PrometheusError, VsphereClientError):
        assert issubclass(error, PER_OBJECT), error
    # The field errors say only why, not the (possibly large) value, and name the field.
    assert str(UntrustedValueError("too deeply nested")) == "too deeply nested"
    assert UntrustedValueError("x", "state").field == "state"
    error = plan.PlanError("the domain is shut off", "apply")
    assert (str(error), error.field) == ("the domain is shut off", "apply")
