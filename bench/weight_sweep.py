# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a CPU weight does for a light guest beside spinning ones, measured
on the lab's libvirtd beside the simulator's model of it, in one run.

A light guest of one vCPU that wants a quarter of a CPU (a boot sector that
halts until each 100 Hz timer tick, then counts down a fixed number of
loops) runs beside two spinning guests, unpinned, on the host's cores. For
each pair of the spinners' `cpu_shares` (both at the default; one demoted
to 512, 228, 64 or 2; both demoted to 228, 64 or 2), the script measures
the light guest's wait ratio (vCPU delay / (used + delay), from libvirt's
domain stats) and the spinners' CPUs, and prints them beside the host
model's (plugins/module_utils/simulate/host_model.py) with the shipped
WEIGHT_EXPONENTS and with the ones fitted here (least squares over the
points where the weights differ), and the fitted value. Each arm is
measured `--repeat` times, arms interleaved; the spread is printed.

    source scripts/lib.sh
    $VENV/bin/python bench/weight_sweep.py [--seconds 10] [--repeat 2] [--accel auto|kvm|qemu] [--json FILE]
    $VENV/bin/python bench/weight_sweep.py --from bench/recorded/weight_sweep_lab.json

The second form reports on a recorded run without measuring: the one in
bench/recorded is the run WEIGHT_EXPONENTS were fitted on (the unit tests
check that the values shipped are its fit).

Needs the lab's libvirtd (tests/testbed/lab up libvirt). Its guests are
transient (nothing is left defined); the lab's own spinning guests are shut
off while it runs. Nothing else may load the host while it runs.
"""

import argparse
import os
import statistics
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
PREFIX = "oc-weight-"
LIGHT = PREFIX + "light"
SPINNERS = (PREFIX + "spin-1", PREFIX + "spin-2")
LAB_SPINNERS = ("oc-lab-busy-1", "oc-lab-busy-2", "oc-lab-busy-3")
LEVEL = 0.25
# The spinners' shares per arm; None is the host's default weight.
ARMS = ((None, None), (512, None), (228, None), (64, None), (2, None), (228, 228), (64, 64), (2, 2))
LIVE = libvirt.VIR_DOMAIN_AFFECT_LIVE


def host_busy():
    with open("/proc/stat") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def measure(client, domains, seconds):
    """{name: (CPUs used, CPUs' worth of vCPU delay)} and the host's busy CPUs over `seconds`."""
    before, busy_before, start = client.cpu_samples(domains), host_busy(), time.monotonic()
    time.sleep(seconds)
    after, busy_after, elapsed = client.cpu_samples(domains), host_busy(), time.monotonic() - start
    rates = dict((name, ((after[name]["cpu_time"] - before[name]["cpu_time"]) / 1e9 / elapsed,
                         (after[name]["vcpu_delay"] - before[name]["vcpu_delay"]) / 1e9 / elapsed)) for name in after)
    return rates, (busy_after - busy_before) / elapsed


def start(conn, disk_dir, name, sector, domain_type):
    disk = os.path.join(disk_dir, name + ".img")
    with open(disk, "wb") as handle:
        handle.write(sector)
    return conn.createXML(lab_guests.guest_xml(name, disk, domain_type=domain_type), 0)


def stop(domain):
    try:
        domain.destroy()
    except libvirt.libvirtError:
        pass


def calibrated_light(client, conn, disk_dir, domain_type, seconds, settle):
    """The light guest running at about LEVEL CPUs, and what it uses alone
    (lab_guests.calibrated)."""
    def used_by(loops):
        domain = start(conn, disk_dir, LIGHT, lab_guests.duty_boot_sector(loops), domain_type)
        time.sleep(settle)
        return domain, lab_guests.cpu_rate(client, domain, seconds)

    light, _loops, used = lab_guests.calibrated(LEVEL, used_by)
    return light, used


def run(seconds, repeat, accel, settle=3.0):
    client = LibvirtClient(URI)
    conn = client.conn
    domain_type = lab_guests.domain_type(conn, accel)
    points = []
    with tempfile.TemporaryDirectory(prefix="oc-weight-") as disk_dir:
        try:
            for name in LAB_SPINNERS:
                domain = conn.lookupByName(name)
                if domain.isActive():
                    domain.destroy()
            light, demand = calibrated_light(client, conn, disk_dir, domain_type, seconds, settle)
            default = light.schedulerParametersFlags(LIVE)["cpu_shares"]
            spinners = [start(conn, disk_dir, name, lab_guests.SPIN_BOOT_SECTOR, domain_type) for name in SPINNERS]
            for _round in range(repeat):
                for arm in ARMS:
                    shares = [default if value is None else value for value in arm]
                    for domain, value in zip(spinners, shares):
                        domain.setSchedulerParametersFlags({"cpu_shares": value}, LIVE)
                    time.sleep(settle)
                    rates, busy = measure(client, [light] + spinners, seconds)
                    used, delay = rates[LIGHT]
                    background = max(0.0, busy - sum(rate[0] for rate in rates.values()))
                    points.append({"spinner_shares": shares, "light_shares": default, "default_shares": default,
                                   "demand": round(demand, 3), "used": round(used, 3), "delay": round(delay, 3),
                                   "spinner_used": [round(rates[name][0], 3) for name in SPINNERS],
                                   "background": round(background, 3)})
        finally:
            for domain in conn.listAllDomains(0):
                if domain.name().startswith(PREFIX):
                    stop(domain)
    return {"cpus": os.cpu_count(), "domain_type": domain_type, "level": LEVEL, "seconds": seconds,
            "points": points}


def arm_of(point):
    return tuple(point["spinner_shares"])


def report(record, exponents):
    cpus, points = record["cpus"], record["points"]
    print("light guest (%.2f CPU alone) beside two spinning guests, %d cores, %s guests, %g s per arm;"
          % (points[0]["demand"], cpus, "KVM" if record["domain_type"] == "kvm" else "TCG", record["seconds"]))
    print("wait ratio = vCPU delay / (used + delay), mean (min-max) over %d rounds; model beside:"
          % (len(points) // len(set(arm_of(p) for p in points))))
    print("  %-13s %-20s %-9s %-9s %-9s %s" % ("spinner shares", "measured", "shipped", "fitted", "fluid",
                                               "spinners' CPUs measured / modelled"))
    arms = []
    for point in points:
        if arm_of(point) not in arms:
            arms.append(arm_of(point))
    for arm in arms:
        group = [p for p in points if arm_of(p) == arm]
        ratios = [host_model.wait_ratio(p["used"], p["delay"]) for p in group]
        modelled = {}
        for name, value in (("shipped", None), ("fitted", exponents), ("fluid", None)):
            queue = 0.0 if name == "fluid" else host_model.QUEUE_DELAY
            modelled[name] = statistics.mean(
                host_model.wait_ratio(p["used"], host_model.weighted_lab_point(cpus, p, queue, value)[0])
                for p in group)
        spun = statistics.mean(sum(p["spinner_used"]) for p in group)
        spun_model = statistics.mean(sum(host_model.weighted_lab_point(cpus, p, exponents=exponents)[1])
                                     for p in group)
        print("  %-13s %.3f (%.3f-%.3f)  %-9.3f %-9.3f %-9.3f %.2f / %.2f" % (
            "/".join(str(v) for v in arm), statistics.mean(ratios), min(ratios), max(ratios),
            modelled["shipped"], modelled["fitted"], modelled["fluid"], spun, spun_model))
    print("  weight exponents fitted: %.2f, %.2f (shipped in host_model.WEIGHT_EXPONENTS: %g, %g)" % (
        exponents + host_model.WEIGHT_EXPONENTS))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each measurement")
    parser.add_argument("--repeat", type=int, default=2, help="rounds of every arm, interleaved")
    lab_guests.bench_arguments(parser)
    args = parser.parse_args()
    record = lab_guests.recorded_or_run(args, lambda: run(args.seconds, args.repeat, args.accel))
    report(record, host_model.fit_weight_exponents(record["cpus"], record["points"]))


if __name__ == "__main__":
    main()
