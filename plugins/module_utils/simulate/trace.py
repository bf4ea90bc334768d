# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Traces the simulator replays: parsed from CSV lines (a row per interval
and VM) or made by a scenario generator, held compactly (an array of
demands per VM). Parsing checks every row and refuses a malformed trace
with the line and the reason, before anything is simulated. Pure: the
files themselves are read and written by files.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import math
from array import array

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import BURSTABLE, CLASSES

TRACE_COLUMNS = ("time", "host", "vm", "class", "vcpus", "demand_cpus")
OPTIONAL_COLUMNS = ("culprit", "baseline_cpus", "weight")
HOST_COLUMNS = ("host", "cpus")
# A burstable VM's baseline when the trace gives none, as a share of its vCPUs.
DEFAULT_BASELINE_SHARE = 0.2
# Rates exported from monitoring jitter: a demand up to this share above the
# VM's vCPUs is clamped to them (and counted); more is an error in the trace.
DEMAND_JITTER_SHARE = 0.05


class Trace(object):
    """hosts: {name: cpus}; vms: {key: {host, name, class, vcpus,
    baseline_cpus, weight}} in first-seen order (weight None: by its
    vCPUs); demand[key] and culprit[key]: one value per interval (a VM
    absent from an interval wants nothing); clamped: how many demands a
    little above their VM's vCPUs were clamped to them on reading."""

    def __init__(self, name, interval_seconds, hosts, start=0.0):
        self.name = name
        self.interval = float(interval_seconds)
        self.hosts = dict(hosts)
        self.start = float(start)
        self.vms = {}
        self.demand = {}
        self.culprit = {}
        self.count = 0
        self.has_ground_truth = False
        self.clamped = 0

    def add_vm(self, host, name, vm_class, vcpus, baseline_cpus=None, weight=None):
        key = "%s/%s" % (host, name)
        if vm_class == BURSTABLE and baseline_cpus is None:
            baseline_cpus = round(DEFAULT_BASELINE_SHARE * vcpus, 3)
        self.vms[key] = {"host": host, "name": name, "class": vm_class, "vcpus": vcpus,
                         "baseline_cpus": baseline_cpus if vm_class == BURSTABLE else None, "weight": weight}
        self.demand[key] = array("d", [0.0] * self.count)
        self.culprit[key] = array("b", [0] * self.count)
        return key

    def grow(self, count):
        """Room for `count` intervals in all."""
        for key in self.vms:
            extra = count - len(self.demand[key])
            if extra > 0:
                self.demand[key].extend([0.0] * extra)
                self.culprit[key].extend([0] * extra)
        self.count = max(self.count, count)

    def time(self, index):
        return self.start + index * self.interval

    @property
    def seconds(self):
        return self.count * self.interval


def _error(where, field, value, allowed):
    return ValueRangeError("%s: %s" % (where, field), value, allowed)


def parse_hosts(lines, path):
    """{host: cpus} from the lines of a CSV with the header host,cpus
    (`path` names it in errors)."""
    try:
        return _parse_hosts(lines, path)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise _error(path, "content", type(exc).__name__, "a UTF-8 CSV file (%s)" % exc)


def _parse_hosts(lines, path):
    hosts = {}
    rows = csv.reader(lines)
    header = [name.strip() for name in next(rows, [])]
    for column in HOST_COLUMNS:
        if column not in header:
            raise _error("%s line 1" % path, "header", ",".join(header), "a header with %s" % ",".join(HOST_COLUMNS))
    at = dict((name, header.index(name)) for name in HOST_COLUMNS)
    for line, row in enumerate(rows, start=2):
        if not row:
            continue
        where = "%s line %d" % (path, line)
        host = _cell(row, at["host"], where, "host")
        if not host:
            raise _error(where, "host", host, "a host name")
        if host in hosts:
            raise _error(where, "host", host, "each host once")
        cpus = _float(_cell(row, at["cpus"], where, "cpus"), where, "cpus")
        if cpus <= 0:
            raise _error(where, "cpus", cpus, "a number of CPUs above 0")
        hosts[host] = cpus
    if not hosts:
        raise _error(path, "hosts", 0, "at least one host")
    return hosts


def _cell(row, index, where, field):
    if index >= len(row):
        raise _error(where, field, None, "a value in every row (the row has %d columns)" % len(row))
    return row[index].strip()


def _float(text, where, field):
    try:
        value = float(text)
    except ValueError:
        raise _error(where, field, text, "a number")
    if math.isnan(value) or math.isinf(value):
        raise _error(where, field, text, "a finite number")
    return value


def parse_trace(lines, hosts, path):
    """A Trace from the lines of a CSV; see _parse_trace."""
    try:
        return _parse_trace(lines, hosts, path)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise _error(path, "content", type(exc).__name__, "a UTF-8 CSV file (%s)" % exc)


def _parse_trace(lines, hosts, path):
    """A Trace from the lines of a CSV with the header time,host,vm,class,
    vcpus,demand_cpus (and optional culprit, baseline_cpus, weight), `path`
    naming it in errors; `hosts` from parse_hosts. Raises ValueRangeError
    naming the line and the field."""
    rows = csv.reader(lines)
    header = [name.strip() for name in next(rows, [])]
    for column in TRACE_COLUMNS:
        if column not in header:
            raise _error("%s line 1" % path, "header", ",".join(header),
                         "a header with the columns %s (and optionally %s); %s is missing"
                         % (",".join(TRACE_COLUMNS), ",".join(OPTIONAL_COLUMNS), column))
    at = dict((name, header.index(name)) for name in TRACE_COLUMNS + OPTIONAL_COLUMNS if name in header)
    trace = None
    host_of = {}
    index = -1
    last_time = None
    seen = set()
    for line, row in enumerate(rows, start=2):
        if not row:
            continue
        where = "%s line %d" % (path, line)
        time = _float(_cell(row, at["time"], where, "time"), where, "time")
        if last_time is None or time != last_time:
            if last_time is not None and time < last_time:
                raise _error(where, "time", time, "at least %s: time may not go backwards" % last_time)
            if trace is None:
                trace = Trace(path, 1.0, hosts, start=time)
            elif index == 0:
                trace.interval = time - last_time
            elif abs(time - last_time - trace.interval) > 1e-6:
                raise _error(where, "time", time, "%g: intervals must be regular (%g s)"
                             % (last_time + trace.interval, trace.interval))
            index += 1
            trace.grow(index + 1)
            last_time = time
            seen = set()
        host = _cell(row, at["host"], where, "host")
        if host not in hosts:
            raise _error(where, "host", host, "a host of the hosts file (%s)" % ", ".join(sorted(hosts)[:5]))
        name = _cell(row, at["vm"], where, "vm")
        if not name:
            raise _error(where, "vm", name, "a VM name")
        vm_class = _cell(row, at["class"], where, "class")
        if vm_class not in CLASSES:
            raise _error(where, "class", vm_class, "one of %s" % ", ".join(CLASSES))
        vcpus_text = _cell(row, at["vcpus"], where, "vcpus")
        try:
            vcpus = int(vcpus_text)
        except ValueError:
            raise _error(where, "vcpus", vcpus_text, "a whole number of vCPUs")
        if vcpus < 1:
            raise _error(where, "vcpus", vcpus, "at least 1")
        demand = _float(_cell(row, at["demand_cpus"], where, "demand_cpus"), where, "demand_cpus")
        if vcpus < demand <= vcpus * (1 + DEMAND_JITTER_SHARE):
            demand = float(vcpus)
            trace.clamped += 1
        if not 0 <= demand <= vcpus:
            raise _error(where, "demand_cpus", demand, "0..%d (the VM's vCPUs; up to %g %% above them is taken "
                         "as rate jitter and clamped)" % (vcpus, 100 * DEMAND_JITTER_SHARE))
        culprit = 0
        if "culprit" in at and _cell(row, at["culprit"], where, "culprit") != "":
            text = _cell(row, at["culprit"], where, "culprit")
            if text not in ("0", "1"):
                raise _error(where, "culprit", text, "0 or 1")
            culprit = int(text)
            trace.has_ground_truth = True
        baseline = None
        if "baseline_cpus" in at and _cell(row, at["baseline_cpus"], where, "baseline_cpus") != "":
            baseline = _float(_cell(row, at["baseline_cpus"], where, "baseline_cpus"), where, "baseline_cpus")
            if vm_class != BURSTABLE or not 0 < baseline < vcpus:
                raise _error(where, "baseline_cpus", baseline, "only for burstable VMs, above 0 and under vcpus")
        weight = None
        if "weight" in at and _cell(row, at["weight"], where, "weight") != "":
            weight = _float(_cell(row, at["weight"], where, "weight"), where, "weight")
            if weight <= 0:
                raise _error(where, "weight", weight, "a CPU weight above 0 (cpu.shares, cpu.weight or a CPU "
                             "request), or empty for a weight by vCPUs")
        key = "%s/%s" % (host, name)
        if key in seen:
            raise _error(where, "vm", name, "one row per VM and interval (%s is twice at time %g)" % (key, time))
        seen.add(key)
        known = trace.vms.get(key)
        if known is None:
            if name in host_of:
                raise _error(where, "host", host, "%s (a VM stays on one host in a trace)" % host_of[name])
            host_of[name] = host
            trace.add_vm(host, name, vm_class, vcpus, baseline, weight)
            trace.grow(index + 1)
        elif known["class"] != vm_class or known["vcpus"] != vcpus or known["weight"] != weight:
            raise _error(where, "vm", name, "the same class, vcpus and weight in every row (was %s, %d vCPUs, "
                         "weight %s)" % (known["class"], known["vcpus"], known["weight"]))
        trace.demand[key][index] = demand
        trace.culprit[key][index] = culprit
    if trace is None:
        raise _error(path, "rows", 0, "at least one row after the header")
    return trace


def trace_rows(trace):
    """The trace as CSV rows, header first (the format parse_trace reads),
    e.g. to replay a generated scenario with one's own changes."""
    yield TRACE_COLUMNS + OPTIONAL_COLUMNS
    for index in range(trace.count):
        time = "%g" % trace.time(index)
        for key, vm in trace.vms.items():
            yield (time, vm["host"], vm["name"], vm["class"], vm["vcpus"],
                   "%.4g" % trace.demand[key][index], trace.culprit[key][index],
                   "" if vm["baseline_cpus"] is None else "%g" % vm["baseline_cpus"],
                   "" if vm.get("weight") is None else "%g" % vm["weight"])


def host_rows(trace):
    """The trace's hosts as CSV rows, header first (what parse_hosts reads)."""
    yield HOST_COLUMNS
    for host, cpus in trace.hosts.items():
        yield (host, "%g" % cpus)
