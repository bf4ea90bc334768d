"""Benchmark: throttle and restore many libvirt domains on one host.

Side by side, in one run, each as ansible-playbook runs of the same shape (so
every variant pays Ansible's start-up):
  module  overcommit.control.libvirt_cputune, one task for all domains
  loop    one `virsh schedinfo` command task per domain, as users do today
  plain   a plain libvirt-python script making the same calls as the module
          (bench/baselines/libvirt_cputune_plain.py), run as one task

Each variant throttles every domain (one playbook) and restores it (a second
playbook); the state is checked after each, outside the timing. Prints the
seconds of each variant and the ratios the targets are stated in.

usage: bench/libvirt_cputune.py [--domains 100] [--repeat 3]
Needs the lab (tests/testbed/lab up) and its venv; creates and removes its own
idle guests named oc-lab-bench-NNN.
"""

import argparse
import os
import statistics
import sys
import tempfile

import libvirt
import yaml

from lab_guests import IDLE_BOOT_SECTOR, guest_xml
from timing import ROOT, timed_playbook

URI = "qemu:///system"
PREFIX = "oc-lab-bench-"
CAP_CPUS = 0.5


def make_guests(conn, count, disk_dir):
    names = ["%s%03d" % (PREFIX, i) for i in range(count)]
    for name in names:
        disk = os.path.join(disk_dir, name + ".img")
        with open(disk, "wb") as handle:
            handle.write(IDLE_BOOT_SECTOR)
        domain = conn.defineXML(guest_xml(name, disk))
        domain.create()
    return names


def remove_guests(conn):
    for domain in conn.listAllDomains(0):
        if domain.name().startswith(PREFIX):
            if domain.isActive():
                domain.destroy()
            domain.undefine()


def playbooks(names, workdir):
    """variant -> (throttle playbook, restore playbook)."""
    plain = os.path.join(ROOT, "bench", "baselines", "libvirt_cputune_plain.py")
    quota = int(CAP_CPUS * 100000)

    def play(tasks):
        return [{"name": "bench", "hosts": "lab-hypervisor", "gather_facts": False, "tasks": tasks}]

    virsh = "virsh -c %s schedinfo {{ item }} --live --config " % URI
    plain_argv = ["{{ ansible_playbook_python }}", plain]

    def module_task(**args):
        return {"overcommit.control.libvirt_cputune": dict(args, domains=names)}

    def loop_task(settings):
        return {"ansible.builtin.command": virsh + settings, "loop": names, "changed_when": True}

    def plain_task(action, cpus):
        return {"ansible.builtin.command": {"argv": plain_argv + [action, URI, str(cpus)] + names},
                "changed_when": True}

    variants = {
        "module": (module_task(cpus=CAP_CPUS, reason="bench"), module_task(state="restored")),
        "loop": (loop_task("global_period=100000 global_quota=%d" % quota), loop_task("global_quota=-1")),
        "plain": (plain_task("throttle", CAP_CPUS), plain_task("restore", 0)),
    }
    files = {}
    for variant, (throttle_task, restore_task) in variants.items():
        paths = []
        for step, task in (("throttle", throttle_task), ("restore", restore_task)):
            path = os.path.join(workdir, "%s-%s.yml" % (variant, step))
            with open(path, "w") as handle:
                yaml.safe_dump(play([dict(task, name=step)]), handle)
            paths.append(path)
        files[variant] = paths
    return files


def check_quota(conn, names, expected_live):
    for name in names:
        live = conn.lookupByName(name).schedulerParametersFlags(libvirt.VIR_DOMAIN_AFFECT_LIVE)
        if live["global_quota"] != expected_live:
            sys.exit("%s: global_quota %s, expected %s" % (name, live["global_quota"], expected_live))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domains", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3, help="runs of the fast variants (the loop runs once)")
    args = parser.parse_args()

    libvirt.registerErrorHandler(lambda *a: None, None)
    conn = libvirt.open(URI)
    remove_guests(conn)
    with tempfile.TemporaryDirectory(prefix="oc-bench-") as workdir:
        print("creating %d idle guests ..." % args.domains, flush=True)
        names = make_guests(conn, args.domains, workdir)
        try:
            files = playbooks(names, workdir)
            seconds = {}
            for variant in ("module", "plain", "loop"):
                runs = []
                for _run in range(1 if variant == "loop" else args.repeat):
                    throttle_path, restore_path = files[variant]
                    took = timed_playbook(throttle_path)
                    check_quota(conn, names, int(CAP_CPUS * 100000))
                    took += timed_playbook(restore_path)
                    check_quota(conn, names, -1)
                    runs.append(took)
                seconds[variant] = statistics.median(runs)
                print("  %-6s %7.2f s  (runs: %s)" % (variant, seconds[variant],
                                                      ", ".join("%.2f" % r for r in runs)), flush=True)
        finally:
            remove_guests(conn)

    print()
    print("throttle + restore of %d domains on one host (ansible-playbook wall time, median):" % args.domains)
    print("  %-44s %8.2f s" % ("overcommit.control.libvirt_cputune (1 task)", seconds["module"]))
    print("  %-44s %8.2f s" % ("(a) virsh schedinfo loop (1 task per domain)", seconds["loop"]))
    print("  %-44s %8.2f s" % ("(b) plain libvirt-python script (1 task)", seconds["plain"]))
    print("  speed-up over (a): %5.1fx   (target >= 10x)" % (seconds["loop"] / seconds["module"]))
    print("  time vs (b):       %5.2fx   (target <= 1.5x)" % (seconds["module"] / seconds["plain"]))


if __name__ == "__main__":
    main()
