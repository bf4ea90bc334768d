# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The only code that talks to libvirt: one connection, thin calls, libvirt
errors turned into LibvirtClientError with libvirt's own message and code."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import threading
import time
import xml.etree.ElementTree as ET

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.domain_xml import CONFIG, LIVE

try:
    import libvirt
except ImportError:  # reported by the module through HAS_LIBVIRT
    libvirt = None

HAS_LIBVIRT = libvirt is not None
# virErrorNumber VIR_ERR_NO_DOMAIN
ERR_NO_DOMAIN = 42


def connection_argument_spec():
    """The connection option every libvirt module takes (doc fragment
    overcommit.control.libvirt)."""
    return dict(uri=dict(type="str", default="qemu:///system"))


class LibvirtClientError(ObjectRefusal):
    """A call libvirtd refused or could not answer; code: libvirt's error code."""

    def __init__(self, message, code=None):
        super(LibvirtClientError, self).__init__(message)
        self.code = code


def _wrap(call, *args):
    try:
        return call(*args)
    except libvirt.libvirtError as exc:
        raise LibvirtClientError(exc.get_error_message() or str(exc), exc.get_error_code())


def _affect(target):
    return libvirt.VIR_DOMAIN_AFFECT_LIVE if target == LIVE else libvirt.VIR_DOMAIN_AFFECT_CONFIG


_EVENT_LOOP = []


def _ensure_event_loop():
    """The embedded QEMU driver (qemu:///embed?root=...) runs in this process
    and needs an event loop; start libvirt's default one once."""
    if _EVENT_LOOP:
        return
    libvirt.virEventRegisterDefaultImpl()
    thread = threading.Thread(target=_run_event_loop, name="libvirt-events")
    thread.daemon = True
    thread.start()
    _EVENT_LOOP.append(thread)


def _run_event_loop():
    while True:
        libvirt.virEventRunDefaultImpl()


class LibvirtClient(object):
    def __init__(self, uri):
        # Without a handler libvirt prints every error to stderr as well.
        libvirt.registerErrorHandler(lambda *args: None, None)
        if uri.split("?", 1)[0].endswith("/embed"):
            _ensure_event_loop()
        self.uri = uri
        self.conn = _wrap(libvirt.open, uri)
        self._host_cpus = None

    def close(self):
        self.conn.close()

    def lookup(self, name):
        return _wrap(self.conn.lookupByName, name)

    def all_domains(self):
        return _wrap(self.conn.listAllDomains, 0)

    def running_ids(self):
        """{name: id} of the running domains (the id names their cgroup)."""
        return dict((domain.name(), _wrap(domain.ID)) for domain in self.all_domains() if _wrap(domain.isActive))

    def describe(self, domain):
        """State and XML of one domain (the live definition when it runs)."""
        return {
            "name": domain.name(),
            "active": bool(_wrap(domain.isActive)),
            "persistent": bool(_wrap(domain.isPersistent)),
            "xml": _wrap(domain.XMLDesc, 0),
        }

    def uuid(self, domain):
        return _wrap(domain.UUIDString)

    def definition(self, domain, target):
        """The XML of one target: the running definition (live) or the
        persistent one (config)."""
        return _wrap(domain.XMLDesc, 0 if target == LIVE else libvirt.VIR_DOMAIN_XML_INACTIVE)

    def scheduler_parameters(self, domain, target):
        return _wrap(domain.schedulerParametersFlags, _affect(target))

    def set_scheduler_parameters(self, domain, params, target):
        params = dict(params)
        # In the persistent config 0 means "not set", but libvirt stores a
        # written cpu_shares=0 as <shares>0</shares>, which then refuses to start.
        unset_shares = target == CONFIG and params.get("cpu_shares") == 0
        if unset_shares:
            del params["cpu_shares"]
        if params:
            _wrap(domain.setSchedulerParametersFlags, params, _affect(target))
        if unset_shares:
            self._remove_config_shares(domain)

    def _remove_config_shares(self, domain):
        text = _wrap(domain.XMLDesc, libvirt.VIR_DOMAIN_XML_INACTIVE | libvirt.VIR_DOMAIN_XML_SECURE)
        edited = domain_xml.without_config_shares(text)
        if edited != text:
            _wrap(self.conn.defineXML, edited)

    def set_metadata(self, domain, element_xml, key, namespace, live, config):
        """Writes (or with element_xml None, removes) one metadata element."""
        flags = (libvirt.VIR_DOMAIN_AFFECT_LIVE if live else 0) | (libvirt.VIR_DOMAIN_AFFECT_CONFIG if config else 0)
        _wrap(domain.setMetadata, libvirt.VIR_DOMAIN_METADATA_ELEMENT, element_xml,
              key if element_xml else None, namespace, flags)

    def cpu_samples(self, domains):
        """One domain-stats sample for many domains in one call: cpu.time and
        per-vCPU delay, in nanoseconds, with the monotonic time it was taken."""
        flags = libvirt.VIR_DOMAIN_STATS_CPU_TOTAL | libvirt.VIR_DOMAIN_STATS_VCPU
        records = _wrap(self.conn.domainListGetStats, domains, flags, 0)
        taken = time.monotonic()
        samples = {}
        for domain, stats in records:
            delay = sum(value for key, value in stats.items() if key.startswith("vcpu.") and key.endswith(".delay"))
            samples[domain.name()] = {"cpu_time": stats.get("cpu.time", 0), "vcpu_delay": delay, "at": taken}
        return samples

    def cpus_allowed(self, domain):
        """Host CPU ids a running domain's vCPU threads may run on (the union
        of their live pinning; all of the host's CPUs where none is pinned).
        The emulator thread is left out: the vCPUs carry the guest's load."""
        allowed = set()
        for mask in _wrap(domain.vcpuPinInfo, libvirt.VIR_DOMAIN_AFFECT_LIVE):
            allowed.update(cpu for cpu, on in enumerate(mask) if on)
        return sorted(allowed)

    def host_cpu_count(self):
        """How many CPUs the host has (ids 0..n-1), read once per connection;
        None when the host cannot say (a pin then counts as a pin)."""
        if self._host_cpus is None:
            try:
                self._host_cpus = _wrap(self.conn.getCPUMap)[0]
            except LibvirtClientError:
                return None
        return self._host_cpus

    def started_at(self, domain):
        """When a running domain's QEMU process started (epoch seconds), for a
        hypervisor on this machine whose pid file this user can read; None
        otherwise (libvirt's API has no start time)."""
        path = qemu_pid_file(self.uri, domain.name())
        if path is None:
            return None
        try:
            with open(path) as handle:
                pid = int(handle.read().strip())
            with open("/proc/%d/stat" % pid) as handle:
                stat = handle.read()
            with open("/proc/stat") as handle:
                boot = handle.read()
        except (IOError, OSError, ValueError):
            return None
        return process_start(stat, boot, os.sysconf("SC_CLK_TCK"))

    def host_uuid(self):
        """The host's UUID as libvirt reports it (its capabilities): two URIs
        that reach the same host give the same UUID."""
        root = ET.fromstring(_wrap(self.conn.getCapabilities))
        return root.findtext("host/uuid")

    def hostname(self):
        return _wrap(self.conn.getHostname)

    def migrate(self, domain, target_uri, tunnelled):
        """Moves a running domain live to the host libvirtd reaches at
        `target_uri` (peer to peer: this host's libvirtd opens that
        connection, so its credentials are the ones that count), defined
        there with its persistent definition and undefined here. Tunnelled,
        the guest's memory goes through that connection, so one port (SSH or
        libvirt's) is all the hosts need between them. On failure libvirt
        leaves the domain running here."""
        flags = (libvirt.VIR_MIGRATE_LIVE | libvirt.VIR_MIGRATE_PEER2PEER | libvirt.VIR_MIGRATE_PERSIST_DEST
                 | libvirt.VIR_MIGRATE_UNDEFINE_SOURCE | libvirt.VIR_MIGRATE_AUTO_CONVERGE)
        if tunnelled:
            flags |= libvirt.VIR_MIGRATE_TUNNELLED
        _wrap(domain.migrateToURI3, target_uri, {}, flags)

    def cgroup_version(self):
        """1 or 2 for a hypervisor on this machine, None for a remote one (its
        cgroups cannot be seen from here)."""
        if not is_local_uri(self.uri):
            return None
        return local_cgroup_version()


def is_local_uri(uri):
    scheme_and_host = uri.split("?", 1)[0]
    return "://" in scheme_and_host and scheme_and_host.split("://", 1)[1].split("/", 1)[0] in ("", "localhost")


def qemu_pid_file(uri, name):
    """Where libvirtd keeps a running domain's QEMU pid: qemu:///system and
    qemu:///session on this machine; None for any other URI."""
    if not is_local_uri(uri) or not uri.startswith("qemu"):
        return None
    path = uri.split("?", 1)[0].split("://", 1)[1].split("/", 1)[-1].rstrip("/")
    if path == "system":
        return "/run/libvirt/qemu/%s.pid" % name
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if path == "session" and runtime:
        return os.path.join(runtime, "libvirt", "qemu", "run", "%s.pid" % name)
    return None


def process_start(stat, proc_stat, ticks_per_second):
    """A process's start (epoch seconds) from its /proc/PID/stat (field 22:
    clock ticks after boot) and /proc/stat's btime; None when unreadable."""
    try:
        # The command name may hold spaces and parentheses: fields count from the last ")".
        after_ticks = int(stat[stat.rindex(")") + 2:].split()[19])
        boot = [int(line.split()[1]) for line in proc_stat.splitlines() if line.startswith("btime ")][0]
    except (ValueError, IndexError):
        return None
    return round(boot + float(after_ticks) / ticks_per_second, 1)


def local_cgroup_version(mounts_path="/proc/mounts"):
    """cgroup v1 when a v1 hierarchy carries the cpu controller, else v2."""
    try:
        with open(mounts_path) as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) > 3 and fields[2] == "cgroup" and "cpu" in fields[3].split(","):
                    return 1
    except IOError:
        return None
    return 2 if os.path.exists("/sys/fs/cgroup/cgroup.controllers") else None
