"""The lab's libvirtd is real: a live whole-domain quota slows a busy guest."""

import libvirt

from measure import cpu_rate


def test_busy_guest_burns_one_cpu_until_a_global_quota_caps_it(libvirt_conn, busy_guest):
    # Unthrottled it takes what the 2-core host gives it: near 1 CPU when idle.
    unthrottled = cpu_rate(libvirt_conn, busy_guest)
    assert unthrottled > 0.5

    busy_guest.setSchedulerParametersFlags(
        {"global_period": 100000, "global_quota": 20000}, libvirt.VIR_DOMAIN_AFFECT_LIVE)
    throttled = cpu_rate(libvirt_conn, busy_guest)
    assert 0.1 < throttled < 0.3, throttled

    busy_guest.setSchedulerParametersFlags({"global_quota": -1}, libvirt.VIR_DOMAIN_AFFECT_LIVE)
    assert cpu_rate(libvirt_conn, busy_guest) > throttled + 0.25


def test_lab_guests_cover_the_classes(libvirt_conn):
    dedicated = libvirt_conn.lookupByName("oc-lab-dedicated-2")
    assert dedicated.isActive()
    assert "<vcpupin" in dedicated.XMLDesc(0)
    idle = libvirt_conn.lookupByName("oc-lab-idle-4")
    assert idle.maxVcpus() == 4
    assert cpu_rate(libvirt_conn, idle, seconds=1.0) < 0.2
