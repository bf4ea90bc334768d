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
