"""Measurements the integration tests make on the lab's guests."""

import time

import libvirt


def cpu_rate(conn, domain, seconds=2.0):
    """CPUs used by a domain: the cpu.time rate between two domain-stats samples."""
    def sample():
        stats = conn.domainListGetStats([domain], libvirt.VIR_DOMAIN_STATS_CPU_TOTAL)[0][1]
        return stats["cpu.time"], time.monotonic()

    cpu_before, at_before = sample()
    time.sleep(seconds)
    cpu_after, at_after = sample()
    return (cpu_after - cpu_before) / 1e9 / (at_after - at_before)


# Measurement noise of a 2-second rate on the lab's 2-core machine.
TOLERANCE_CPUS = 0.1


def check_braked(unthrottled, throttled, cap, tolerance=TOLERANCE_CPUS):
    """Asserts that a cap of `cap` CPUs shows in two rates of one guest
    measured in the same test, before and under the cap. How much CPU the
    guest gets unthrottled depends on what else the machine runs, so nothing
    is compared with a fixed figure but the cap itself: the guest must have
    been above it, stays under it, and lost at least half of what the cap
    takes off."""
    assert unthrottled > cap + tolerance, (
        "the guest got only %.2f CPU unthrottled: the machine is too busy to show a cap of %g" % (unthrottled, cap))
    assert throttled <= cap + tolerance, "%.2f CPU under a cap of %g (%.2f unthrottled)" % (throttled, cap, unthrottled)
    assert unthrottled - throttled >= (unthrottled - cap) / 2, (
        "the cap of %g took only %.2f CPU off %.2f" % (cap, unthrottled - throttled, unthrottled))


def check_recovered(unthrottled, throttled, restored):
    """Asserts that a guest got back at least half of what its cap took off,
    against its own rates measured in the same test."""
    assert restored - throttled >= (unthrottled - throttled) / 2, (
        "%.2f CPU after the cap was lifted: %.2f before it, %.2f under it" % (restored, unthrottled, throttled))
