"""The lab's hypervisor VMs as the tests reach them: over SSH with the lab's
key and known_hosts (what `tests/testbed/lab up fleet` wrote), reading each
host's libvirtd and cgroups directly, not through the collection."""

import os
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor

import yaml


MARK = "----8<---- virsh output ----"


def _virsh_command(args):
    return "virsh -c qemu:///system " + " ".join(shlex.quote(arg) for arg in args)


class FleetHost:
    def __init__(self, lab, name):
        self.name = name
        self.inventory = lab["OVERCOMMIT_FLEET_INVENTORY"]
        if not os.path.exists(self.inventory):
            raise AssertionError("the lab's fleet is not up (%s is missing): tests/testbed/lab up fleet"
                                 % self.inventory)
        with open(self.inventory) as handle:
            hosts = yaml.safe_load(handle)["hypervisors"]["children"]["fleet"]["hosts"]
        self.variables = hosts[name]  # the host's own variables in the fleet's inventory
        self.port = self.variables["ansible_port"]
        self.key, self.known_hosts = lab["OVERCOMMIT_FLEET_SSH_KEY"], lab["OVERCOMMIT_FLEET_KNOWN_HOSTS"]
        self.started = {}

    def ssh(self, command, check=True):
        done = subprocess.run(
            ["ssh", "-i", self.key, "-o", "UserKnownHostsFile=" + self.known_hosts, "-o", "StrictHostKeyChecking=yes",
             "-o", "BatchMode=yes", "-p", str(self.port), "root@127.0.0.1", command],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120, check=False)
        if check and done.returncode:
            raise AssertionError("%s: `%s` failed: %s" % (self.name, command, done.stderr.strip()))
        return done.stdout

    def virsh(self, *args):
        return self.ssh(_virsh_command(args))

    def virsh_each(self, *commands):
        """Several virsh commands in one SSH login (each login costs seconds on
        a host under TCG), their outputs in order; any failing fails."""
        script = "set -e\n" + "".join("echo %s\n%s\n" % (shlex.quote(MARK), _virsh_command(args)) for args in commands)
        return self.ssh(script).split(MARK + "\n")[1:]

    def definitions(self, *guests):
        """{guest: (live schedinfo, stored definition)}: what a test compares
        before and after."""
        outputs = self.virsh_each(*[command for guest in guests
                                    for command in (("schedinfo", guest), ("dumpxml", "--inactive", guest))])
        return dict((guest, (outputs[2 * index], outputs[2 * index + 1])) for index, guest in enumerate(guests))

    def start(self, *guests):
        """Starts the guests for the test (those not running) and returns
        their definitions() once running; reset_guests puts their stored
        definitions back (a start leaves those as they were)."""
        self.ssh("".join("virsh -q -c qemu:///system domstate %s | grep -qx running || "
                         "virsh -q -c qemu:///system start %s >/dev/null\n" % ((shlex.quote(guest),) * 2)
                         for guest in guests))
        running = self.definitions(*guests)
        for guest, (_schedinfo, definition) in running.items():
            self.started.setdefault(guest, definition)
        return running

    def reset_guests(self):
        """Shuts off what the test started, defined again as it was before
        (no tuning or throttle record the test left)."""
        if self.started:
            self.ssh("".join("virsh -q -c qemu:///system destroy %s >/dev/null 2>&1\n"
                             "virsh -q -c qemu:///system define /dev/stdin >/dev/null <<'XML'\n%sXML\n"
                             % (shlex.quote(guest), xml) for guest, xml in self.started.items()))
            self.started = {}

    def cgroups(self, *guests):
        """{guest: its own cgroup} (the `libvirt` folder under its machine
        scope, which holds its vCPU threads and emulator), from where the
        kernel puts QEMU's process."""
        lines = self.ssh("".join("cut -d: -f3- /proc/$(cat /run/libvirt/qemu/%s.pid)/cgroup\n" % shlex.quote(guest)
                                 for guest in guests)).split()
        return dict((guest, "/sys/fs/cgroup" + os.path.dirname(line)) for guest, line in zip(guests, lines))


class LocalHost:
    """This machine's libvirtd, read as root with virsh."""

    name = "lab-hypervisor"

    def virsh_each(self, *commands):
        return [subprocess.run(["virsh", "-c", "qemu:///system"] + list(args), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, check=True).stdout
                for args in commands]


def on_each(hosts, call):
    """{host name: call(host)} for every host at once: each waits on its own
    SSH logins and the hosts' own CPUs."""
    with ThreadPoolExecutor(len(hosts)) as pool:
        return dict(zip([host.name for host in hosts], pool.map(call, hosts)))


# One snapshot of each cgroup, read on the host by `cat` alone (a virsh or a
# second SSH login per sample would itself take CPU from the guests measured):
# the time, the cgroup's CPU usage and PSI `some` total, and the run-queue
# delay of each of its vCPU threads (the kernel's schedstat, which libvirt
# reports as vcpu.N.delay).
SNAPSHOT = r"""
snap() {
  echo "time $(date +%s%N)"
  for cgroup in "$@"; do
    echo "cgroup $cgroup"
    grep '^usage_usec' "$cgroup/cpu.stat"
    head -n 1 "$cgroup/cpu.pressure"
    for thread in $(cat "$cgroup"/vcpu*/cgroup.threads); do echo "delay $(cut -d' ' -f2 /proc/$thread/schedstat)"; done
  done
}
"""


def _parse_snapshot(text):
    snapshot, current = {}, None
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "time":
            snapshot["time"] = int(fields[1]) / 1e9
        elif fields[0] == "cgroup":
            current = snapshot.setdefault(fields[1], {"cpu": 0.0, "wait": 0.0, "psi_some": 0.0})
        elif fields[0] == "usage_usec":
            current["cpu"] = int(fields[1]) / 1e6
        elif fields[0] == "some":
            current["psi_some"] = int(dict(field.split("=") for field in fields[1:])["total"]) / 1e6
        elif fields[0] == "delay":
            current["wait"] += int(fields[1]) / 1e9
    return snapshot


def rates(host, cgroups, seconds):
    """Per guest ({guest: cgroup}), over the same `seconds`, per second: its
    CPU, its vCPUs' wait for a CPU and its cgroup's PSI `some` time."""
    quoted = " ".join(shlex.quote(cgroup) for cgroup in cgroups.values())
    output = host.ssh("%s\nsnap %s; echo ---; sleep %d; snap %s" % (SNAPSHOT, quoted, seconds, quoted))
    first, last = (_parse_snapshot(part) for part in output.split("---"))
    elapsed = last["time"] - first["time"]
    return dict((guest, dict((key, (last[cgroup][key] - first[cgroup][key]) / elapsed)
                             for key in ("cpu", "wait", "psi_some")))
                for guest, cgroup in cgroups.items())
