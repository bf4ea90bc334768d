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
