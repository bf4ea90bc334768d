# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulator's only file I/O: the trace files policy_simulate replays,
and the reports and traces it writes. Everything else in simulate/ is pure
(the layout test checks it)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import json
import os
import tempfile

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.simulate import report
from ansible_collections.overcommit.control.plugins.module_utils.simulate import trace as traces


def check_paths(request):
    """What run.check_request cannot see without the file system: the
    trace files are files, the report folder is not a file."""
    for field in ("trace", "trace_hosts"):
        if request[field] and not os.path.isfile(request[field]):
            raise ValueRangeError(field, request[field], "a readable file")
    if os.path.exists(request["report_dir"]) and not os.path.isdir(request["report_dir"]):
        raise ValueRangeError("report_dir", request["report_dir"], "a folder (this is a file)")


def read_hosts(path):
    with open(path, newline="") as handle:
        return traces.parse_hosts(handle, path)


def read_trace(path, hosts):
    with open(path, newline="") as handle:
        return traces.parse_trace(handle, hosts, path)


def load_trace(request):
    """The request's trace file, as run.simulate replays it: [(name, description, trace)]."""
    trace = read_trace(request["trace"], read_hosts(request["trace_hosts"]))
    return [(os.path.basename(request["trace"]), "trace %s" % request["trace"], trace)]


def write_rows(rows, path):
    with open(path, "w", newline="") as handle:
        csv.writer(handle).writerows(rows)


def write(simulation, report_dir, replayed=None):
    """Writes simulation.json and simulation.html (and, given `replayed`,
    each generated trace as NAME.csv and NAME_hosts.csv) into report_dir,
    each atomically; returns the paths written."""
    if not os.path.isdir(report_dir):
        os.makedirs(report_dir)
    paths = {}
    for name, trace in (replayed or {}).items():
        paths["%s.csv" % name] = _atomic(report_dir, "%s.csv" % name,
                                         lambda path, t=trace: write_rows(traces.trace_rows(t), path))
        paths["%s_hosts.csv" % name] = _atomic(report_dir, "%s_hosts.csv" % name,
                                               lambda path, t=trace: write_rows(traces.host_rows(t), path))
    text = json.dumps(simulation, indent=1, sort_keys=True)
    paths["simulation.json"] = _atomic(report_dir, "simulation.json", lambda path: _write_text(path, text))
    page = report.render(simulation)
    paths["simulation.html"] = _atomic(report_dir, "simulation.html", lambda path: _write_text(path, page))
    return paths


def _write_text(path, text):
    with open(path, "w") as handle:
        handle.write(text)


def _atomic(folder, name, writer):
    """Write through a temporary file in the same folder, then rename, so a
    reader never sees half a report."""
    handle, temporary = tempfile.mkstemp(prefix=".%s." % name, dir=folder)
    os.close(handle)
    try:
        writer(temporary)
        os.chmod(temporary, 0o644)
        os.rename(temporary, os.path.join(folder, name))
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return os.path.join(folder, name)
