# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""libvirt_migrate's options and report. Pure: what may move is judged in
domain/migration.py, the moves are made by migrate_runner.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import migration
from ansible_collections.overcommit.control.plugins.module_utils.domain.migration import check_max_vcpu_ratio
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import DEFAULT_FLOOR_FRACTION


def check_floor_fraction(value):
    """floor_fraction: the share of its vCPUs a shared VM is promised, 0 to 1."""
    if value is None:
        return DEFAULT_FLOOR_FRACTION
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueRangeError("floor_fraction", value, "the share of its vCPUs a shared VM is promised, 0 to 1 "
                                                       "(the policy's floor_fraction; default %g)" % DEFAULT_FLOOR_FRACTION)
    return float(value)


def check_request(params, check_mode):
    """The task's options as a request, checked before any connection;
    raises ValueRangeError naming the field and the allowed values."""
    if not params.get("domains"):
        raise ValueRangeError("domains", params.get("domains"), "names of running domains to move (at least one)")
    target_uri = (params.get("target_uri") or "").strip()
    if "://" not in target_uri:
        raise ValueRangeError("target_uri", params.get("target_uri"),
                              "the libvirt URI of the target host as this host's libvirtd reaches it "
                              "(e.g. qemu+ssh://hv-2/system or qemu+tls://hv-2/system)")
    if target_uri.split("://", 1)[1].split("/", 1)[0] in ("", "localhost"):
        raise ValueRangeError("target_uri", target_uri,
                              "a URI that names the target host: this host's libvirtd opens it, so a local URI "
                              "would be this host itself")
    return dict(params, check_mode=check_mode, target_uri=target_uri,
                floor_fraction=check_floor_fraction(params.get("floor_fraction")),
                max_vcpu_ratio=check_max_vcpu_ratio(params.get("max_vcpu_ratio")))


def report_line(result, check_mode=False):
    """One domain's line of the task's report."""
    return migration.report_line(result, "%s from %s to %s, records carried" % (
        "would move" if check_mode else "moved", result.get("source"), result.get("target")))
