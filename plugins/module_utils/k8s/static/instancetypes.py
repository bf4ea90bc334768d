# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""VM classes as KubeVirt products: one VirtualMachineClusterInstancetype and
one VirtualMachineClusterPreference per class definition, and what an
instancetype gives a VM. Pure: options and the API's JSON in, checked
definitions, objects and patches out.

dedicated: dedicatedCPUPlacement and isolateEmulatorThread, no memory overcommit.
shared:    no dedicated placement, so the launcher's CPU request is the
           vCPUs / the cluster's cpuAllocationRatio; memory overcommitted by
           spec.memory.overcommitPercent within the memory rules.
burstable: as shared, with its baseline in an annotation that KubeVirt
           copies from the instancetype's spec.annotations onto every VMI,
           where the control policy reads it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal, ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import credits, memory, vm_class
from ansible_collections.overcommit.control.plugins.module_utils.k8s import merge_patch, metadata, quantity

GROUP = "instancetype.kubevirt.io"
API = "/apis/%s/v1beta1" % GROUP
API_VERSION = GROUP + "/v1beta1"
CLUSTER_INSTANCETYPE = "VirtualMachineClusterInstancetype"
INSTANCETYPE = "VirtualMachineInstancetype"
CLUSTER_PREFERENCE = "VirtualMachineClusterPreference"
PREFERENCE = "VirtualMachinePreference"
INSTANCETYPE_KINDS = (CLUSTER_INSTANCETYPE, INSTANCETYPE)
PREFERENCE_KINDS = (CLUSTER_PREFERENCE, PREFERENCE)
PLURALS = {CLUSTER_INSTANCETYPE: "virtualmachineclusterinstancetypes", INSTANCETYPE: "virtualmachineinstancetypes",
           CLUSTER_PREFERENCE: "virtualmachineclusterpreferences", PREFERENCE: "virtualmachinepreferences"}
# The objects one definition makes, in the order they are written.
OBJECTS = (("instancetype", CLUSTER_INSTANCETYPE), ("preference", CLUSTER_PREFERENCE))
STATES = ("present", "absent")
CLASS_KEY = "class"
BASELINE_KEY = "baseline-cpus"
MAX_VCPUS = 512
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def keys(prefix):
    return {"class": prefix + CLASS_KEY, "baseline": prefix + BASELINE_KEY}


def path(kind, name=None, namespace=None):
    """The API path of an instancetype or preference kind (namespaced kinds
    need `namespace`)."""
    scope = "%s/namespaces/%s" % (API, namespace) if namespace else API
    base = "%s/%s" % (scope, PLURALS[kind])
    return "%s/%s" % (base, name) if name else base


def _check_name(index, definition):
    where = "classes[%d]" % index
    if not isinstance(definition, dict):
        raise ValueRangeError(where, definition, "a mapping with name, class, cpus and memory")
    name = definition.get("name")
    if not isinstance(name, str) or len(name) > 253 or not DNS_SUBDOMAIN.match(name):
        raise ValueRangeError(where + ".name", name, "a DNS subdomain (lower case letters, digits, '-' and '.'), "
                                                     "the name of the instancetype and of the preference")
    return {"name": name}


def _check_definition(index, definition, max_percent):
    where = "classes[%d]" % index
    known = ("name", "class", "cpus", "memory", "memory_overcommit_percent", "baseline_cpus")
    for key in definition:
        if key not in known:
            raise ValueRangeError("%s.%s" % (where, key), definition[key], "only the keys %s" % ", ".join(known))
    name = _check_name(index, definition)["name"]
    where = "classes[%s]" % name
    cls = definition.get("class")
    if cls not in vm_class.CLASSES:
        raise ValueRangeError(where + ".class", cls, "one of %s" % ", ".join(vm_class.CLASSES))
    cpus = definition.get("cpus")
    if isinstance(cpus, bool) or not isinstance(cpus, int) or not 1 <= cpus <= MAX_VCPUS:
        raise ValueRangeError(where + ".cpus", cpus, "a whole number of vCPUs, 1-%d" % MAX_VCPUS)
    guest = quantity.memory(where + ".memory", definition.get("memory"))
    if guest < memory.MI:
        raise ValueRangeError(where + ".memory", definition.get("memory"), "a quantity of at least 1Mi, e.g. 4Gi")
    percent = definition.get("memory_overcommit_percent")
    percent = 0 if percent is None else percent
    refusal = memory.overcommit_percent_refusal(percent, cls == vm_class.DEDICATED, max_percent)
    if refusal:
        raise ValueRangeError(where + ".memory_overcommit_percent", percent, refusal)
    baseline = definition.get("baseline_cpus")
    if cls == vm_class.BURSTABLE:
        if isinstance(baseline, bool) or not isinstance(baseline, (int, float)):
            raise ValueRangeError(where + ".baseline_cpus", baseline, "a number of CPUs above 0 and under the "
                                                                      "class's %d vCPUs (required for burstable)" % cpus)
        baseline = credits.check_baseline(where + ".baseline_cpus", baseline, cpus, whose="the class's")
    elif baseline is not None:
        raise ValueRangeError(where + ".baseline_cpus", baseline, "only for a burstable class (this one is %s)" % cls)
    return {"name": name, "class": cls, "cpus": cpus, "memory": guest, "memory_text": str(definition["memory"]),
            "overcommit_percent": percent, "baseline": baseline}


def check_request(params):
    """The module's options, checked before any API call (ValueRangeError
    naming the field): {state, definitions, keys}."""
    state = params.get("state")
    if state not in STATES:
        raise ValueRangeError("state", state, "one of %s" % ", ".join(STATES))
    max_percent = params.get("max_memory_overcommit_percent")
    low, high = memory.OVERCOMMIT_PERCENT_RANGE
    if isinstance(max_percent, bool) or not isinstance(max_percent, int) or not low <= max_percent < high:
        raise ValueRangeError("max_memory_overcommit_percent", max_percent, "an integer percentage %d-%d" % (
            low, high - 1))
    classes = params.get("classes")
    if not isinstance(classes, list) or not classes:
        raise ValueRangeError("classes", classes, "a non-empty list of class definitions")
    definitions, seen = [], set()
    for index, definition in enumerate(classes):
        if isinstance(definition, dict):
            # The argument spec gives every suboption; one not set is null.
            definition = dict((key, value) for key, value in definition.items() if value is not None)
        if state == "absent":
            # Removing needs only the name.
            definition = dict(_check_name(index, definition), cpus=1, memory="1Mi", **{"class": vm_class.SHARED})
        checked = _check_definition(index, definition, max_percent)
        if checked["name"] in seen:
            raise ValueRangeError("classes[%d].name" % index, checked["name"], "a name given once")
        seen.add(checked["name"])
        definitions.append(checked)
    prefix = metadata.check_prefix(params.get("prefix") or metadata.DEFAULT_PREFIX)
    return {"state": state, "definitions": definitions, "keys": keys(prefix), "max_percent": max_percent}


def _class_annotations(definition, names):
    found = {names["class"]: definition["class"]}
    if definition["baseline"] is not None:
        found[names["baseline"]] = "%g" % definition["baseline"]
    return found


def wanted_objects(definition, names):
    """{"instancetype": object, "preference": object} of one definition:
    what the collection keeps on the server (labels and annotations it
    owns, and the whole spec)."""
    annotations = _class_annotations(definition, names)
    cpu = {"guest": definition["cpus"]}
    if definition["class"] == vm_class.DEDICATED:
        cpu.update(dedicatedCPUPlacement=True, isolateEmulatorThread=True)
    mem = {"guest": definition["memory_text"]}
    if definition["overcommit_percent"]:
        mem["overcommitPercent"] = definition["overcommit_percent"]
    labels = {names["class"]: definition["class"]}
    instancetype = {"labels": labels, "annotations": annotations,
                    # spec.annotations: KubeVirt sets them on every VMI of the instancetype.
                    "spec": {"cpu": cpu, "memory": mem, "annotations": dict(annotations)}}
    preference = {"labels": labels, "annotations": annotations,
                  "spec": {"annotations": dict(annotations),
                           # A preference of the class asks at least the class's size of its instancetype.
                           "requirements": {"cpu": {"guest": definition["cpus"]},
                                            "memory": {"guest": definition["memory_text"]}}}}
    return {"instancetype": instancetype, "preference": preference}


def _same_spec(current, wanted):
    """The wanted spec, with memory quantities spelled as the server has them
    when they mean the same (4Gi stays 4Gi, not 4096Mi)."""
    spec = copy.deepcopy(wanted)
    for where in ("memory.guest", "requirements.memory.guest"):
        old, new = merge_patch.at(current, where), merge_patch.at(spec, where)
        if old is not None and new is not None and _quantity_equal(old, new):
            merge_patch.at(spec, where.rsplit(".", 1)[0])["guest"] = old
    return spec


def _quantity_equal(left, right):
    try:
        return quantity.same_memory(str(left), str(right))
    except ValueRangeError:
        return False


def view(obj, names):
    """An object as results and --diff show it: its class label, baseline
    annotation and spec (None: it does not exist)."""
    if obj is None:
        return None
    meta = obj.get("metadata") or {}
    return {"class": (meta.get("labels") or {}).get(names["class"]),
            "baseline_cpus": (meta.get("annotations") or {}).get(names["baseline"]), "spec": obj.get("spec") or {}}


def owned_by_us(obj, names):
    return names["class"] in ((obj.get("metadata") or {}).get("labels") or {})


class NotOurs(ObjectRefusal):
    """An object of the same name the collection did not make."""


def refusal_not_ours(kind, name, names):
    return NotOurs("%s %s exists without the label %s: it was not made by this collection and is left as it is "
                   "(choose another name, or delete it first)" % (kind, name, names["class"]))


def new_object(kind, name, wanted):
    return {"apiVersion": API_VERSION, "kind": kind,
            "metadata": {"name": name, "labels": dict(wanted["labels"]), "annotations": dict(wanted["annotations"])},
            "spec": wanted["spec"]}


def update_patch(kind, current, wanted, names):
    """The merge patch that makes `current` the wanted object (None: it is
    already); refuses (NotOurs) an object the collection did not make."""
    meta = current.get("metadata") or {}
    if not owned_by_us(current, names):
        raise refusal_not_ours(kind, meta.get("name"), names)
    patch = {}
    spec = merge_patch.diff(current.get("spec") or {}, _same_spec(current.get("spec") or {}, wanted["spec"]))
    if spec:
        patch["spec"] = spec
    labels = metadata.label_changes(meta.get("labels"), wanted["labels"])
    owned_annotations = dict((key, None) for key in names.values())
    owned_annotations.update(wanted["annotations"])
    annotations = metadata.label_changes(meta.get("annotations"), owned_annotations)
    if labels or annotations:
        patch["metadata"] = dict(({"labels": labels} if labels else {}),
                                 **({"annotations": annotations} if annotations else {}))
    return patch or None


def after_patch(current, patch):
    return merge_patch.merge(current, patch) if patch else current


def resources_of(definition):
    """What a VM of the class gets, as results show it: vCPUs, whether its
    CPUs are dedicated, how its CPU request is set, guest memory and the
    memory its launcher requests for it."""
    percent = definition["overcommit_percent"]
    dedicated = definition["class"] == vm_class.DEDICATED
    return {"vcpus": definition["cpus"], "dedicated_cpu_placement": dedicated,
            "cpu_request": ("%d (dedicated CPUs)" % definition["cpus"]) if dedicated else
            "%d / cpuAllocationRatio of the KubeVirt CR" % definition["cpus"],
            "memory_guest": definition["memory_text"],
            "memory_request": quantity.format_memory(memory.round_up_mi(
                memory.request_for_overcommit_percent(definition["memory"], percent))),
            "memory_overcommit_percent": percent,
            # The same overcommit on the KubeVirt CR's memoryOvercommit scale.
            "equivalent_memory_overcommit": memory.memory_overcommit_scale(percent),
            "baseline_cpus": definition["baseline"],
            "credit_bank": credits.bank_cap(definition["baseline"]) if definition["baseline"] is not None else None}


def report_line(result, check_mode=False):
    name = result["name"]
    if result.get("failed"):
        return "%s: failed: %s" % (name, result.get("msg"))
    actions = ", ".join("%s %s" % (part, result[part]["action"]) for part, _kind in OBJECTS
                        if part in result and result[part]["action"] != "unchanged")
    what = ("%s, " % result["class"]) if result.get("class") else ""
    if not actions:
        return "%s: %sunchanged" % (name, what)
    return "%s: %s%s%s" % (name, what, "would be: " if check_mode else "", actions)
