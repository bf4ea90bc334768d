import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import cpu, vm_class


def test_cpus_and_quota_convert_both_ways():
    assert cpu.quota_for_cpus(2, 100000) == 200000
    assert cpu.quota_for_cpus(0.5, 20000) == 10000
    assert cpu.cpus_for_quota(50000, 100000) == 0.5
    assert cpu.cpus_for_quota(-1, 100000) is None
    assert cpu.domain_cpus_from_vcpu_cap(0.5, 4) == 2
    assert cpu.vcpu_cap_from_domain_cpus(2, 4) == 0.5


@pytest.mark.parametrize("cpus,period,field", [(0, 100000, "cpus"), (0.001, 100000, "cpus"), (1, 999, "period")])
def test_out_of_range_names_the_field_and_the_range(cpus, period, field):
    with pytest.raises(ValueRangeError) as error:
        cpu.quota_for_cpus(cpus, period)
    assert error.value.field == field
    assert field + "=" in str(error.value)


def test_negative_raw_quota_means_unlimited():
    assert cpu.check_quota("quota", -5) == -1
    with pytest.raises(ValueRangeError, match="quota=999 is out of range: allowed 1000..17592186044415"):
        cpu.check_quota("quota", 999)


def test_pinned_or_realtime_vcpus_make_a_vm_dedicated():
    assert vm_class.resolve_class("shared", pinned=True)[0] == "dedicated"
    assert vm_class.resolve_class(None, realtime=True)[0] == "dedicated"
    assert vm_class.resolve_class(None) == ("shared", "it has no class (treated as shared)")
    assert vm_class.resolve_class("burstable")[0] == "burstable"


def test_throttle_refusals_and_force():
    with pytest.raises(vm_class.Refusal, match="dedicated"):
        vm_class.check_throttle("dedicated", "its vCPUs are pinned", 2, 1)
    with pytest.raises(vm_class.Refusal, match="under the shared floor of 1 CPUs"):
        vm_class.check_throttle("shared", "", 4, 0.5)
    vm_class.check_throttle("shared", "", 4, 1)
    vm_class.check_throttle("shared", "", 4, 0.5, force=True)
    vm_class.check_throttle("dedicated", "", 2, 1, force=True)


@pytest.mark.parametrize("cap,vcpus,per_vcpu", [(1000, 1, False), (1, 1, False), (4, 4, False), (4.5, 4, False),
                                                (1, 4, True), (500, 2, True)])
def test_a_cap_that_caps_nothing_is_refused_naming_the_field_and_the_vcpus(cap, vcpus, per_vcpu):
    with pytest.raises(ValueRangeError) as error:
        cpu.check_cap_brakes("cpus", cap, cap, vcpus, per_vcpu=per_vcpu)
    assert error.value.field == "cpus" and error.value.value == cap
    message = str(error.value)
    assert message.startswith("cpus=%r is out of range" % cap)
    assert "%d vCPU" % vcpus in message and "caps nothing" in message


@pytest.mark.parametrize("cap,vcpus,per_vcpu", [(0.999, 1, False), (3.5, 4, False), (0.999, 4, True), (None, 1, False)])
def test_a_cap_under_the_vcpus_passes(cap, vcpus, per_vcpu):
    cpu.check_cap_brakes("cpus", cap, cap, vcpus, per_vcpu=per_vcpu)


def test_the_message_gives_the_value_as_written():
    with pytest.raises(ValueRangeError, match=r"^cpus='500' is out of range: allowed under the VM's 2 vCPUs: "
                                              r"a cap of 500 CPU caps nothing"):
        cpu.check_cap_brakes("cpus", "500", 500.0, 2)


def test_libvirts_largest_quota_is_no_cap_as_cgroup_v2_reads_back_max():
    """On a cgroup v2 host libvirt reports an unlimited quota ("max" in
    cpu.max) as 17592186044415, not -1: a domain with no cap is no domain
    capped at 1.76e8 CPUs."""
    v2 = {"global_quota": 17592186044415, "global_period": 100000, "vcpu_quota": 17592186044415,
          "vcpu_period": 100000}
    assert cpu.domain_cpus(v2, 2) is None and cpu.cap_text(v2, 2) == cpu.cpus_text(None)
    assert cpu.ratio(100000, 17592186044415) == float("inf")
    assert cpu.domain_cpus(dict(v2, global_quota=50000), 2) == 0.5


def test_usage_between_two_samples_and_none_when_a_counter_went_back():
    first = {"cpu_time": 10e9, "vcpu_delay": 4e9, "at": 100.0}
    assert cpu.usage_from_samples(first, {"cpu_time": 11e9, "vcpu_delay": 4.5e9, "at": 102.0}) == {
        "cpus_used": 0.5, "steal_cpus": 0.25, "sample_seconds": 2.0}
    # A new QEMU process counts from zero; a vCPU delay missing from one sample reads less.
    assert cpu.usage_from_samples(first, {"cpu_time": 0.2e9, "vcpu_delay": 0.1e9, "at": 102.0}) is None
    assert cpu.usage_from_samples(first, {"cpu_time": 11e9, "vcpu_delay": 3.9e9, "at": 102.0}) is None
