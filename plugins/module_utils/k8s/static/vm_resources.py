# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resource templates of KubeVirt VirtualMachines by class, and the audit of
risky ones. Pure: the API's JSON in, plans and findings out.

Only spec.template.spec.domain's resources, cpu.dedicatedCpuPlacement,
memory.guest and devices.autoattachMemBalloon (and the class label) are
managed; everything else in a VM is left as it is."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal, ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import memory, vm_class
from ansible_collections.overcommit.control.plugins.module_utils.k8s import merge_patch, metadata, quantity
from ansible_collections.overcommit.control.plugins.module_utils.k8s.static import vm_instancetype

MODES = ("enforce", "audit")
CLASS_LABEL = "class"
# Annotations found in blog posts that KubeVirt has never read: setting them
# changes nothing, so a VM relying on them is not what its owner thinks.
NONEXISTENT_ANNOTATIONS = ("kubevirt.io/allow-memory-overcommit", "kubevirt.io/domainMemoryOvercommit")
# Only these of the managed fields reach a running VM without a restart
# (with vmRolloutStrategy LiveUpdate); the rest set RestartRequired.
LIVE_UPDATABLE = ("memory_guest", "class")
DOMAIN = "spec.template.spec.domain"
RATIO, NONE, AUTO = "ratio", "none", "auto"


class VmRefusal(ObjectRefusal):
    """A template this VM cannot take; says why."""


def _quantity_or_keyword(field, value, keywords, parse):
    if value is None:
        return None
    text = str(value).strip()
    if text in keywords:
        return text
    number = parse(field, text)
    if number <= 0:
        raise ValueRangeError(field, value, "a quantity greater than 0 or one of %s" % ", ".join(keywords))
    return number


def check_request(params):
    """Options validated before any API call; raises ValueRangeError naming
    the field."""
    if params.get("names") and not params.get("namespace"):
        raise ValueRangeError("namespace", None, "the namespace of the VMs named in names")
    if params["mode"] not in MODES:
        raise ValueRangeError("mode", params["mode"], "one of %s" % ", ".join(MODES))
    if params.get("vm_class") is not None and params["vm_class"] not in vm_class.CLASSES:
        raise ValueRangeError("vm_class", params["vm_class"], "one of %s" % ", ".join(vm_class.CLASSES))
    if not 0 <= params["floor"] <= 1:
        raise ValueRangeError("floor", params["floor"], "0..1 (a fraction of the vCPUs)")
    prefix = metadata.check_prefix(params["prefix"])
    refs = vm_instancetype.check_refs(params)
    return {
        "namespace": params.get("namespace"), "names": params.get("names") or [],
        "label_selector": params.get("label_selector"),
        "mode": params["mode"],
        "instancetype": refs["instancetype"],
        "preference": refs["preference"],
        "class": params.get("vm_class"),
        "cpu_request": _quantity_or_keyword("cpu_request", params.get("cpu_request"), (RATIO,), quantity.cpu),
        "cpu_limit": _quantity_or_keyword("cpu_limit", params.get("cpu_limit"), (NONE,), quantity.cpu),
        "memory_guest": _quantity_or_keyword("memory_guest", params.get("memory_guest"), (), quantity.memory),
        "memory_request": _quantity_or_keyword("memory_request", params.get("memory_request"), (NONE,),
                                               quantity.memory),
        "memory_limit": _quantity_or_keyword("memory_limit", params.get("memory_limit"), (AUTO, NONE),
                                             quantity.memory),
        "balloon": params.get("balloon"),
        "floor": params["floor"],
        "force": bool(params.get("force")),
        "class_label": prefix + CLASS_LABEL,
    }


def _int(value, default=1):
    return int(value) if value else default


def vm_facts(vm, vmi, class_label):
    """What the template and the audit look at on one VM (and its VMI, if
    one runs)."""
    meta = vm.get("metadata") or {}
    domain = merge_patch.at(vm, DOMAIN) or {}
    cpu = domain.get("cpu") or {}
    resources = domain.get("resources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    devices = domain.get("devices") or {}
    guest_text = (domain.get("memory") or {}).get("guest") or requests.get("memory")
    template_annotations = merge_patch.at(vm, "spec.template.metadata.annotations") or {}
    conditions = merge_patch.at(vm, "status.conditions") or []
    reported = merge_patch.at(vmi, "status.memory.memoryOverhead") if vmi else None
    return {
        "name": "%s/%s" % (meta.get("namespace"), meta.get("name")),
        "vcpus": _int(cpu.get("sockets")) * _int(cpu.get("cores")) * _int(cpu.get("threads")),
        "guest": quantity.memory("memory.guest", guest_text) if guest_text else None,
        "guest_explicit": bool((domain.get("memory") or {}).get("guest")),
        "cpu_request": quantity.cpu("requests.cpu", requests["cpu"]) if "cpu" in requests else None,
        "cpu_limit": quantity.cpu("limits.cpu", limits["cpu"]) if "cpu" in limits else None,
        "memory_request": quantity.memory("requests.memory", requests["memory"]) if "memory" in requests else None,
        "memory_limit": quantity.memory("limits.memory", limits["memory"]) if "memory" in limits else None,
        "dedicated_placement": bool(cpu.get("dedicatedCpuPlacement")),
        "realtime": cpu.get("realtime") is not None,
        "declared_class": (meta.get("labels") or {}).get(class_label),
        "graphics": devices.get("autoattachGraphicsDevice") is not False,
        "vfio": bool(devices.get("gpus") or devices.get("hostDevices")),
        "balloon": devices.get("autoattachMemBalloon"),
        "annotations": sorted(set(meta.get("annotations") or {}) | set(template_annotations)),
        "instancetype": (vm.get("spec") or {}).get("instancetype"),
        "running": vmi is not None,
        "reported_overhead": quantity.memory("status.memory.memoryOverhead", reported) if reported else None,
        "restart_required_condition": any(c.get("type") == "RestartRequired" and c.get("status") == "True"
                                          for c in conditions),
    }


def overhead(facts, dedicated, request):
    """KubeVirt's own figure when a VMI reports it, else its estimate for a
    VMI requesting `request` bytes of memory."""
    if facts["reported_overhead"]:
        return facts["reported_overhead"]
    return memory.launcher_overhead(request, facts["vcpus"], facts["graphics"], dedicated, facts["vfio"])


def effective_class(facts):
    return vm_class.resolve_class(facts["declared_class"], facts["dedicated_placement"], facts["realtime"])


def audit(facts):
    """[{check, message}] for every risk the VM carries now."""
    found = []
    for name in facts["annotations"]:
        if name in NONEXISTENT_ANNOTATIONS:
            found.append(("nonexistent_annotation", "annotation %s does not exist in KubeVirt and changes nothing; "
                          "memory overcommit is memory.guest above resources.requests.memory" % name))
    cls, _why = effective_class(facts)
    if cls == vm_class.DEDICATED:
        if not facts["dedicated_placement"]:
            found.append(("dedicated_cpu_overcommitted", "class dedicated but no dedicatedCpuPlacement: its CPU "
                          "request follows the cluster's allocation ratio (vCPUs / ratio)"))
        elif (facts["cpu_request"] is not None and facts["cpu_request"] < facts["vcpus"]) or (
                facts["cpu_limit"] is not None and facts["cpu_limit"] < facts["vcpus"]):
            found.append(("dedicated_cpu_overcommitted", "dedicated CPUs with a CPU request or limit under its %d "
                          "vCPUs" % facts["vcpus"]))
        if facts["guest"] and facts["memory_request"] is not None and facts["memory_request"] < facts["guest"]:
            found.append(("dedicated_memory_overcommitted", "dedicated VM with a memory request (%s) under its guest "
                          "memory (%s)" % (memory.mib(facts["memory_request"]), memory.mib(facts["guest"]))))
    if facts["guest"]:
        found.extend(memory.findings(facts["guest"], facts["memory_request"], facts["memory_limit"],
                                     overhead(facts, cls == vm_class.DEDICATED,
                                              facts["memory_request"] or facts["guest"])))
    return [{"check": check, "message": message} for check, message in found]


def _pick(wanted, current, keywords):
    """The option's value if given (None for a removing keyword), else the current one."""
    if wanted is None:
        return current
    return None if wanted in keywords else wanted


def target(facts, request):
    """The VM's class and resources after the template, checked against the
    class and memory rules (VmRefusal or ValueRangeError)."""
    current_class, why = effective_class(facts)
    cls = request["class"] or current_class
    if current_class == vm_class.DEDICATED and cls != vm_class.DEDICATED and not request["force"]:
        raise VmRefusal("refusing to move a dedicated VM (%s) into the overcommitted class %s; use force to "
                        "override" % (why, cls))
    try:
        cpu = vm_class.cpu_template(cls, facts["vcpus"], _pick(request["cpu_request"], facts["cpu_request"], (RATIO,)),
                                    _pick(request["cpu_limit"], facts["cpu_limit"], (NONE,)), request["floor"],
                                    request["force"])
    except vm_class.Refusal as exc:
        raise VmRefusal(str(exc))
    guest = request["memory_guest"] or facts["guest"]
    if not guest:
        raise VmRefusal("the VM has neither memory.guest nor a memory request: set memory_guest")
    dedicated = cpu["dedicated"]
    mem_request = guest if dedicated else _pick(request["memory_request"], facts["memory_request"], (NONE,))
    launcher = overhead(facts, dedicated, mem_request or guest)
    if dedicated and request["memory_request"] not in (None, NONE) and request["memory_request"] != guest:
        raise VmRefusal("memory_request=%s would overcommit a dedicated VM's memory: it requests its guest memory "
                        "(%s)" % (memory.mib(request["memory_request"]), memory.mib(guest)))
    limit = request["memory_limit"]
    mem_limit = memory.least_limit(guest, launcher) if limit == AUTO else _pick(limit, facts["memory_limit"], (NONE,))
    for check, message in memory.findings(guest, mem_request, mem_limit, launcher):
        field = "memory_request" if check == "memory_request_above_guest" else "memory_limit"
        source = "" if request[field] is not None else " (the VM's current value; set %s)" % field
        raise ValueRangeError(field, memory.mib(mem_request if field == "memory_request" else mem_limit),
                              "%s%s; at least guest + overhead = %s (memory_limit=auto sets that)" % (
                                  message, source, memory.mib(memory.least_limit(guest, launcher)))
                              if field == "memory_limit" else "at most the guest memory %s" % memory.mib(guest))
    return {"class": cls, "cpu_request": cpu["request"], "cpu_limit": cpu["limit"],
            "dedicated_cpu_placement": dedicated, "memory_guest": guest, "memory_request": mem_request,
            "memory_limit": mem_limit, "balloon": facts["balloon"] if request["balloon"] is None else request["balloon"],
            "overhead": launcher}


def _view(values):
    """Managed fields as people read them (quantities as strings)."""
    def cpu(value):
        return None if value is None else quantity.format_cpu(value)

    def mem(value):
        return None if value is None else quantity.format_memory(value)

    return {"class": values["class"], "cpu_request": cpu(values["cpu_request"]), "cpu_limit": cpu(values["cpu_limit"]),
            "dedicated_cpu_placement": values["dedicated_cpu_placement"],
            "memory_guest": mem(values["memory_guest"]), "memory_request": mem(values["memory_request"]),
            "memory_limit": mem(values["memory_limit"]), "balloon": values["balloon"]}


def _domain_fields(view):
    return {"resources": {"requests": {"cpu": view["cpu_request"], "memory": view["memory_request"]},
                          "limits": {"cpu": view["cpu_limit"], "memory": view["memory_limit"]}},
            "cpu": {"dedicatedCpuPlacement": view["dedicated_cpu_placement"] or None},
            "memory": {"guest": view["memory_guest"]},
            "devices": {"autoattachMemBalloon": view["balloon"]}}


def _same(field, left, right):
    if field.startswith("cpu_") and field != "dedicated_cpu_placement":
        return quantity.same_cpu(left, right)
    if field.startswith("memory_"):
        return quantity.same_memory(left, right)
    return left == right


def plan(vm, vmi, request, offers=None):
    """Before, after, the merge patch (None when nothing changes) and
    whether the change needs a restart of a running VM. offers: what the
    VM's instancetype (`current`) and the one it moves onto (`target`) give,
    as vm_instancetype.offer reads them."""
    facts = vm_facts(vm, vmi, request["class_label"])
    if request["instancetype"]:
        return plan_move(vm, facts, request, offers or {})
    if facts["instancetype"]:
        raise VmRefusal("the VM takes its resources from instancetype %s: change the instancetype, or move it onto "
                        "another with the option instancetype" % facts["instancetype"].get("name"))
    current = dict(facts, **{"class": effective_class(facts)[0], "memory_guest": facts["guest"],
                             "dedicated_cpu_placement": facts["dedicated_placement"]})
    wanted = target(facts, request)
    before, after = _view(current), _view(wanted)
    # A value that means the same keeps its spelling (1Gi stays 1Gi, not 1024Mi).
    after = dict((field, before[field] if _same(field, before[field], value) else value)
                 for field, value in after.items())
    changed = [field for field in after if after[field] != before[field]]
    domain_before = _domain_fields(before)
    if not facts["guest_explicit"] and after["memory_request"] != before["memory_request"]:
        # The guest size came from the request that is changing: write it down first.
        domain_before["memory"]["guest"] = None
    domain_patch = merge_patch.diff(domain_before, _domain_fields(after))
    patch = merge_patch.nest(DOMAIN, domain_patch) if domain_patch else {}
    if request["class"] and facts["declared_class"] != request["class"]:
        patch["metadata"] = {"labels": {request["class_label"]: request["class"]}}
    restart_reasons = [field for field in changed if field not in LIVE_UPDATABLE]
    return {"facts": facts, "before": before, "after": after, "patch": patch or None,
            "overhead": memory.mib(wanted["overhead"]),
            "restart_required": bool(facts["running"] and restart_reasons),
            "restart_reasons": restart_reasons if facts["running"] else []}


def current_view(vm, facts, current_offer):
    """The VM's class and resources now, from its instancetype when it has one."""
    if current_offer is not None:
        return vm_instancetype.view(current_offer, facts["balloon"], vm_instancetype.ref_of(vm, "instancetype"),
                                    vm_instancetype.ref_of(vm, "preference"))
    current = dict(facts, **{"class": effective_class(facts)[0], "memory_guest": facts["guest"],
                             "dedicated_cpu_placement": facts["dedicated_placement"]})
    return dict(_view(current), instancetype=None, preference=None)


def plan_move(vm, facts, request, offers):
    """A VM moved onto the request's instancetype (and preference): its
    template's CPU and memory give way to the instancetype's, checked
    against the class and memory rules first."""
    current_offer, given = offers.get("current"), offers["target"]
    before = current_view(vm, facts, current_offer)
    current_class = before["class"]
    if current_offer is None:
        current_class, why = effective_class(facts)
    else:
        why = "its instancetype %s is dedicated" % current_offer["name"]
    if current_class == vm_class.DEDICATED and given["class"] != vm_class.DEDICATED and not request["force"]:
        raise VmRefusal("refusing to move a dedicated VM (%s) onto instancetype %s of the overcommitted class %s; use "
                        "force to override" % (why, given["name"], given["class"]))
    on_it = vm_instancetype.facts_on(facts, given)
    launcher = overhead(on_it, given["dedicated"], given["memory_request"] or given["guest"])
    broken = memory.findings(given["guest"], given["memory_request"], None, launcher)
    if broken:
        raise VmRefusal("instancetype %s breaks the memory rules: %s" % (given["name"], broken[0][1]))
    moved = vm_instancetype.plan_move(vm, facts, before, given, request)
    return {"facts": facts, "before": before, "after": moved["after"], "patch": moved["patch"],
            "overhead": memory.mib(launcher), "restart_required": bool(moved["restart_reasons"]),
            "restart_reasons": moved["restart_reasons"], "removed_fields": moved["removed"]}
