# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for monitoring: the collection's metrics as a textfile."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.monitoring import textfile
from ansible_collections.overcommit.control.plugins.plugin_utils.filter_guard import filter_guard


@filter_guard
def prometheus_textfile(domains, host, nodes=None):
    return textfile.render(domains, host, nodes)


class FilterModule(object):
    def filters(self):
        return {"prometheus_textfile": prometheus_textfile}
