# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The only code that reads a host's /proc and /sys for its CPU signals.
`root` is "/" on a real host; tests point it at a tree of their own."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.overcommit.control.plugins.module_utils.common import cpulist
from ansible_collections.overcommit.control.plugins.module_utils.host import pressure

# Where libvirt and machined put VMs, under the cgroup root (v1: below the
# cpu controller's mount).
VM_PARENTS = ("machine.slice", "machine")
V1_CPU_MOUNTS = ("cpu,cpuacct", "cpu", "cpuacct,cpu")


def cpu_list(text):
    """CPU ids of a kernel CPU list ("0-3,8,10-11")."""
    return cpulist.cpu_ids(text)


class ProcFS(object):

    def __init__(self, root="/"):
        self.root = root

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def read(self, *parts):
        with open(self.path(*parts)) as handle:
            return handle.read()

    def host_pressure(self):
        """{cpu, memory, io} PSI of the whole host. Raises NoPressureInfo
        when the kernel keeps none."""
        result = {}
        for resource in pressure.RESOURCES:
            try:
                text = self.read("proc", "pressure", resource)
            except (IOError, OSError) as exc:
                if resource == "cpu":
                    raise pressure.NoPressureInfo(
                        "cannot read /proc/pressure/cpu (%s): this kernel keeps no pressure stall information (PSI); "
                        "boot it with psi=1, or use one built with CONFIG_PSI=y" % (exc.strerror or exc))
                continue
            result[resource] = pressure.parse_psi(text)
        return result

    def load(self):
        result = pressure.parse_loadavg(self.read("proc", "loadavg"))
        result.update(pressure.parse_stat(self.read("proc", "stat"), os.sysconf("SC_CLK_TCK")))
        return result

    def cpu_count(self):
        """CPUs online, from /sys (what the scheduler can use)."""
        try:
            text = self.read("sys", "devices", "system", "cpu", "online").strip()
        except (IOError, OSError):
            return os.cpu_count()
        return len(cpu_list(text))

    def isolated_cpus(self):
        """CPU ids the kernel keeps out of its load balancing (isolcpus):
        no shared VM's thread is moved there. Empty when none or unknown."""
        try:
            return cpu_list(self.read("sys", "devices", "system", "cpu", "isolated").strip())
        except (IOError, OSError):
            return []

    def cgroup_version(self):
        return 2 if os.path.exists(self.path("sys", "fs", "cgroup", "cgroup.controllers")) else 1

    def cpu_cgroup_root(self, version):
        if version == 2:
            return self.path("sys", "fs", "cgroup")
        for mount in V1_CPU_MOUNTS:
            candidate = self.path("sys", "fs", "cgroup", mount)
            if os.path.isdir(candidate):
                return candidate
        return None

    def vm_parent(self, version):
        """(path, PSI or None) of the cgroup that holds the VMs, or None.
        Only cgroup v2 keeps PSI per cgroup."""
        root = self.cpu_cgroup_root(version)
        for name in VM_PARENTS:
            candidate = os.path.join(root or "", name)
            if root and os.path.isdir(candidate):
                psi = None
                if version == 2 and os.path.exists(os.path.join(candidate, "cpu.pressure")):
                    with open(os.path.join(candidate, "cpu.pressure")) as handle:
                        psi = pressure.parse_psi(handle.read())
                return {"path": candidate[len(self.root.rstrip("/")):] or "/", "cpu_pressure": psi}
        return None

    def find_domain_cgroup(self, domain_id, version):
        """The directory of a running domain's cgroup, found by the domain's
        id in the name libvirt gives it; None when it has none. Under systemd
        (a machine scope) that is the scope's nested `libvirt` cgroup, where
        libvirt puts every thread of the domain and sets its quota."""
        root = self.cpu_cgroup_root(version)
        if root is None:
            return None
        prefix, suffix = pressure.domain_cgroup_names(domain_id, version)
        for parent, directories, _files in os.walk(root):
            depth = parent[len(root):].count(os.sep)
            for name in directories:
                if name.startswith(prefix) and name.endswith(suffix):
                    found = os.path.join(parent, name)
                    nested = os.path.join(found, "libvirt")
                    return nested if os.path.isdir(nested) else found
            if depth >= 3:
                del directories[:]
        return None

    def domain_throttling(self, directory, version):
        """CFS statistics of a domain's cgroup and the sum of its vCPU
        cgroups (where per-vCPU quotas are enforced), and its own PSI on v2."""
        own = pressure.parse_cpu_stat(self._read_file(directory, "cpu.stat"), version)
        vcpus = []
        for name in sorted(os.listdir(directory)):
            child = os.path.join(directory, name)
            if name.startswith("vcpu") and os.path.isdir(child) and os.path.exists(os.path.join(child, "cpu.stat")):
                vcpus.append(pressure.parse_cpu_stat(self._read_file(child, "cpu.stat"), version))
        psi = None
        if version == 2 and os.path.exists(os.path.join(directory, "cpu.pressure")):
            psi = pressure.parse_psi(self._read_file(directory, "cpu.pressure"))
        return {"cgroup": directory[len(self.root.rstrip("/")):] or "/", "throttling": own,
                "vcpu_throttling": pressure.add_cpu_stats(vcpus) if vcpus else None, "cpu_pressure": psi}

    @staticmethod
    def _read_file(directory, name):
        with open(os.path.join(directory, name)) as handle:
            return handle.read()
