"""The lab's hypervisor VMs as the tests reach them: over SSH with the lab's
key and known_hosts (what `tests/testbed/lab up fleet` wrote), reading each
host's libvirtd and cgroups directly, not through the collection."""

import os
import shlex
import subprocess

import yaml


class FleetHost:
    def __init__(self, lab, name):
        self.name = name
        self.inventory = lab["OVERCOMMIT_FLEET_INVENTORY"]
        if not os.path.exists(self.inventory):
            raise AssertionError("the lab's fleet is not up (%s is missing): tests/testbed/lab up fleet"
                                 % self.inventory)
        with open(self.inventory) as handle:
            hosts = yaml.safe_load(handle)["hypervisors"]["children"]["fleet"]["hosts"]
        self.port = hosts[name]["ansible_port"]
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
        return self.ssh("virsh -c qemu:///system " + " ".join(shlex.quote(arg) for arg in args))

    def start(self, guest):
        """Starts the guest for the test; its definition as it was is put
        back by reset_guests."""
        if guest not in self.started:
            self.started[guest] = self.virsh("dumpxml", "--inactive", guest)
        if self.virsh("domstate", guest).strip() != "running":
            self.virsh("start", guest)

    def reset_guests(self):
        """Shuts off what the test started, defined again as it was before
        (no tuning or throttle record the test left)."""
        for guest, xml in self.started.items():
            self.ssh("virsh -q -c qemu:///system destroy %s" % shlex.quote(guest), check=False)
            self.ssh("virsh -q -c qemu:///system define /dev/stdin <<'XML'\n%sXML" % xml)

    def cgroup(self, guest):
        """The guest's own cgroup (the `libvirt` folder under its machine
        scope, which holds its vCPU threads and emulator), from where the
        kernel puts QEMU's process."""
        pid = self.ssh("cat /run/libvirt/qemu/%s.pid" % shlex.quote(guest)).strip()
        path = self.ssh("cat /proc/%s/cgroup" % pid).strip().split("::", 1)[1]
        return "/sys/fs/cgroup" + os.path.dirname(path)

    def read(self, path):
        return self.ssh("cat %s" % shlex.quote(path)).strip()


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
