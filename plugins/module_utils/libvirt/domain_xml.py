# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a libvirt domain's XML and writing the throttle record kept in
its <metadata>. Pure: strings in, plain data out.

The class is read from <metadata><vm xmlns=CLASS_NAMESPACE><class>...; the
throttle record is one element in THROTTLE_NAMESPACE holding who, why, when,
the cap and the exact values it replaced, per target (live, config)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import xml.etree.ElementTree as ET

from ansible_collections.overcommit.control.plugins.module_utils.libvirt import plan

CLASS_NAMESPACE = "https://overcommit.control/xmlns/vm/1"
THROTTLE_NAMESPACE = "https://overcommit.control/xmlns/throttle/1"
THROTTLE_KEY = "overcommit"
RECORD_FIELDS = ("reason", "time", "by", "class", "scope", "cpus", "plan")
TARGETS = ("live", "config")


def describe(xml_text, class_namespace=CLASS_NAMESPACE):
    """vcpus, pinning, realtime scheduling, declared class and the throttle
    record of one domain XML."""
    root = ET.fromstring(xml_text)
    vcpu = root.find("vcpu")
    cputune = root.find("cputune")
    pinned = cputune is not None and cputune.find("vcpupin") is not None
    realtime = cputune is not None and any(
        sched.get("scheduler") in ("fifo", "rr") for sched in cputune.findall("vcpusched"))
    declared = root.findtext("metadata/{%s}vm/{%s}class" % (class_namespace, class_namespace))
    record = root.find("metadata/{%s}throttle" % THROTTLE_NAMESPACE)
    return {
        "vcpus": int(vcpu.get("current") or vcpu.text) if vcpu is not None else 1,
        "max_vcpus": int(vcpu.text) if vcpu is not None else 1,
        "pinned": pinned,
        "realtime": realtime,
        "declared_class": declared.strip() if declared else None,
        "record": parse_record(record) if record is not None else None,
    }


def parse_record(element):
    record = dict((field, element.get(field)) for field in RECORD_FIELDS if element.get(field) is not None)
    if "cpus" in record:
        record["cpus"] = float(record["cpus"])
    record["previous"] = {}
    for previous in element:
        if previous.tag.rsplit("}", 1)[-1] == "previous" and previous.get("target") in TARGETS:
            record["previous"][previous.get("target")] = dict(
                (key, int(previous.get(key))) for key in plan.TUNE_KEYS if previous.get(key) is not None)
    return record


def record_xml(record):
    """The record as the element libvirt stores under THROTTLE_NAMESPACE."""
    element = ET.Element("throttle")
    for field in RECORD_FIELDS:
        if record.get(field) is not None:
            element.set(field, _text(record[field]))
    for target in TARGETS:
        values = record.get("previous", {}).get(target)
        if values is not None:
            previous = ET.SubElement(element, "previous", target=target)
            for key in plan.TUNE_KEYS:
                if key in values:
                    previous.set(key, str(values[key]))
    return ET.tostring(element, encoding="unicode")


def _text(value):
    if isinstance(value, float):
        return "%g" % value
    return str(value)
