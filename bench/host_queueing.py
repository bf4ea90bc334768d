# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Calibrates the simulator's host model on the lab's libvirtd: how long a
light VM's vCPU waits for a CPU when the host is busy, measured beside the
model's figure for the same load, in one run.

A guest that wants part of one CPU (a boot sector that halts until the next
100 Hz timer tick, then counts down a fixed number of loops: the same work
every tick, whatever the host does) runs beside 0, 1, 2 and 3 spinning
guests on the host's cores, at two levels of demand. For each, the script
measures what libvirt reports (cpu.time, the vCPUs' delay) for every guest,
the host's busy CPUs (/proc/stat) and its CPU pressure (/proc/pressure/cpu,
the `some` total over the window), and runs the host model
(plugins/module_utils/simulate/host_model.py) on the same demands: the
light guest's demand is what it used alone, each spinner wants one CPU, and
what the host itself ran (busy CPUs less the guests') is one more consumer.
It prints the measured delay beside the fluid share-out's (which says a VM
under its fair share never waits) and beside the model with the queue_delay
fitted here (least squares over every point), and the fitted value.

    source scripts/lib.sh
    $VENV/bin/python bench/host_queueing.py [--seconds 12] [--repeat 1] [--json FILE]
    $VENV/bin/python bench/host_queueing.py --from bench/recorded/host_queueing_lab.json

The second form reports on a recorded run without measuring: the one in
bench/recorded is the run QUEUE_DELAY was fitted on (the unit tests check
that the value shipped is its fit).

Needs the lab (tests/testbed/lab up): it starts and stops the lab's busy
guests and runs its light guest as a transient domain (nothing is left
defined). Nothing else may load the host while it runs.
"""

import argparse
import os
import sys
import tempfile
import time

import libvirt

import lab_guests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))

from ansible_collections.overcommit.control.plugins.module_utils.libvirt.client import LibvirtClient  # noqa: E402
from ansible_collections.overcommit.control.plugins.module_utils.simulate import host_model  # noqa: E402

URI = "qemu:///system"
LIGHT = "oc-lab-duty-1"
SPINNERS = ("oc-lab-busy-1", "oc-lab-busy-2", "oc-lab-busy-3")
LEVELS = (0.25, 0.5)


def host_counters():
    with open("/proc/stat") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    idle = fields[3] + fields[4]
    with open("/proc/pressure/cpu") as handle:
        some_total = int(handle.readline().split("total=")[1])
    return {"busy": (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK"), "some": some_total / 1e6}


def domain_counters(client, domains):
    """{name: (CPU seconds used, vCPU seconds waited)} of each domain, from the
    collection's own libvirt client (one domain-stats call for all)."""
    return dict((name, (sample["cpu_time"] / 1e9, sample["vcpu_delay"] / 1e9))
                for name, sample in client.cpu_samples(domains).items())


def measure(client, domains, seconds):
    """CPUs used and vCPU delay of each domain, the host's busy CPUs and its
    pressure (share of time some task waited), over `seconds`."""
    before, host_before, start = domain_counters(client, domains), host_counters(), time.monotonic()
    time.sleep(seconds)
    after, host_after, elapsed = domain_counters(client, domains), host_counters(), time.monotonic() - start
    rates = dict((name, ((after[name][0] - before[name][0]) / elapsed, (after[name][1] - before[name][1]) / elapsed))
                 for name in after)
    return rates, (host_after["busy"] - host_before["busy"]) / elapsed, \
        100.0 * (host_after["some"] - host_before["some"]) / elapsed


def light_guest(conn, disk_dir, loops):
    disk = os.path.join(disk_dir, "%s-%d.img" % (LIGHT, loops))
    with open(disk, "wb") as handle:
        handle.write(lab_guests.duty_boot_sector(loops))
    return conn.createXML(lab_guests.guest_xml(LIGHT, disk), 0)


def stop(domain):
    try:
        domain.destroy()
    except libvirt.libvirtError:
        pass


def set_spinners(conn, count):
    for position, name in enumerate(SPINNERS):
        domain = conn.lookupByName(name)
        if position < count and not domain.isActive():
            domain.create()
        elif position >= count and domain.isActive():
            domain.destroy()


def run(seconds, repeat, settle=4.0):
    client = LibvirtClient(URI)
    conn = client.conn
    cpus = os.cpu_count()
    points = []
    with tempfile.TemporaryDirectory(prefix="oc-queueing-") as disk_dir:
        try:
            set_spinners(conn, 0)
            probe = light_guest(conn, disk_dir, lab_guests.PROBE_LOOPS)
            time.sleep(settle)
            (probe_used, _delay), = [measure(client, [probe], seconds)[0][LIGHT]]
            stop(probe)
            idle_guest = light_guest(conn, disk_dir, 1)
            time.sleep(settle)
            (timer_used, _delay), = [measure(client, [idle_guest], seconds)[0][LIGHT]]
            stop(idle_guest)
            for level in LEVELS:
                loops = lab_guests.duty_loops(level, probe_used, timer_used)
                guest = light_guest(conn, disk_dir, loops)
                for _round in range(repeat):
                    alone = None
                    for spinners in range(len(SPINNERS) + 1):
                        set_spinners(conn, spinners)
                        time.sleep(settle)
                        domains = [guest] + [conn.lookupByName(name) for name in SPINNERS[:spinners]]
                        rates, busy, some = measure(client, domains, seconds)
                        used, delay = rates[LIGHT]
                        if spinners == 0:
                            alone = used
                        spinner_used = [rates[name][0] for name in SPINNERS[:spinners]]
                        background = max(0.0, busy - sum(rate[0] for rate in rates.values()))
                        points.append({"level": level, "spinners": spinners, "demand": round(alone, 3),
                                       "used": round(used, 3), "delay": round(delay, 3),
                                       "spinner_used": round(sum(spinner_used) / spinners, 3) if spinners else None,
                                       "background": round(background, 3), "some": round(some, 1)})
                stop(guest)
        finally:
            set_spinners(conn, 0)
            for domain in conn.listAllDomains(0):
                if domain.name() == LIGHT:
                    stop(domain)
    return cpus, points


def report(cpus, points, queue_delay):
    print("light guest beside spinning guests on %d cores (lab, libvirt vCPU delay; CPUs):" % cpus)
    print("  %-6s %-9s %-7s %-7s %-7s %-8s %-8s %-9s %-9s %-7s %s" % (
        "level", "spinners", "used", "delay", "fluid", "model", "shipped", "spin used", "spin mod", "PSI %", "PSI mod"))
    for point in points:
        fluid = host_model.lab_point(cpus, point, 0.0)[0]
        fitted, spin_model, some_model = host_model.lab_point(cpus, point, queue_delay)
        shipped = host_model.lab_point(cpus, point, host_model.QUEUE_DELAY)[0]
        print(("  %-6s %-9d %-7.3f %-7.3f %-7.3f %-8.3f %-8.3f %-9s %-9s %-7.1f %.1f" % (
            point["level"], point["spinners"], point["used"], point["delay"], fluid, fitted, shipped,
            "-" if point["spinner_used"] is None else "%.3f" % point["spinner_used"],
            "-" if spin_model is None else "%.3f" % spin_model, point["some"], some_model)).rstrip())
    print("  queue_delay fitted: %.3f (shipped in host_model.QUEUE_DELAY: %g)" % (queue_delay, host_model.QUEUE_DELAY))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--seconds", type=float, default=12.0, help="length of each measurement")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of the four loads at each level")
    lab_guests.bench_arguments(parser, accel=False)
    args = parser.parse_args()
    recorded = lab_guests.recorded_or_run(args, lambda: dict(zip(("cpus", "points"), run(args.seconds, args.repeat))))
    cpus, points = recorded["cpus"], recorded["points"]
    report(cpus, points, host_model.fit_queue_delay(cpus, points))


if __name__ == "__main__":
    main()
