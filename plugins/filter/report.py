# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the operator's report (playbooks/report.yml): the page's
content decided in Python, and inline SVG line charts for the template."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.collections import is_sequence
from ansible_collections.overcommit.control.plugins.module_utils.common import svg
from ansible_collections.overcommit.control.plugins.module_utils.monitoring import report
from ansible_collections.overcommit.control.plugins.plugin_utils.filter_guard import filter_guard

try:
    from markupsafe import Markup
except ImportError:  # markupsafe comes with Jinja2; without it the SVG is returned as plain text
    Markup = str


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fail(argument, value, expected):
    raise AnsibleFilterError("svg_line_chart: %s=%r is not %s" % (argument, value, expected))


def _check_lines(lines, count):
    if not is_sequence(lines):
        _fail("lines", lines, "a list of lines ({label, values, dashed, step, colour})")
    checked = []
    for index, line in enumerate(lines):
        name = "lines[%d]" % index
        if not isinstance(line, dict):
            _fail(name, line, "a dict with label and values")
        if "label" not in line or line["label"] is None or isinstance(line["label"], (dict, list)):
            _fail(name + ".label", line.get("label"), "a text")
        values = line.get("values")
        if not is_sequence(values):
            _fail(name + ".values", values, "a list of numbers (null for a gap)")
        if len(values) != count:
            _fail(name + ".values", values, "a list of %d values, one per time" % count)
        for position, value in enumerate(values):
            if value is not None and not _is_number(value):
                _fail("%s.values[%d]" % (name, position), value, "a number or null")
        colour = line.get("colour")
        if colour is not None and not isinstance(colour, str):
            _fail(name + ".colour", colour, "a colour as text")
        checked.append(dict(line, label=str(line["label"]), values=list(values)))
    return checked


def svg_line_chart(lines, title, times, y_label, width=640, height=240, y_max=None):
    """An inline SVG line chart (common.svg.line_chart), marked safe for
    Jinja2's autoescape: every text from the data is escaped inside."""
    if not is_sequence(times):
        _fail("times", times, "a list of unix times or seconds")
    for position, value in enumerate(times):
        if not _is_number(value):
            _fail("times[%d]" % position, value, "a number of seconds")
    if any(later < earlier for earlier, later in zip(times, times[1:])):
        _fail("times", times, "in order, earliest first")
    checked = _check_lines(lines, len(times))
    if title is None or isinstance(title, (dict, list)):
        _fail("title", title, "a text")
    if y_label is None or isinstance(y_label, (dict, list)):
        _fail("y_label", y_label, "a text")
    for argument, value, least in (("width", width, 200), ("height", height, 100)):
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            _fail(argument, value, "a whole number of pixels, at least %d" % least)
    if y_max is not None and (not _is_number(y_max) or y_max <= 0):
        _fail("y_max", y_max, "a number above 0, or null")
    return Markup(svg.line_chart(str(title), list(times), checked, str(y_label), width=width, height=height,
                                 y_max=y_max))


@filter_guard
def report_rows(hosts, generated, hypervisors=None, nodes=None, two_layer=None, plan=None, kubevirt=None):
    return report.page(hosts, generated, hypervisors=hypervisors, nodes=nodes, two_layer=two_layer, plan=plan,
                       kubevirt=kubevirt)


class FilterModule(object):
    def filters(self):
        return {
            "svg_line_chart": svg_line_chart,
            "report_rows": report_rows,
        }
