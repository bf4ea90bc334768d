# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a libvirt domain's XML and writing the throttle record kept in
its <metadata>. Pure: strings in, plain data out.

The class is read from <metadata><vm xmlns=CLASS_NAMESPACE><class>...; the
throttle record is one element in THROTTLE_NAMESPACE holding who, why, when,
the cap, the exact values it replaced per target (live, config) and which of
them the throttle set (`owns`, the only ones restore writes back). A record
without `owns` (written before it existed) restores every value it recorded.

The control policy's state between cycles and the kill switch are one
element in POLICY_NAMESPACE (either part may be absent; with neither the
element is removed):

    <policy>
      <pause reason="INC-1" by="alice" time="2024-05-01T10:00:00Z"/>
      <state>{"cap": 0.5, "rule": "throttle", ...}</state>
    </policy>

`pause` present means paused (no automatic action on the domain), with
why, who and when; `state` holds the policy's per-VM state as JSON (sorted
keys, so the same state always gives the same text).

Each element the collection writes carries the record schema it was written
in (attribute `schema`, common.record); one without it is read as schema 1."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import xml.etree.ElementTree as ET

from ansible_collections.overcommit.control.plugins.module_utils.common import cpulist
from ansible_collections.overcommit.control.plugins.module_utils.common import untrusted
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.common.record import RECORD_SCHEMA, SCHEMA_FIELD, \
    check_schema, schema_refusal
from ansible_collections.overcommit.control.plugins.module_utils.domain import cpu
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import plan

CLASS_NAMESPACE = "https://overcommit.control/xmlns/vm/1"
THROTTLE_NAMESPACE = "https://overcommit.control/xmlns/throttle/1"
THROTTLE_KEY = "overcommit"
RECORD_FIELDS = ("reason", "time", "by", "class", "scope", "cpus", "plan")
# A domain's two definitions: the running one and the persistent one.
LIVE = "live"
CONFIG = "config"
TARGETS = (LIVE, CONFIG)
POLICY_NAMESPACE = "https://overcommit.control/xmlns/policy/1"
# The prefix libvirt gives the policy element (the throttle record uses THROTTLE_KEY).
POLICY_KEY = "ocpolicy"
PAUSE_FIELDS = ("reason", "by", "time")


class RecordError(ValueRangeError):
    """A throttle record in a domain's metadata that cannot be used as it is
    (edited by hand, or by something else than this collection); names the
    record's field, e.g. throttle.cpus or throttle.previous.live.global_quota."""

    def __init__(self, field, value, allowed):
        super(RecordError, self).__init__(field, value, allowed)
        self.args = ("the throttle record in the domain's metadata cannot be used: %s=%r is out of range: "
                     "allowed %s; nothing was changed (correct or remove the record: virsh metadata DOMAIN %s "
                     "--remove --config, and --live while it runs)" % (field, value, allowed, THROTTLE_NAMESPACE),)


def pins(cputune, host_cpus=None):
    """Whether a <cputune> pins a vCPU: a <vcpupin> that leaves out some of
    the host's CPUs. Pinned to all of them (what `virsh vcpupin` leaves after
    putting a vCPU back) is no pinning; with the host's CPU count unknown,
    any <vcpupin> counts, as the safer reading for a dedicated VM."""
    if cputune is None:
        return False
    every = set(range(host_cpus)) if host_cpus else None
    for pin in cputune.findall("vcpupin"):
        try:
            ids = set(cpulist.cpu_ids(pin.get("cpuset")))
        except ValueError:
            return True
        if every is None or not every <= ids:
            return True
    return False


def class_facts(root, class_namespace=CLASS_NAMESPACE, host_cpus=None):
    """What decides a domain's class (pinning, realtime scheduling, declared
    class) in a parsed domain XML; `host_cpus` (the host's CPU count) tells
    a pin to every CPU from a real one."""
    cputune = root.find("cputune")
    element = root.find("metadata/{%s}vm" % class_namespace)
    if element is not None:
        check_schema("vm.schema", element.get(SCHEMA_FIELD))
    declared = root.findtext("metadata/{%s}vm/{%s}class" % (class_namespace, class_namespace))
    baseline = root.findtext("metadata/{%s}vm/{%s}baseline" % (class_namespace, class_namespace))
    return {
        "pinned": pins(cputune, host_cpus),
        "realtime": cputune is not None and any(
            sched.get("scheduler") in ("fifo", "rr") for sched in cputune.findall("vcpusched")),
        "declared_class": declared.strip() if declared else None,
        "baseline_cpus": _baseline(baseline),
    }


def _baseline(text):
    """A burstable baseline in CPUs as the class element holds it; None when
    there is none or it is not a number above 0 (metadata is untrusted)."""
    text = (text or "").strip()
    if len(text) > 32:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    # No host has a million CPUs: anything above is not a baseline.
    return value if 0 < value < 1e6 else None


CLASS_KEY = "oc"


def class_xml(vm_class, baseline_cpus=None):
    """The element libvirt stores under CLASS_NAMESPACE: the VM's class, and
    a burstable VM's baseline; None removes it."""
    if vm_class is None:
        return None
    element = ET.Element("vm", {SCHEMA_FIELD: str(RECORD_SCHEMA)})
    ET.SubElement(element, "class").text = vm_class
    if baseline_cpus is not None:
        ET.SubElement(element, "baseline").text = "%g" % baseline_cpus
    return ET.tostring(element, encoding="unicode")


def describe(xml_text, class_namespace=CLASS_NAMESPACE, host_cpus=None):
    """vcpus, pinning, realtime scheduling, declared class and the throttle
    record of one domain XML; raises RecordError when the record cannot be
    used."""
    root = ET.fromstring(xml_text)
    vcpu = root.find("vcpu")
    record = root.find("metadata/{%s}throttle" % THROTTLE_NAMESPACE)
    return dict(
        class_facts(root, class_namespace, host_cpus),
        vcpus=int(vcpu.get("current") or vcpu.text) if vcpu is not None else 1,
        max_vcpus=int(vcpu.text) if vcpu is not None else 1,
        record=parse_record(record) if record is not None else None,
        policy=parse_policy_of(root),
    )


def parse_policy_of(root):
    """The policy element of a parsed domain XML (parse_policy), or an empty
    one when the domain has none."""
    element = root.find("metadata/{%s}policy" % POLICY_NAMESPACE)
    if element is None:
        return {"state": None, "pause": None, "error": None}
    return parse_policy(element)


def parse_policy(element):
    """{state: the stored policy state (dict) or None, pause: {reason, by,
    time} or None, error: why the stored state cannot be read, or None}.
    The kill switch of an element of a newer schema still holds (pausing is
    the safe way to misread it); its state is not read."""
    out = {"state": None, "pause": None, "error": None}
    newer = schema_refusal(element.get(SCHEMA_FIELD))
    if newer:
        out["error"] = "the stored policy element cannot be read: %s" % newer
    for child in element:
        tag = child.tag.rsplit("}", 1)[-1]
        if tag == "pause":
            out["pause"] = dict((field, child.get(field)) for field in PAUSE_FIELDS if child.get(field) is not None)
        elif tag == "state" and not newer:
            try:
                state = untrusted.loads(child.text or "")
            except ValueError as exc:
                out["error"] = "the stored policy state is not JSON (%s)" % exc
                continue
            if isinstance(state, dict):
                out["state"] = state
            else:
                out["error"] = "the stored policy state is a %s, not a mapping" % type(state).__name__
    return out


def state_text(state):
    """The policy state as the JSON text stored (sorted keys, compact, no
    NaN or infinity); raises ValueError or TypeError when it is not JSON."""
    return json.dumps(state, sort_keys=True, separators=(",", ":"), allow_nan=False)


def policy_xml(state, pause):
    """The element libvirt stores under POLICY_NAMESPACE, or None when there
    is neither a state nor a pause (the element is then removed)."""
    if state is None and pause is None:
        return None
    element = ET.Element("policy", {SCHEMA_FIELD: str(RECORD_SCHEMA)})
    if pause is not None:
        node = ET.SubElement(element, "pause")
        for field in PAUSE_FIELDS:
            if pause.get(field) is not None:
                node.set(field, str(pause[field]))
    if state is not None:
        ET.SubElement(element, "state").text = state_text(state)
    return ET.tostring(element, encoding="unicode")


# What a recorded previous value may be: as libvirt reports it live, or 0
# for "not set" in the persistent config (a negative quota is no limit).
PREVIOUS_ALLOWED = {
    "period": ("0 or %d..%d" % cpu.PERIOD_RANGE,
               lambda v: v == 0 or cpu.PERIOD_RANGE[0] <= v <= cpu.PERIOD_RANGE[1]),
    "quota": ("-1 (no limit), 0 or %d..%d" % cpu.QUOTA_RANGE,
              lambda v: v <= 0 or cpu.QUOTA_RANGE[0] <= v <= cpu.QUOTA_RANGE[1]),
    "shares": ("0..%d" % cpu.SHARES_RANGE_V1[1], lambda v: 0 <= v <= cpu.SHARES_RANGE_V1[1]),
}


def _previous_value(field, text):
    kind = "shares" if field.endswith("cpu_shares") else field.rsplit("_", 1)[-1]
    allowed, ok = PREVIOUS_ALLOWED[kind]
    try:
        value = int(text)
    except ValueError:
        raise RecordError(field, text, "an integer, " + allowed)
    if not ok(value):
        raise RecordError(field, value, allowed)
    return value


def parse_record(element):
    """The throttle record as plain data; raises RecordError, naming the
    field, for a value restore could not write back (the record is read from
    the domain, so it is not trusted to be the collection's own), and
    NewerRecordError for a record of a newer schema."""
    check_schema("throttle.schema", element.get(SCHEMA_FIELD))
    record = dict((field, element.get(field)) for field in RECORD_FIELDS if element.get(field) is not None)
    for field in sorted(record):
        if len(record[field]) > untrusted.MAX_CHARS:
            raise RecordError("throttle." + field, "%s... (%d characters)" % (record[field][:40], len(record[field])),
                              "at most %d characters" % untrusted.MAX_CHARS)
    if "cpus" in record:
        try:
            record["cpus"] = float(record["cpus"])
        except ValueError:
            raise RecordError("throttle.cpus", record["cpus"], "a number of CPUs above 0")
        if not 0 < record["cpus"] < float("inf"):
            raise RecordError("throttle.cpus", record["cpus"], "a number of CPUs above 0")
    if element.get("owns") is not None:
        record["owns"] = _owned_keys(element.get("owns"))
    record["previous"] = {}
    for previous in element:
        if previous.tag.rsplit("}", 1)[-1] == "previous" and previous.get("target") in TARGETS:
            target = previous.get("target")
            record["previous"][target] = dict(
                (key, _previous_value("throttle.previous.%s.%s" % (target, key), previous.get(key)))
                for key in plan.TUNE_KEYS if previous.get(key) is not None)
    return record


def _owned_keys(text):
    """The record's `owns`: the tuning keys the throttle set, space-separated."""
    if len(text) > untrusted.MAX_CHARS:
        raise RecordError("throttle.owns", "%s... (%d characters)" % (text[:40], len(text)),
                          "at most %d characters" % untrusted.MAX_CHARS)
    keys = text.split()
    unknown = [key for key in keys if key not in plan.TUNE_KEYS]
    if unknown:
        raise RecordError("throttle.owns", unknown[0], "tuning keys of %s" % ", ".join(plan.TUNE_KEYS))
    return [key for key in plan.TUNE_KEYS if key in keys]


def record_xml(record):
    """The record as the element libvirt stores under THROTTLE_NAMESPACE."""
    element = ET.Element("throttle", {SCHEMA_FIELD: str(RECORD_SCHEMA)})
    for field in RECORD_FIELDS:
        if record.get(field) is not None:
            element.set(field, _text(record[field]))
    if record.get("owns") is not None:
        element.set("owns", " ".join(record["owns"]))
    for target in TARGETS:
        values = record.get("previous", {}).get(target)
        if values is not None:
            previous = ET.SubElement(element, "previous", target=target)
            for key in plan.TUNE_KEYS:
                if key in values:
                    previous.set(key, str(values[key]))
    return ET.tostring(element, encoding="unicode")


CPUTUNE = re.compile(r"<cputune>(.*?)</cputune>", re.S)
SHARES = re.compile(r"\s*<shares>\d+</shares>")
EMPTY_CPUTUNE = re.compile(r"\n?[ \t]*<cputune>\s*</cputune>")


def without_config_shares(xml_text):
    """The persistent definition without its <cputune><shares>: libvirt's
    way to say "not set" (a written 0 would refuse to start). A text edit of
    that element alone: a parse and rewrite of the whole definition would
    rename the metadata's namespace prefixes and leave their declarations
    behind once a record is removed."""
    found = CPUTUNE.search(xml_text)
    if found is None or not SHARES.search(found.group(1)):
        return xml_text
    block = "<cputune>%s</cputune>" % SHARES.sub("", found.group(1), count=1)
    edited = xml_text[:found.start()] + block + xml_text[found.end():]
    return EMPTY_CPUTUNE.sub("", edited, count=1)


def _text(value):
    if isinstance(value, float):
        return "%g" % value
    return str(value)


def collection_metadata(xml_text):
    """The collection's elements in a domain's <metadata> (class, throttle
    record, policy state and pause), as plain data keyed by namespace: what
    a move must carry exactly, whatever prefixes libvirt writes."""
    metadata = ET.fromstring(xml_text).find("metadata")
    found = {}
    for element in list(metadata) if metadata is not None else []:
        namespace = element.tag[1:].split("}", 1)[0] if element.tag.startswith("{") else ""
        if namespace.startswith("https://overcommit.control/xmlns/"):
            found[namespace] = _element_data(element)
    return found


def _element_data(element):
    return {"tag": element.tag, "attributes": dict(element.attrib), "text": (element.text or "").strip(),
            "children": [_element_data(child) for child in element]}
