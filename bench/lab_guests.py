# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The guests the benchmarks run on the lab's libvirtd: one vCPU, no OS, a
512-byte boot sector as their whole disk. A spinner wants a whole CPU; a
duty guest wants part of one, the same work at every 100 Hz timer tick
whatever the host does."""

import json
import os
import struct
import time

GUEST_XML = """<domain type='{domain_type}'>
  <name>{name}</name>
  <memory unit='MiB'>16</memory>
  <vcpu placement='static'{cpuset}>1</vcpu>{metadata}
  <os><type arch='x86_64' machine='pc'>hvm</type><boot dev='hd'/></os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <disk type='file' device='disk'><driver name='qemu' type='raw'/><source file='{disk}'/>
      <target dev='hda' bus='ide'/></disk>
  </devices>
</domain>"""
# The class element as the collection reads it.
CLASS_METADATA = """
  <metadata>
    <oc:vm xmlns:oc="https://overcommit.control/xmlns/vm/1"><oc:class>{vm_class}</oc:class></oc:vm>
  </metadata>"""


def guest_xml(name, disk, vm_class=None, cpus=None, domain_type="qemu"):
    """A one-vCPU guest booting `disk`; with `vm_class`, of that class; with
    `cpus` (host CPU ids), its vCPU and emulator threads held to them;
    `domain_type` kvm (hardware-accelerated) or qemu (TCG)."""
    return GUEST_XML.format(name=name, disk=disk, domain_type=domain_type,
                            cpuset=" cpuset='%s'" % ",".join(str(c) for c in cpus) if cpus else "",
                            metadata=CLASS_METADATA.format(vm_class=vm_class) if vm_class else "")


def domain_type(conn, wanted="auto"):
    """The domain type the benchmarks' guests run as: kvm when asked for or,
    with "auto", when /dev/kvm opens and libvirt lists the kvm domain type;
    else qemu (TCG). Under TCG a vCPU wakes through QEMU's main loop, not as
    a hardware-accelerated guest's does, so wait figures differ."""
    if wanted in ("kvm", "qemu"):
        return wanted
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR))
    except OSError:
        return "qemu"
    return "kvm" if "<domain type='kvm'" in conn.getCapabilities() else "qemu"


def boot_sector(code):
    """A disk of one boot sector running `code` (machine code, real mode)."""
    return code + bytes(510 - len(code)) + b"\x55\xaa"


# cli; hlt; jmp back: halts for good.
IDLE_BOOT_SECTOR = boot_sector(b"\xfa\xf4\xeb\xfd")
# jmp $: spins for good.
SPIN_BOOT_SECTOR = boot_sector(b"\xeb\xfe")
# cli; PIT channel 0 at 100 Hz (divisor 11932); sti; then forever: hlt until
# the next tick, count ECX down from a number of loops.
DUTY_PROGRAM = (bytes.fromhex("fab036e643b09ce640b02ee640fbf466b9"), bytes.fromhex("664975fcebf3"))
# Loops of the probe that measures what one loop costs on this host.
PROBE_LOOPS = 600000


def duty_boot_sector(loops):
    return boot_sector(DUTY_PROGRAM[0] + struct.pack("<I", loops) + DUTY_PROGRAM[1])


def cpu_rate(client, domain, seconds):
    """CPUs `domain` used over `seconds`, from the collection's libvirt client."""
    before = client.cpu_samples([domain])[domain.name()]
    time.sleep(seconds)
    after = client.cpu_samples([domain])[domain.name()]
    return (after["cpu_time"] - before["cpu_time"]) / 1e9 / (after["at"] - before["at"])


def duty_loops(level, probe_used, timer_used):
    """Loops per tick for a duty guest to use `level` CPUs, given what the
    probe (PROBE_LOOPS) and the bare timer (1 loop) used alone."""
    return max(1, int(PROBE_LOOPS * (level - timer_used) / max(probe_used - timer_used, 1e-3)))


# Seconds a freshly started guest is left before it is measured: its
# firmware burns a whole CPU while it boots, about three seconds under KVM
# here (a duty guest read every 2.5 s: 0.99 CPU, then 0.28 steadily), so
# a guest measured after three seconds was taken for much busier than it is.
SETTLE_SECONDS = 8.0


def calibrated(level, used_by, passes=5):
    """(guest, loops, used): a duty guest running at about `level` CPUs.
    used_by(loops) starts one and returns (guest, CPUs it used alone) once
    it has booted. A first guess from a probe (what PROBE_LOOPS cost against
    the bare timer), then up to `passes` corrections by what the guest
    itself used: under KVM a loop costs so little that the probe alone is
    mostly noise. The guest is left running; the probes are stopped."""
    probe, probe_used = used_by(PROBE_LOOPS)
    probe.destroy()
    timer, timer_used = used_by(1)
    timer.destroy()
    loops = duty_loops(level, probe_used, timer_used)
    for number in range(passes):
        guest, used = used_by(loops)
        if abs(used - level) <= 0.2 * level or number == passes - 1:
            break
        guest.destroy()
        factor = min(5.0, max(0.2, (level - timer_used) / max(used - timer_used, 1e-3)))
        loops = max(1, int(loops * factor))
    return guest, loops, used


def bench_arguments(parser, accel=True):
    """The options every lab bench shares: --accel (where it starts guests),
    --json (write the run) and --from (report on a written run instead)."""
    if accel:
        parser.add_argument("--accel", choices=("auto", "kvm", "qemu"), default="auto",
                            help="the guests' domain type: kvm where /dev/kvm works (auto), or qemu (TCG)")
    parser.add_argument("--json", help="also write the run here")
    parser.add_argument("--from", dest="recorded", help="report on a run written by --json instead of measuring")


def recorded_or_run(args, run):
    """The run written at --from, else run(); written to --json when given."""
    if args.recorded:
        with open(args.recorded) as handle:
            record = json.load(handle)
    else:
        record = run()
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(record, handle, indent=1)
    return record
