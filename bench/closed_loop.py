# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Detect, contain, relax: the real closed loop on the lab's libvirtd through
noisy-neighbour patterns, acting against itself in dry run, in one run.

The loop is playbooks/closed_loop.yml run cycle after cycle on the lab's
hypervisor (as the shipped polling rulebook runs it), with the policy's
default parameters unless --policy says otherwise. In production the loop
runs on a control node, not on the hypervisor it steers; here it would take
most of a core beside the guests, so it is held to CPU 0 and every running
shared guest to the other CPUs, which are then the host's shared pool (the
policy reads the pool from the guests' pinning; the lab's own running
guests are pinned there for the run and put back afterwards). The tenants
are one-vCPU guests of class shared made for the run: victims that want
part of a CPU (a duty boot sector: the same work at each 100 Hz tick) and
culprits that spin; KVM-accelerated where /dev/kvm works (--accel), else
TCG, whose vCPUs wake through QEMU's main loop rather than as a real
guest's do. The patterns follow one another:

  quiet         a victim alone (the baseline; half a phase)
  start         a culprit starts spinning beside it (a tenant started a
                minute before and paused: a VM turning noisy, not booting)
  stop          it stops (paused)
  two culprits  two spin at once
  stop both     both stop
  even load     four victims, no culprit, three of them booting (anything
                braked is a false action)

Each arm runs them from freshly defined guests: the control arm with the
loop in mode=dry_run (the same cycles, measurements and decisions, no
action), the other acting; the arms alternate, --repeats times each. Per
pattern it prints the most waiting victim's wait ratio (vCPU delay /
(used + delay) over the pattern's second half) in both arms with the
spread over the repeats, the culprits' CPU, the pool's idle CPU while a
cap holds a guest under what it used alone (a weight withholds nothing),
cycles to the first brake and to
its release, and false actions; then each target, fixed before measuring,
met or missed.

    source scripts/lib.sh
    $VENV/bin/python bench/closed_loop.py [--phase-seconds 60] [--repeats 3] [--accel auto] [--json FILE]
    $VENV/bin/python bench/closed_loop.py --from bench/recorded/closed_loop_arms.json

The second form reports on a recorded run without measuring. A record of
one acting run (bench/recorded/closed_loop_lab.json, from before the
control arm) is reported as it was then: the lab beside the simulator
replaying the same run (each guest wanting what it used alone while it
runs, at the loop's measured cycle period, the spinners as ground truth).
Needs the lab (tests/testbed/lab up) and the machine to itself. Every guest
made is removed afterwards.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

import libvirt

import lab_guests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError  # noqa: E402
from ansible_collections.overcommit.control.plugins.module_utils.domain import cpu, policy  # noqa: E402
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.client import LIVE, LibvirtClient  # noqa: E402
from ansible_collections.overcommit.control.plugins.module_utils.simulate import engine, metrics  # noqa: E402
from ansible_collections.overcommit.control.plugins.module_utils.simulate.trace import Trace  # noqa: E402

URI = "qemu:///system"
LIVE_FLAG = libvirt.VIR_DOMAIN_AFFECT_LIVE
CLASS_PATH = "metadata/{https://overcommit.control/xmlns/vm/1}vm/{https://overcommit.control/xmlns/vm/1}class"
HOST = "lab-hypervisor"
INVENTORY = os.path.join(ROOT, "playbooks", "inventories", "lab")
PREFIX = "oc-bench-loop-"
VICTIMS = tuple(PREFIX + "victim-%d" % n for n in (1, 2, 3, 4))
CULPRITS = tuple(PREFIX + "culprit-%d" % n for n in (1, 2))
# What each victim wants: part of a CPU, so that one beside a spinner wants
# more than a pool of one CPU, and four of them too.
VICTIM_LEVEL = 0.3
# The CPUs the loop runs on; the others are the guests' shared pool.
LOOP_CPUS = frozenset([0])
V1, V2, V3, V4 = VICTIMS
C1, C2 = CULPRITS
# (pattern, what changes at its start: guest -> run or pause)
PATTERNS = (
    ("quiet", {V1: "run"}),
    ("start", {C1: "run"}),
    ("swap", {C1: "pause", C2: "run"}),
    ("stop", {C2: "pause"}),
    ("two culprits", {C1: "run", C2: "run"}),
    ("stop both", {C1: "pause", C2: "pause"}),
    ("even load", {V2: "run", V3: "run", V4: "run"}),
)
CYCLE_SAMPLES, CYCLE_INTERVAL = 2, 3
# How long before it first spins a culprit was started: a little over a
# minute, past its boot (the policy judges no VM in its first minute).
CULPRIT_LEAD_SECONDS = 65
# The off/on comparison: each arm runs these from fresh guests, the loop in
# dry run (same work, no action) or acting; quiet is a lead-in of half a phase.
ARM_PATTERNS = (
    ("quiet", {V1: "run"}),
    ("start", {C1: "run"}),
    ("stop", {C1: "pause"}),
    ("two culprits", {C1: "run", C2: "run"}),
    ("stop both", {C1: "pause", C2: "pause"}),
    ("even load", {V2: "run", V3: "run", V4: "run"}),
)
MODES = ("dry_run", "act")
# The targets, fixed before measuring (the victims' wait is vCPU delay /
# (used + delay), the figure the loop's own victims are judged by nowhere).
TARGET_WAIT_SHARE_OF_OFF = 0.5
TARGET_WAIT = 0.15
TARGET_WAIT_OVER_QUIET = 0.05
TARGET_IDLE_WHILE_BRAKED = 0.05
TARGET_CYCLES = 2


# ---------------------------------------------------------------- the lab run

def pool_cpus():
    return sorted(set(range(os.cpu_count())) - LOOP_CPUS)


def define_guests(conn, disk_dir, levels, domain_type="qemu"):
    """The run's guests, defined (not started); `levels`: {victim: loops}."""
    domains = {}
    for name in VICTIMS + CULPRITS:
        disk = os.path.join(disk_dir, name + ".img")
        with open(disk, "wb") as handle:
            handle.write(lab_guests.duty_boot_sector(levels[name]) if name in levels else lab_guests.SPIN_BOOT_SECTOR)
        domains[name] = conn.defineXML(lab_guests.guest_xml(name, disk, "shared", pool_cpus(), domain_type))
    return domains


def pin_lab_guests(conn):
    """Holds the lab's running guests, dedicated ones aside, to the pool's
    CPUs, live (vCPUs and emulator); returns how to put each back."""
    mask = tuple(number in pool_cpus() for number in range(conn.getInfo()[2]))
    saved = []
    for domain in conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
        classes = [e.text for e in ET.fromstring(domain.XMLDesc(0)).iterfind(CLASS_PATH)]
        if domain.name().startswith(PREFIX) or classes == ["dedicated"]:
            continue
        saved.append((domain, domain.vcpuPinInfo(LIVE_FLAG), domain.emulatorPinInfo(LIVE_FLAG)))
        for vcpu in range(len(saved[-1][1])):
            domain.pinVcpuFlags(vcpu, mask, LIVE_FLAG)
        domain.pinEmulator(mask, LIVE_FLAG)
    return saved


def unpin_lab_guests(saved):
    """Puts the lab's guests back as they were. A live pin cannot be taken
    away (pinned back to every CPU, a vCPU keeps a <vcpupin> in its live
    XML), so a guest that had none is restarted from its persistent
    definition, which the run never touched: the lab is left as it was."""
    for domain, vcpus, emulator in saved:
        if all(all(mask) for mask in vcpus):
            domain.destroy()
            domain.create()
            continue
        for vcpu, mask in enumerate(vcpus):
            domain.pinVcpuFlags(vcpu, tuple(mask), LIVE_FLAG)
        domain.pinEmulator(tuple(emulator), LIVE_FLAG)


def remove_guests(conn):
    for domain in conn.listAllDomains(0):
        if domain.name().startswith(PREFIX):
            try:
                if domain.isActive():
                    domain.destroy()
            finally:
                domain.undefine()


def set_state(domain, state):
    current = domain.state()[0]
    if state == "run":
        if not domain.isActive():
            domain.create()
        elif current == libvirt.VIR_DOMAIN_PAUSED:
            domain.resume()
    elif state == "pause" and current == libvirt.VIR_DOMAIN_RUNNING:
        domain.suspend()


def calibrate(client, conn, disk_dir, seconds, domain_type="qemu"):
    """Loops per tick for a victim at VICTIM_LEVEL (lab_guests.calibrated:
    a probe, then corrections by what the victim itself used once booted),
    and the CPU weight a guest starts with."""
    def used_by(loops):
        disk = os.path.join(disk_dir, "calibrate-%d.img" % loops)
        with open(disk, "wb") as handle:
            handle.write(lab_guests.duty_boot_sector(loops))
        domain = conn.createXML(lab_guests.guest_xml(PREFIX + "calibrate", disk, cpus=pool_cpus(),
                                                     domain_type=domain_type), 0)
        time.sleep(lab_guests.SETTLE_SECONDS)
        return domain, lab_guests.cpu_rate(client, domain, seconds)

    victim, loops, _used = lab_guests.calibrated(VICTIM_LEVEL, used_by)
    try:
        shares = client.scheduler_parameters(victim, LIVE).get("cpu_shares")
    finally:
        victim.destroy()
    return loops, shares


def alone_rates(client, domains, seconds):
    """What each guest uses with none of the others running: how much it wants."""
    rates = {}
    for name, domain in domains.items():
        domain.create()
        try:
            time.sleep(lab_guests.SETTLE_SECONDS)
            rates[name] = round(lab_guests.cpu_rate(client, domain, seconds), 3)
        finally:
            domain.destroy()
    return rates


def caps_now(client, domains):
    """{guest: its CPU cap in force, None for none} of the running guests."""
    caps = {}
    for name, domain in domains.items():
        if domain.isActive():
            caps[name] = cpu.domain_cpus(client.scheduler_parameters(domain, LIVE), 1)
    return caps


def shares_now(client, domains):
    """{guest: its live CPU weight (cpu_shares)} of the running guests."""
    return dict((name, client.scheduler_parameters(domain, LIVE).get("cpu_shares"))
                for name, domain in domains.items() if domain.isActive())


def counters(client, domains):
    active = [domain for domain in domains.values() if domain.isActive()]
    samples = client.cpu_samples(active) if active else {}
    return dict((name, (sample["cpu_time"] / 1e9, sample["vcpu_delay"] / 1e9)) for name, sample in samples.items())


def pool_busy():
    """CPU seconds the pool's CPUs have been busy (/proc/stat)."""
    busy = 0
    with open("/proc/stat") as handle:
        for line in handle:
            name, *values = line.split()
            if name.startswith("cpu") and name != "cpu" and int(name[3:]) in pool_cpus():
                fields = [int(v) for v in values]
                busy += sum(fields[:8]) - fields[3] - fields[4]
    return busy / os.sysconf("SC_CLK_TCK")


class Loop(object):
    """closed_loop.yml, cycle after cycle, on its own thread. Each cycle is
    recorded with its start and end, its actions, and what the guests used,
    waited and were capped to at its end: the end of one cycle to the end of
    the next is one step of the run."""

    def __init__(self, client, domains, policy_params, work_dir, mode="act"):
        self.client, self.domains = client, domains
        self.work_dir = work_dir
        self.cycle_dir = os.path.join(work_dir, "cycles")
        os.makedirs(self.cycle_dir)
        with open(os.path.join(work_dir, "vars.json"), "w") as handle:
            json.dump({"cycle_hosts": HOST, "samples": CYCLE_SAMPLES, "interval": CYCLE_INTERVAL,
                       "policy": policy_params, "cycle_dir": self.cycle_dir, "mode": mode}, handle)
        bin_dir = os.path.dirname(sys.executable)
        self.command = [os.path.join(bin_dir, "ansible-playbook"), "-i", INVENTORY, "overcommit.control.closed_loop",
                        "-e", "@" + os.path.join(work_dir, "vars.json")]
        home = os.environ.get("ANSIBLE_HOME") or os.path.join(work_dir, "ansible-home")
        self.env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1",
                        ANSIBLE_HOME=home, ANSIBLE_REMOTE_TMP=os.path.join(home, "tmp"),
                        PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
        self.cycles = []
        self.failures = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="closed-loop")

    def mark(self):
        """The state every step is measured from."""
        return {"at": time.time(), "counters": counters(self.client, self.domains), "busy": pool_busy(),
                "caps": caps_now(self.client, self.domains), "shares": shares_now(self.client, self.domains)}

    def start(self):
        self.last = self.mark()
        self.thread.start()

    def stop(self):
        self.stopping.set()
        self.thread.join()

    def _run(self):
        while not self.stopping.is_set():
            started = time.time()
            before = set(os.listdir(self.cycle_dir))
            with open(os.path.join(self.work_dir, "cycles.log"), "a") as log:
                rc = subprocess.call(self.command, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                     preexec_fn=lambda: os.sched_setaffinity(0, LOOP_CPUS))
            now = self.mark()
            actions = []
            for name in sorted(set(os.listdir(self.cycle_dir)) - before):
                with open(os.path.join(self.cycle_dir, name)) as handle:
                    actions.extend(json.load(handle)["actions"])
            if rc:
                self.failures.append("a cycle that started at %s exited %d (see %s)"
                                     % (time.strftime("%H:%M:%S", time.localtime(started)), rc,
                                        os.path.join(self.work_dir, "cycles.log")))
            elapsed = now["at"] - self.last["at"]
            step = {"start": started, "end": now["at"], "seconds": elapsed, "caps": now["caps"], "actions": actions,
                    "shares": now["shares"], "background": None, "used": {}, "delay": {}}
            for name, (used, delay) in now["counters"].items():
                if name in self.last["counters"]:
                    before_used, before_delay = self.last["counters"][name]
                    step["used"][name] = round((used - before_used) / elapsed, 4)
                    step["delay"][name] = round((delay - before_delay) / elapsed, 4)
            step["background"] = round((now["busy"] - self.last["busy"]) / elapsed - sum(step["used"].values()), 3)
            self.cycles.append(step)
            self.last = now


def start_culprits_ahead(domains, phase_seconds):
    """The culprits are tenants that were running before they turn noisy:
    started CULPRIT_LEAD_SECONDS before their first pattern, paused once
    their firmware is done, so that what the loop sees at `start` is a VM
    starting to spin, not one booting (which the victims of even load are)."""
    started = time.time()
    for name in CULPRITS:
        set_state(domains[name], "run")
    time.sleep(lab_guests.SETTLE_SECONDS)
    for name in CULPRITS:
        set_state(domains[name], "pause")
    # The quiet lead-in (half a phase) runs before the first culprit spins.
    time.sleep(max(0.0, started + CULPRIT_LEAD_SECONDS - phase_seconds / 2 - time.time()))


def run_arm(client, domains, policy_params, work_dir, mode, phase_seconds):
    """One arm: the patterns from fresh guests with the loop in `mode`."""
    os.makedirs(work_dir)
    events = []
    start_culprits_ahead(domains, phase_seconds)
    loop = Loop(client, domains, policy_params, work_dir, mode)
    loop.start()
    try:
        for pattern, changes in ARM_PATTERNS:
            at = time.time()
            for name, state in sorted(changes.items()):
                set_state(domains[name], state)
            events.append({"pattern": pattern, "at": at, "changes": changes})
            print("%s  %s  %s" % (time.strftime("%H:%M:%S"), mode, pattern), file=sys.stderr)
            time.sleep(phase_seconds / 2 if pattern == "quiet" else phase_seconds)
    finally:
        loop.stop()
    if loop.failures:
        raise SystemExit("the loop failed: " + "; ".join(loop.failures))
    return {"mode": mode, "start": loop.cycles[0]["start"] if loop.cycles else None, "events": events,
            "cycles": loop.cycles, "end": time.time()}


def run_arms(phase_seconds, policy_params, calibrate_seconds, repeats, accel):
    """The loop in dry run and acting, alternated (dry run first in odd
    repeats, acting first in even ones, so that a drift of the host weighs
    on both), each arm from freshly defined guests."""
    os.sched_setaffinity(0, LOOP_CPUS)  # this script's own sampling stays off the pool too
    # Stopped with SIGTERM, the run still puts the lab's guests back and
    # removes its own (the finally below): a killed run left them pinned.
    signal.signal(signal.SIGTERM, lambda _number, _frame: sys.exit("stopped (SIGTERM): the lab is put back"))
    client = LibvirtClient(URI)
    conn = client.conn
    remove_guests(conn)
    domain_type = lab_guests.domain_type(conn, accel)
    saved = pin_lab_guests(conn)
    arms = []
    with tempfile.TemporaryDirectory(prefix="oc-bench-loop-") as work_dir:
        try:
            loops, shares = calibrate(client, conn, work_dir, calibrate_seconds, domain_type)
            levels = dict((name, loops) for name in VICTIMS)
            alone = alone_rates(client, define_guests(conn, work_dir, levels, domain_type), calibrate_seconds)
            for repeat in range(repeats):
                for mode in MODES if repeat % 2 == 0 else tuple(reversed(MODES)):
                    remove_guests(conn)
                    domains = define_guests(conn, work_dir, levels, domain_type)
                    arm = run_arm(client, domains, policy_params, os.path.join(work_dir, "%s-%d" % (mode, repeat)),
                                  mode, phase_seconds)
                    arms.append(dict(arm, repeat=repeat + 1))
        finally:
            remove_guests(conn)
            unpin_lab_guests(saved)
    return {"cpus": len(pool_cpus()), "host_cpus": os.cpu_count(), "policy": policy_params,
            "victim_level": VICTIM_LEVEL, "alone": alone, "domain_type": domain_type, "default_shares": shares,
            "phase_seconds": phase_seconds, "arms": arms}


# ---------------------------------------------------------------- the acting arm against the dry-run arm

def _braked(step, name, default_shares):
    shares = step.get("shares", {}).get(name)
    return step["caps"].get(name) is not None or (shares is not None and shares < default_shares)


def arm_figures(arm, cpus, default_shares, alone):
    """Per pattern of one arm: the most waiting victim's wait ratio (vCPU
    delay / (used + delay), summed over the pattern's second half), the
    culprits' CPU over that half, the pool's idle share while a cap held a
    running guest under what it used alone, cycles from a culprit starting to its first brake (cap or
    demoted weight) and from it stopping to no brake, and brakes put on a
    guest that was not spinning (false actions)."""
    out = []
    steps = arm["cycles"]
    events = arm["events"]
    for number, event in enumerate(events):
        begin = event["at"]
        finish = events[number + 1]["at"] if number + 1 < len(events) else arm["end"]
        within = [step for step in steps if begin < step["end"] <= finish]
        after = [step for step in steps if step["end"] > begin]
        before = [step for step in steps if step["end"] <= begin]
        tail = within[len(within) // 2:]
        running = set(name for name in VICTIMS + CULPRITS if _runs_after(events, number, name))
        spinning = running & set(CULPRITS)
        ratios = []
        for name in sorted(running & set(VICTIMS)):
            used = sum(step["used"].get(name, 0.0) * step["seconds"] for step in tail)
            delay = sum(step["delay"].get(name, 0.0) * step["seconds"] for step in tail)
            if used + delay > 0:
                ratios.append(delay / (used + delay))
        culprit_cpu = [sum(step["used"].get(name, 0.0) for name in spinning) for step in tail]
        # Idle CPU counts against a brake only while a cap holds a running
        # guest under what it used alone (its demand): a cap on a guest that
        # wants nothing, or a weight, withholds nothing.
        idle = [max(0.0, cpus - step["background"] - sum(step["used"].values())) / cpus for step in within
                if step["background"] is not None and any(
                    cap is not None and name in running and alone[name] > cap for name, cap in step["caps"].items())]
        row = {"pattern": event["pattern"], "victim_wait": max(ratios) if ratios else None,
               "culprit_cpus": sum(culprit_cpu) / len(culprit_cpu) if culprit_cpu and spinning else None,
               "idle_while_braked": sum(idle) / len(idle) if idle else None, "act": {}, "release": {},
               "false_actions": 0}
        for name, state in event["changes"].items():
            if name not in CULPRITS:
                continue
            if state == "run":
                # Looked for while it runs: a brake after it stopped is no answer to this start.
                stops = [e["at"] for e in events[number + 1:] if e["changes"].get(name) == "pause"]
                running_steps = [step for step in after if not stops or step["end"] <= stops[0]]
                found = [i + 1 for i, step in enumerate(running_steps) if _braked(step, name, default_shares)]
                row["act"][name] = found[0] if found else None
            elif before and _braked(before[-1], name, default_shares):
                found = [i + 1 for i, step in enumerate(after) if not _braked(step, name, default_shares)]
                row["release"][name] = found[0] if found else None
        previous = before[-1] if before else None
        for step in within:
            for name in step["caps"]:
                if name not in spinning and _braked(step, name, default_shares) and not (
                        previous is not None and _braked(previous, name, default_shares)):
                    row["false_actions"] += 1
            previous = step
        out.append(row)
    return out


def _spread(values, scale=1.0, unit=""):
    values = [v for v in values if v is not None]
    if not values:
        return "n/a"
    mean = sum(values) / len(values)
    if len(values) == 1:
        return "%.2f%s" % (mean * scale, unit) if scale == 1.0 else "%d%s" % (round(mean * scale), unit)
    if scale == 1.0:
        return "%.2f%s (%.2f-%.2f)" % (mean, unit, min(values), max(values))
    return "%d%s (%d-%d)" % (round(mean * scale), unit, round(min(values) * scale), round(max(values) * scale))


def arms_report(record):
    """The acting arm against the dry-run arm, per pattern, over the repeats,
    and the targets met or missed."""
    cpus, shares = record["cpus"], record["default_shares"]
    by_mode = dict((mode, [arm_figures(arm, cpus, shares, record["alone"]) for arm in record["arms"]
                           if arm["mode"] == mode])
                   for mode in MODES)
    repeats = len(by_mode["act"])
    cycles = [step["seconds"] for arm in record["arms"] for step in arm["cycles"]]
    print("closed loop on the lab, acting against dry run (%d repeats each, alternated; %s guests; a shared pool of "
          "%d of the host's %d CPUs, the loop on the others; cycles of %.1f s on average; phases of %g s)" % (
              repeats, "KVM" if record["domain_type"] == "kvm" else "TCG", cpus, record["host_cpus"],
              sum(cycles) / max(1, len(cycles)), record["phase_seconds"]))
    print("victims want %s CPU alone; culprits %s; policy %s; wait = vCPU delay / (used + delay), the most waiting "
          "victim over each pattern's second half; mean (min-max) over the repeats" % (
              ", ".join("%.2f" % record["alone"][name] for name in VICTIMS),
              ", ".join("%.2f" % record["alone"][name] for name in CULPRITS),
              json.dumps(record["policy"]) if record["policy"] else "defaults"))
    header = ("pattern", "wait dry run", "wait acting", "acting/dry", "culprits CPU dry -> acting",
              "idle while braked", "act (cycles)", "release (cycles)", "false")
    rows = [header]
    summary = []
    for number, (pattern, _changes) in enumerate(ARM_PATTERNS):
        off = [arm[number] for arm in by_mode["dry_run"]]
        on = [arm[number] for arm in by_mode["act"]]
        off_wait = [row["victim_wait"] for row in off if row["victim_wait"] is not None]
        on_wait = [row["victim_wait"] for row in on if row["victim_wait"] is not None]
        share = (sum(on_wait) / len(on_wait)) / (sum(off_wait) / len(off_wait)) \
            if on_wait and off_wait and sum(off_wait) > 0 else None
        acts = [v for row in on for v in row["act"].values()]
        releases = [v for row in on for v in row["release"].values()]
        rows.append((pattern, _spread(off_wait, 100, " %"), _spread(on_wait, 100, " %"),
                     "n/a" if share is None else "%.2f" % share,
                     "%s -> %s" % (_spread([row["culprit_cpus"] for row in off]),
                                   _spread([row["culprit_cpus"] for row in on])),
                     _spread([row["idle_while_braked"] for row in on], 100, " %"),
                     ", ".join("-" if v is None else str(v) for v in acts) or "n/a",
                     ", ".join("-" if v is None else str(v) for v in releases) or "n/a",
                     str(sum(row["false_actions"] for row in on))))
        summary.append({"pattern": pattern, "off": off_wait, "on": on_wait, "share": share, "acts": acts,
                        "releases": releases, "idle": [row["idle_while_braked"] for row in on
                                                       if row["idle_while_braked"] is not None],
                        "false": sum(row["false_actions"] for row in on)})
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    print("targets (fixed before measuring):")
    for line in targets(summary):
        print("  " + line)
    return summary


def targets(summary):
    """Each target, met or missed, with the figures it was judged on."""
    quiet = [v for row in summary if row["pattern"] == "quiet" for v in row["on"] + row["off"]]
    baseline = sum(quiet) / len(quiet) if quiet else 0.0
    lines = []
    for row in summary:
        if row["pattern"] not in ("start", "two culprits") or not row["on"] or not row["off"]:
            continue
        on, off = sum(row["on"]) / len(row["on"]), sum(row["off"]) / len(row["off"])
        met = on <= TARGET_WAIT_SHARE_OF_OFF * off and (on <= TARGET_WAIT or on <= baseline + TARGET_WAIT_OVER_QUIET)
        figures = ("met   " if met else "missed", row["pattern"], 100 * on, 100 * TARGET_WAIT_SHARE_OF_OFF, 100 * off,
                   100 * TARGET_WAIT, 100 * TARGET_WAIT_OVER_QUIET, 100 * baseline)
        lines.append("%s  %s: victim wait acting %.0f %% <= %.0f %% of dry run's %.0f %%, and <= %.0f %% or within "
                     "%.0f points of quiet's %.0f %%" % figures)
    idle = [v for row in summary for v in row["idle"]]
    worst = max(idle) if idle else None
    lines.append("%s  idle pool CPU while braked <= %.0f %%: %s" % (
        "met   " if worst is None or worst <= TARGET_IDLE_WHILE_BRAKED else "missed", 100 * TARGET_IDLE_WHILE_BRAKED,
        "never braked" if worst is None else "at most %.0f %%" % (100 * worst)))
    false = sum(row["false"] for row in summary)
    lines.append("%s  no false action: %d" % ("met   " if false == 0 else "missed", false))
    acts = [v for row in summary for v in row["acts"]]
    releases = [v for row in summary for v in row["releases"]]
    for what, values in (("action", acts), ("release", releases)):
        late = [v for v in values if v is None or v > TARGET_CYCLES]
        lines.append("%s  %s within %d cycles: %s" % (
            "met   " if values and not late else "missed", what, TARGET_CYCLES,
            ", ".join("-" if v is None else str(v) for v in values) or "none seen"))
    return lines


# ---------------------------------------------------------------- one timeline for both

def running_spans(record):
    """{guest: [(from, to)]} of the times each guest ran (not paused)."""
    spans, since = dict((name, []) for name in VICTIMS + CULPRITS), {}
    for event in record["events"]:
        for name, state in event["changes"].items():
            if state == "run" and name not in since:
                since[name] = event["at"]
            elif state == "pause" and name in since:
                spans[name].append((since.pop(name), event["at"]))
    for name, start in since.items():
        spans[name].append((start, record["end"]))
    return spans


def want(spans, alone, name, start, end):
    """CPUs `name` wanted over [start, end): its alone rate while it ran."""
    ran = sum(max(0.0, min(end, b) - max(start, a)) for a, b in spans[name])
    return alone[name] * ran / (end - start)


def lab_steps(record):
    """The lab run as steps: [{start, end, want, delay, cap}] per cycle."""
    spans = running_spans(record)
    steps = []
    previous_end = record["start"]
    for cycle in record["cycles"]:
        start, end = previous_end, cycle["end"]
        previous_end = end
        steps.append({"start": start, "end": end,
                      "want": dict((name, want(spans, record["alone"], name, start, end)) for name in spans),
                      "delay": cycle["delay"], "cap": cycle["caps"]})
    return steps


def replay(record):
    """The simulator on the lab's run: the same guests wanting what they
    wanted in the lab, at the loop's mean cycle period; its steps."""
    steps = lab_steps(record)
    interval = (steps[-1]["end"] - steps[0]["start"]) / len(steps)
    count = len(steps)
    trace = Trace("lab closed loop", interval, {HOST: float(record["cpus"])}, start=steps[0]["start"])
    spans = running_spans(record)
    spinners = dict((name, spans[name]) for name in CULPRITS)
    keys = {}
    for name in VICTIMS + CULPRITS:
        keys[name] = trace.add_vm(HOST, name, "shared", 1)
    trace.grow(count)
    for index in range(count):
        start = trace.time(index)
        end = start + interval
        for name, key in keys.items():
            trace.demand[key][index] = min(1.0, want(spans, record["alone"], name, start, end))
            if name in spinners:
                trace.culprit[key][index] = 1 if want(spans, record["alone"], name, start, end) > 0 else 0
    trace.has_ground_truth = True
    params = policy.parameters(record["policy"])
    result = engine.simulate(trace, [policy.NAME], params, plot_points=count)
    series = result["series"]["policies"][policy.NAME]
    sim_steps = []
    for index in range(count):
        start = trace.time(index)
        sim_steps.append({"start": start, "end": start + interval,
                          "want": dict((name, trace.demand[keys[name]][index]) for name in keys),
                          "delay": dict((name, series["steal"][name][index]) for name in keys),
                          # The caps the decision at the end of this interval left in force.
                          "cap": dict((name, series["cap"][name][index]) for name in keys)})
    return sim_steps, interval


def figures(steps, events):
    """Per pattern: contain (seconds, cycles) of each culprit started, the
    victims' delay back under target (seconds), release (seconds, cycles) of
    each culprit stopped (looked for until it runs again or the run ends),
    false throttles, reversals (a cap raised, not removed, then cut again)."""
    out = []
    for number, event in enumerate(events):
        begin = event["at"]
        finish = events[number + 1]["at"] if number + 1 < len(events) else steps[-1]["end"]
        spinning = set(name for name in CULPRITS if _runs_after(events, number, name))
        started = [name for name, state in event["changes"].items() if name in CULPRITS and state == "run"]
        stopped = [name for name, state in event["changes"].items() if name in CULPRITS and state == "pause"]
        row = {"pattern": event["pattern"], "contain": {}, "release": {}, "victims_back": None,
               "victims_waited": False, "false_throttles": 0, "reversals": 0, "victim_wait": []}
        caps_before = dict(_caps_at(steps, begin))
        raised = set()
        harmed = False
        for position, step in enumerate(step for step in steps if step["end"] > begin):
            seconds, cycles, within = round(step["end"] - begin, 1), position + 1, step["end"] <= finish
            for name, cap in step["cap"].items():
                before = caps_before.get(name)
                caps_before[name] = cap
                tighter = cap is not None and (before is None or cap < before - 1e-6)
                if cap is None and before is not None and name in stopped and name not in row["release"] \
                        and not _started_between(events, number, name, step["end"]):
                    row["release"][name] = (seconds, cycles)
                if not within:
                    continue
                if tighter:
                    row["false_throttles"] += name not in spinning
                    row["reversals"] += name in raised
                    raised.discard(name)
                    if name in started and name not in row["contain"]:
                        row["contain"][name] = (seconds, cycles)
                elif cap is not None and before is not None and cap > before + 1e-6:
                    raised.add(name)
                elif cap is None:
                    raised.discard(name)
            if not within:
                continue
            wanting = [name for name in VICTIMS if step["want"].get(name, 0) > 0]
            row["victim_wait"].append(max(step["delay"].get(name, 0.0) / step["want"][name] for name in wanting))
            victims = [name for name in wanting if metrics.is_victim(step["delay"].get(name, 0.0), step["want"][name])]
            if victims:
                harmed = True
                row["victims_waited"] = True
                row["victims_back"] = None  # waiting (again): not back yet
            elif harmed and row["victims_back"] is None:
                row["victims_back"] = seconds
        row["victims_still_waiting"] = harmed and row["victims_back"] is None
        # The most waiting victim's delay as a share of what it wants, over the
        # pattern's last half (after the loop had its cycles to act).
        tail = row["victim_wait"][len(row["victim_wait"]) // 2:]
        row["victim_wait"] = round(sum(tail) / len(tail), 2) if tail else None
        out.append(row)
    return out


def _caps_at(steps, moment):
    """The caps in force at `moment`: those the last step that ended by then left."""
    caps = {}
    for step in steps:
        if step["end"] > moment:
            break
        caps = step["cap"]
    return caps


def _started_between(events, number, name, moment):
    """Whether `name` was started again after pattern `number` and by `moment`."""
    return any(event["changes"].get(name) == "run" for event in events[number + 1:] if event["at"] <= moment)


def _runs_after(events, number, name):
    state = None
    for event in events[:number + 1]:
        state = event["changes"].get(name, state)
    return state == "run"


# ---------------------------------------------------------------- the report

def _pairs(found, wanted):
    cells = []
    for name in wanted:
        value = found.get(name)
        cells.append("-" if value is None else "%g s (%d)" % value)
    return ", ".join(cells) or "n/a"


def report(record):
    steps = lab_steps(record)
    sim_steps, interval = replay(record)
    lab, sim = figures(steps, record["events"]), figures(sim_steps, record["events"])
    background = [cycle["background"] for cycle in record["cycles"] if cycle["background"] is not None]
    print("closed loop on the lab (a shared pool of %d of the host's %d CPUs, the loop on the others; cycles of %d "
          "samples x %g s; %d cycles, %.1f s each on average; the pool ran %.2f CPU besides the guests)" % (
              record["cpus"], record["host_cpus"], CYCLE_SAMPLES, CYCLE_INTERVAL, len(steps), interval,
              sum(background) / max(1, len(background))))
    print("victims want %s CPU alone; culprits %s; policy %s" % (
        ", ".join("%.2f" % record["alone"][name] for name in VICTIMS),
        ", ".join("%.2f" % record["alone"][name] for name in CULPRITS),
        json.dumps(record["policy"]) if record["policy"] else "defaults"))
    header = ("pattern", "source", "contain s (cycles)", "victims back s", "victim wait", "release s (cycles)",
              "false", "reversals")
    rows = [header]
    for number, event in enumerate(record["events"]):
        started = [n for n, s in event["changes"].items() if n in CULPRITS and s == "run"]
        stopped = [n for n, s in event["changes"].items() if n in CULPRITS and s == "pause"]
        for source, row in (("lab", lab[number]), ("simulator", sim[number])):
            back = ("none waited" if not row["victims_waited"] else
                    "still waiting" if row["victims_still_waiting"] else "%g" % row["victims_back"])
            wait = "-" if row["victim_wait"] is None else "%d %%" % round(100 * row["victim_wait"])
            rows.append((event["pattern"] if source == "lab" else "", source, _pairs(row["contain"], started),
                         back, wait, _pairs(row["release"], stopped), str(row["false_throttles"]),
                         str(row["reversals"])))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    return lab, sim


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--phase-seconds", type=float, default=60.0, help="how long each pattern lasts")
    parser.add_argument("--repeats", type=int, default=3, help="dry-run and acting arms, each, alternated")
    parser.add_argument("--calibrate-seconds", type=float, default=6.0, help="length of each alone measurement")
    parser.add_argument("--policy", default="{}", help="policy parameters as JSON (docs/policy.md); default: defaults")
    lab_guests.bench_arguments(parser)
    args = parser.parse_args()
    if not args.recorded:
        if args.repeats < 1:
            parser.error("--repeats: at least 1")
        try:
            params = json.loads(args.policy)
            policy.parameters(params)  # refused here, naming the parameter, before any guest is made
        except (ValueError, ValueRangeError) as exc:
            parser.error("--policy: %s" % exc)

    def measured():
        return run_arms(args.phase_seconds, params, args.calibrate_seconds, args.repeats, args.accel)
    record = lab_guests.recorded_or_run(args, measured)
    if "arms" in record:
        arms_report(record)
    else:
        # A run of one acting arm, replayed in the simulator beside it.
        report(record)


if __name__ == "__main__":
    main()
