# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the two-layer overcommit (Kubernetes nodes that are ESXi VMs),
so the esxi_guard role decides and reports in Python, not in Jinja."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.k8s import metadata
from ansible_collections.overcommit.control.plugins.module_utils.vsphere import esxi_guard, node_map
from ansible_collections.overcommit.control.plugins.plugin_utils.filter_guard import filter_guard

DEFAULT_TAINT_KEY = "esxi-pressure"
DEFAULT_HOST_LABEL = "esxi-host"


def _key(field, key, prefix):
    return metadata.owned_key(field, key, metadata.check_prefix(prefix))


@filter_guard
def two_layer_report(nodes, vsphere, watermarks, prefix=metadata.DEFAULT_PREFIX, taint_key=DEFAULT_TAINT_KEY,
                     match=node_map.MATCHERS, reopen_fraction=1.0, gate=True):
    if isinstance(nodes, dict):
        nodes = nodes.get("nodes") or []
    return esxi_guard.report(nodes, vsphere, watermarks, _key("taint_key", taint_key, prefix), match=list(match),
                             reopen_fraction=reopen_fraction, gate=bool(gate))


@filter_guard
def esxi_gate_plan(report, prefix=metadata.DEFAULT_PREFIX, taint_key=DEFAULT_TAINT_KEY, host_label=DEFAULT_HOST_LABEL):
    rows = report.get("nodes") if isinstance(report, dict) else report
    return esxi_guard.gate_plan(rows or [], _key("taint_key", taint_key, prefix), _key("host_label", host_label, prefix))


class FilterModule(object):
    def filters(self):
        return {
            "two_layer_report": two_layer_report,
            "esxi_gate_plan": esxi_gate_plan,
        }
