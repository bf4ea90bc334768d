"""The lab's libvirtd is real: a live whole-domain quota slows a busy guest."""

import libvirt
import pytest

from measure import check_braked, check_recovered, cpu_rate

pytestmark = pytest.mark.xdist_group("libvirt")


@pytest.mark.serial  # measures the guest's CPU rate against its own
def test_busy_guest_burns_one_cpu_until_a_global_quota_caps_it(libvirt_conn, busy_guest):
    # Unthrottled it takes what the 2-core host gives it (near 1 CPU when the host is idle):
    # the capped rate is compared with that, measured now, not with a fixed figure.
    unthrottled = cpu_rate(libvirt_conn, busy_guest)

    busy_guest.setSchedulerParametersFlags(
        {"global_period": 100000, "global_quota": 20000}, libvirt.VIR_DOMAIN_AFFECT_LIVE)
    throttled = cpu_rate(libvirt_conn, busy_guest)
    check_braked(unthrottled, throttled, 0.2)

    busy_guest.setSchedulerParametersFlags({"global_quota": -1}, libvirt.VIR_DOMAIN_AFFECT_LIVE)
    check_recovered(unthrottled, throttled, cpu_rate(libvirt_conn, busy_guest))


def test_lab_guests_cover_the_classes(libvirt_conn):
    dedicated = libvirt_conn.lookupByName("oc-lab-dedicated-2")
    assert dedicated.isActive()
    assert "<vcpupin" in dedicated.XMLDesc(0)
    idle = libvirt_conn.lookupByName("oc-lab-idle-4")
    assert idle.maxVcpus() == 4
    assert cpu_rate(libvirt_conn, idle, seconds=1.0) < 0.2
