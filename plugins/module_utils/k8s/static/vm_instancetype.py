# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeVirt VMs and instancetypes: what an instancetype (or the revision of
it a VM keeps) gives a VM, and the move of a VM that sets its own CPU and
memory onto an instancetype and preference. Pure: the API's JSON in, views
and merge patches out.

KubeVirt refuses a VM whose template sets what its instancetype sets, so the
move removes spec.template.spec.domain.cpu and .memory and the CPU and memory
requests and limits. A running VM keeps what it was started with until its
next restart (KubeVirt sets RestartRequired); nothing here restarts it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import memory, vm_class
from ansible_collections.overcommit.control.plugins.module_utils.k8s import merge_patch, metadata, quantity
from ansible_collections.overcommit.control.plugins.module_utils.k8s.static import instancetypes

# Options that set what an instancetype sets: refused together with one.
RESOURCE_OPTIONS = ("vm_class", "cpu_request", "cpu_limit", "memory_guest", "memory_request", "memory_limit")
# The template fields an instancetype of the collection sets, which KubeVirt
# refuses beside it: the topology and placement, the guest memory, and the
# CPU and memory requests and limits.
CONFLICTING = {"cpu": ("sockets", "cores", "threads", "maxSockets", "dedicatedCpuPlacement", "isolateEmulatorThread",
                       "realtime", "numa"),
               "memory": ("guest", "maxGuest", "hugepages")}
CONTROLLER_REVISIONS = "/apis/apps/v1/namespaces/%s/controllerrevisions/%s"


def check_refs(params):
    """{instancetype, preference}: each {kind, name} or None, checked before
    any API call (ValueRangeError naming the field)."""
    refs = {}
    for field, kinds in (("instancetype", instancetypes.INSTANCETYPE_KINDS),
                         ("preference", instancetypes.PREFERENCE_KINDS)):
        name, kind = params.get(field), params.get(field + "_kind") or kinds[0]
        if kind not in kinds:
            raise ValueRangeError(field + "_kind", kind, "one of %s" % ", ".join(kinds))
        if name is None:
            refs[field] = None
            continue
        if not isinstance(name, str) or len(name) > 253 or not instancetypes.DNS_SUBDOMAIN.match(name):
            raise ValueRangeError(field, name, "the name of a %s (a DNS subdomain)" % kind)
        refs[field] = {"kind": kind, "name": name}
    if refs["preference"] and not refs["instancetype"]:
        raise ValueRangeError("preference", params.get("preference"), "only together with instancetype (the VM's "
                                                                      "CPU and memory come from the instancetype)")
    if refs["instancetype"]:
        for option in RESOURCE_OPTIONS:
            if params.get(option) is not None:
                raise ValueRangeError(option, params[option], "not set together with instancetype=%s: the VM's class, "
                                                              "CPU and memory come from the instancetype"
                                      % refs["instancetype"]["name"])
        if params.get("mode") == "audit" and params.get("balloon") is not None:
            raise ValueRangeError("balloon", params["balloon"], "not set with mode=audit, which changes nothing")
    return refs


def ref_of(vm, field):
    """The VM's spec.instancetype or spec.preference, or None."""
    ref = (vm.get("spec") or {}).get(field)
    return ref if isinstance(ref, dict) and ref.get("name") else None


def same_ref(current, wanted):
    if current is None or wanted is None:
        return current is None and wanted is None
    kinds = instancetypes.INSTANCETYPE_KINDS + instancetypes.PREFERENCE_KINDS
    kind = current.get("kind") or ""
    # KubeVirt's default kind of a reference is the cluster-wide one.
    kind = next((k for k in kinds if k.lower() == kind.lower()), kind) or wanted["kind"]
    return current.get("name") == wanted["name"] and kind == wanted["kind"]


def source_path(namespace, ref, default_kind):
    """Where a VM's instancetype or preference is read: the revision the VM
    keeps (what it runs with) when it names one, else the object."""
    if ref.get("revisionName"):
        return CONTROLLER_REVISIONS % (namespace, ref["revisionName"])
    kind = ref.get("kind") or default_kind
    for known in instancetypes.INSTANCETYPE_KINDS + instancetypes.PREFERENCE_KINDS:
        if known.lower() == kind.lower():
            kind = known
    if kind not in instancetypes.PLURALS:
        raise ValueRangeError("spec.instancetype.kind", kind, "one of %s" % ", ".join(sorted(instancetypes.PLURALS)))
    cluster = kind in (instancetypes.CLUSTER_INSTANCETYPE, instancetypes.CLUSTER_PREFERENCE)
    return instancetypes.path(kind, ref["name"], None if cluster else namespace)


def object_of(source):
    """The instancetype or preference object itself, from the object or from
    a ControllerRevision (whose data is the object; older KubeVirt kept its
    spec as base64 JSON)."""
    if source.get("kind") != "ControllerRevision":
        return source
    data = source.get("data") or {}
    spec = data.get("spec")
    if isinstance(spec, str):
        try:
            data = dict(data, spec=json.loads(base64.b64decode(spec).decode("utf-8")))
        except (ValueError, TypeError):
            raise ValueRangeError("ControllerRevision %s data.spec" % source["metadata"].get("name"), "(unreadable)",
                                  "the JSON of an instancetype's spec")
    return data


def offer(obj, class_key):
    """What an instancetype gives a VM: vCPUs, dedicated placement, class,
    guest memory and the memory its launcher requests (overcommitPercent)."""
    spec = obj.get("spec") or {}
    cpu, mem = spec.get("cpu") or {}, spec.get("memory") or {}
    name = (obj.get("metadata") or {}).get("name")
    guest = quantity.memory("instancetype %s spec.memory.guest" % name, mem.get("guest"))
    percent = mem.get("overcommitPercent") or 0
    declared = ((obj.get("metadata") or {}).get("labels") or {}).get(class_key) or (
        spec.get("annotations") or {}).get(class_key)
    dedicated = bool(cpu.get("dedicatedCPUPlacement"))
    cls, _why = vm_class.resolve_class(declared, dedicated, cpu.get("realtime") is not None)
    return {"name": name, "class": cls, "vcpus": int(cpu.get("guest") or 1), "dedicated": dedicated,
            "guest": guest, "overcommit_percent": percent,
            "memory_request": memory.request_for_overcommit_percent(guest, percent) if percent else None}


def facts_on(facts, given):
    """The VM's facts with what its instancetype gives it (for the audit and
    the class rules)."""
    return dict(facts, vcpus=given["vcpus"], guest=given["guest"], guest_explicit=True,
                cpu_request=float(given["vcpus"]) if given["dedicated"] else None,
                cpu_limit=float(given["vcpus"]) if given["dedicated"] else None,
                memory_request=given["memory_request"], memory_limit=None,
                dedicated_placement=given["dedicated"], declared_class=given["class"])


def view(given, balloon, instancetype, preference):
    """A VM on an instancetype as results show it (the fields of
    vm_resources' view, and the references)."""
    def cpus(value):
        return quantity.format_cpu(value)
    return {"class": given["class"],
            "cpu_request": cpus(given["vcpus"]) if given["dedicated"] else None,
            "cpu_limit": cpus(given["vcpus"]) if given["dedicated"] else None,
            "dedicated_cpu_placement": given["dedicated"],
            "memory_guest": quantity.format_memory(given["guest"]),
            "memory_request": quantity.format_memory(memory.round_up_mi(given["memory_request"]))
            if given["memory_request"] is not None else None,
            "memory_limit": None, "balloon": balloon,
            "instancetype": dict((k, instancetype[k]) for k in ("kind", "name")) if instancetype else None,
            "preference": dict((k, preference[k]) for k in ("kind", "name")) if preference else None}


def plan_move(vm, facts, before, given, refs):
    """Moving a VM onto refs' instancetype (and preference, refs being the
    checked request): the view after, the merge patch (None: it is there
    already), which fields need a restart and the template fields removed.
    `before` is the VM's view now; the class rules are the caller's."""
    current_it, current_pref = ref_of(vm, "instancetype"), ref_of(vm, "preference")
    after = view(given, before["balloon"], refs["instancetype"], refs["preference"] or (
        current_pref if same_ref(current_it, refs["instancetype"]) else None))
    patch = {}
    if not same_ref(current_it, refs["instancetype"]):
        # A new reference: KubeVirt stores a new revision of it.
        patch["spec"] = {"instancetype": dict(refs["instancetype"], revisionName=None)}
    if refs["preference"] and not same_ref(current_pref, refs["preference"]):
        patch.setdefault("spec", {})["preference"] = dict(refs["preference"], revisionName=None)
    elif not refs["preference"] and current_pref and not same_ref(current_it, refs["instancetype"]):
        # A preference chosen for another instancetype may not fit this one.
        patch.setdefault("spec", {})["preference"] = None
    conflicting = conflicting_fields(merge_patch.at(vm, "spec.template.spec.domain") or {})
    if conflicting:
        patch.setdefault("spec", {})["template"] = {"spec": {"domain": conflicting}}
    class_label = refs["class_label"]
    labels = metadata.label_changes((vm.get("metadata") or {}).get("labels"), {class_label: given["class"]})
    if labels:
        # The brake and the policy read the class from the VM's label.
        patch["metadata"] = {"labels": labels}
    changed = [field for field in after if after[field] != before.get(field)]
    reasons = [field for field in changed if field not in ("class", "memory_guest", "preference")]
    if patch.get("spec") and "instancetype" not in reasons:
        reasons.append("instancetype")
    return {"after": after, "patch": patch or None, "changed": changed,
            "restart_reasons": reasons if facts["running"] and patch.get("spec") else [],
            "removed": sorted(_paths(conflicting))}


def conflicting_fields(domain):
    """The merge patch that removes from a VM's domain what its instancetype
    sets (None: nothing); a cpu or memory left empty goes whole."""
    patch = {}
    for part, fields in CONFLICTING.items():
        current = domain.get(part)
        if not isinstance(current, dict):
            continue
        if all(key in fields for key in current):
            patch[part] = None
        else:
            removed = dict((key, None) for key in fields if key in current)
            if removed:
                patch[part] = removed
    resources = domain.get("resources") or {}
    left = dict(resources)
    for part in ("requests", "limits"):
        current = resources.get(part) or {}
        removed = dict((key, None) for key in ("cpu", "memory") if key in current)
        if len(removed) == len(current):
            left.pop(part, None)
            if part in resources:
                patch.setdefault("resources", {})[part] = None
        elif removed:
            patch.setdefault("resources", {})[part] = removed
    if resources and not left:
        patch["resources"] = None
    return patch or None


def _paths(patch, prefix="spec.template.spec.domain"):
    for key, value in (patch or {}).items():
        if isinstance(value, dict):
            yield from _paths(value, prefix + "." + key)
        else:
            yield prefix + "." + key
