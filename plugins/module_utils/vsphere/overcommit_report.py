# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vsphere_overcommit_info's request: what it may ask vCenter for. Pure:
overcommit_reader.py reads the inventory and the counters, and `capacity`
and `perf` make the figures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.vsphere import perf


class OvercommitReportError(ValueRangeError):
    def __init__(self, field, message):
        super(OvercommitReportError, self).__init__(field, None, message)
        self.args = ("%s: %s" % (field, message),)


def validate(params):
    samples = params["samples"]
    if not 1 <= samples <= perf.MAX_REALTIME_SAMPLES:
        raise OvercommitReportError("samples", "%r is not allowed: 1..%d real-time samples of 20 s (up to one hour)"
                                    % (samples, perf.MAX_REALTIME_SAMPLES))
