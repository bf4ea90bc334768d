# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fleet rollout of the static model, one unit (a "cluster") per wave
host: is the unit healthy after its wave, and what puts back exactly what
the wave changed. Pure: the inputs are the results the modules returned."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError

# threshold -> (what it limits, unit); None for a threshold means "not checked".
THRESHOLDS = {
    "max_cpu_pressure": ("the host's CPU pressure (PSI some avg10)", "%"),
    "max_run_queue_per_cpu": ("runnable tasks per CPU", ""),
    "max_steal_cpus": ("a VM's steal", " CPU"),
    "max_failed": ("objects the wave failed on", ""),
}
DEFAULT_THRESHOLDS = {"max_cpu_pressure": None, "max_run_queue_per_cpu": None, "max_steal_cpus": None,
                      "max_failed": 0}
STEPS = ("kubevirt_config", "kubevirt_vms", "libvirt_classes", "vsphere_reservations")
KUBEVIRT_CONFIG_OPTIONS = ("cpu_allocation_ratio", "memory_overcommit", "auto_cpu_limit_namespace_selector",
                           "vm_rollout_strategy")
# kubevirt_vm_resources option -> (its `before` field, the keyword that removes the value)
KUBEVIRT_VM_FIELDS = (("cpu_request", "cpu_request", "ratio"), ("cpu_limit", "cpu_limit", "none"),
                      ("memory_guest", "memory_guest", None), ("memory_request", "memory_request", "none"),
                      ("memory_limit", "memory_limit", "none"), ("balloon", "balloon", None))
VSPHERE_RESOURCES = ("cpu", "memory")


def check_thresholds(thresholds, field="health"):
    """The thresholds with defaults filled in; a bad one raises
    ValueRangeError naming it."""
    if thresholds is None:
        thresholds = {}
    if not isinstance(thresholds, dict):
        raise ValueRangeError(field, thresholds, "a mapping of %s" % ", ".join(sorted(THRESHOLDS)))
    unknown = sorted(set(thresholds) - set(THRESHOLDS))
    if unknown:
        raise ValueRangeError("%s.%s" % (field, unknown[0]), thresholds[unknown[0]],
                              "one of %s" % ", ".join(sorted(THRESHOLDS)))
    checked = dict(DEFAULT_THRESHOLDS)
    for name, value in thresholds.items():
        if value is None:
            checked[name] = None
            continue
        if isinstance(value, bool):
            raise ValueRangeError(field + "." + name, value, "a number, 0 or more, or null (not checked)")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueRangeError(field + "." + name, value, "a number, 0 or more, or null (not checked)")
        if number < 0 or math.isnan(number):
            raise ValueRangeError(field + "." + name, value, "a number, 0 or more, or null (not checked)")
        checked[name] = int(number) if name == "max_failed" else number
    return checked


def _results(registered):
    """The per-task results of a registered task or loop (skipped ones left out)."""
    if not isinstance(registered, dict) or registered.get("skipped"):
        return []
    if isinstance(registered.get("results"), list):
        return [r for r in registered["results"] if isinstance(r, dict) and not r.get("skipped")]
    return [registered]


def _objects(registered, key):
    """(task result, object result) for every object of a registered task or loop."""
    for result in _results(registered):
        for entry in result.get(key) or []:
            if isinstance(entry, dict):
                yield result, entry


def failures(applied):
    """What the wave failed on: one line per failed object, or per failed
    task that has no object of its own to blame."""
    lines = []
    for step, key in (("kubevirt_config", None), ("kubevirt_vms", "vms"), ("libvirt_classes", "domains"),
                      ("vsphere_reservations", "vms")):
        for result in _results((applied or {}).get(step)):
            failed = [entry for entry in (result.get(key) or []) if isinstance(entry, dict) and entry.get("failed")] \
                if key else []
            for entry in failed:
                lines.append("%s: %s: %s" % (step, entry.get("name"), entry.get("msg") or "failed"))
            if not failed and result.get("failed"):
                lines.append("%s: %s" % (step, result.get("msg") or "failed"))
    return lines


def _figure(threshold):
    """A threshold as people read it (2, 0.25, 1e+03)."""
    return "%g" % threshold


def health(applied, pressure, domains, thresholds):
    """The verdict on a unit after its wave: healthy or not, and why, from
    what the wave's tasks returned (failed objects), the host's pressure
    (host_pressure_info) and its VMs' steal (libvirt_cputune_info)."""
    limits = check_thresholds(thresholds)
    reasons, signals = [], {}
    failed = failures(applied)
    signals["failed"] = len(failed)
    if limits["max_failed"] is not None and len(failed) > limits["max_failed"]:
        reasons.append("%d object(s) failed, more than %d: %s" % (len(failed), limits["max_failed"],
                                                                  "; ".join(failed)))
    if isinstance(pressure, dict) and not pressure.get("skipped") and "pressure" in pressure:
        psi = (((pressure.get("pressure") or {}).get("cpu") or {}).get("some") or {}).get("avg10")
        cpus = pressure.get("cpus") or 1
        run_queue = float(pressure.get("procs_running") or 0) / cpus
        signals["cpu_pressure"] = psi
        signals["run_queue_per_cpu"] = round(run_queue, 3)
        if limits["max_cpu_pressure"] is not None and psi is not None and psi > limits["max_cpu_pressure"]:
            reasons.append("CPU pressure %.1f %% is above %s %%" % (psi, _figure(limits["max_cpu_pressure"])))
        if limits["max_run_queue_per_cpu"] is not None and run_queue > limits["max_run_queue_per_cpu"]:
            reasons.append("%.2f runnable tasks per CPU is above %s" % (run_queue, _figure(limits["max_run_queue_per_cpu"])))
    elif limits["max_cpu_pressure"] is not None or limits["max_run_queue_per_cpu"] is not None:
        reasons.append("the host's pressure could not be read: %s" % (
            (pressure or {}).get("msg") if isinstance(pressure, dict) else "no result"))
    steal = {}
    for _result, entry in _objects(domains, "domains"):
        used = entry.get("usage") or {}
        if used.get("steal_cpus") is not None:
            steal[entry.get("name")] = used["steal_cpus"]
    signals["steal_cpus"] = steal
    if limits["max_steal_cpus"] is not None:
        for name in sorted(steal):
            if steal[name] > limits["max_steal_cpus"]:
                reasons.append("%s steals %.2f CPU, above %s" % (name, steal[name], _figure(limits["max_steal_cpus"])))
    return {"healthy": not reasons, "reasons": reasons, "signals": signals, "failed": failed,
            "thresholds": limits}


def _kubevirt_config_undo(applied):
    for result in _results(applied.get("kubevirt_config")):
        before, after = result.get("before"), result.get("after")
        if not result.get("changed") or not isinstance(before, dict) or not isinstance(after, dict):
            continue
        located = result.get("kubevirt") or {}
        params = dict((key, located[key]) for key in ("namespace", "name") if located.get(key))
        clear = []
        for option in KUBEVIRT_CONFIG_OPTIONS:
            if before.get(option) == after.get(option):
                continue
            if before.get(option) is None:
                clear.append(option)
            else:
                params[option] = before[option]
        if clear:
            params["clear"] = clear
        return {"params": params,
                "line": "KubeVirt CR %s/%s: %s" % (params.get("namespace"), params.get("name"), ", ".join(
                    "%s back to %s" % (option, "unset" if before.get(option) is None else before[option])
                    for option in KUBEVIRT_CONFIG_OPTIONS if before.get(option) != after.get(option)))}
    return None


def _kubevirt_vm_undo(applied, notes):
    undo = []
    for result, entry in _objects(applied.get("kubevirt_vms"), "vms"):
        before, after = entry.get("before"), entry.get("after")
        if not entry.get("changed") or not isinstance(before, dict) or not isinstance(after, dict):
            continue
        namespace, _sep, name = (entry.get("name") or "").partition("/")
        params = {"namespace": namespace, "names": [name], "force": True}
        invocation = ((result.get("invocation") or {}).get("module_args") or {})
        if invocation.get("prefix"):
            params["prefix"] = invocation["prefix"]
        changed = []
        if before.get("class") != after.get("class"):
            params["vm_class"] = before.get("class")
            changed.append("class")
        for option, field, remove in KUBEVIRT_VM_FIELDS:
            if before.get(field) == after.get(field):
                continue
            if before.get(field) is None:
                if remove is None:
                    notes.append("%s: %s was not set before and cannot be removed; it stays %s" % (
                        entry["name"], field, after.get(field)))
                    continue
                params[option] = remove
            else:
                params[option] = before[field]
            changed.append(field)
        if not changed:
            notes.append("%s: only its class label was written (class %s); whether it had one before is not known, "
                         "so it stays" % (entry["name"], after.get("class")))
        if changed:
            undo.append({"params": params, "line": "KubeVirt VM %s: %s" % (entry["name"], ", ".join(
                "%s back to %s" % (field, before.get(field)) for field in changed))})
    return undo


def _libvirt_undo(applied):
    """One libvirt_vm_class call per place written (live, config), each with
    every domain's class and burstable baseline from before the wave."""
    calls, lines = {}, []
    for result, entry in _objects(applied.get("libvirt_classes"), "domains"):
        before = entry.get("before")
        if not entry.get("changed") or not isinstance(before, dict):
            continue
        invocation = ((result.get("invocation") or {}).get("module_args") or {})
        for target in sorted(before):
            prior = before[target] or {}
            call = calls.setdefault((target, invocation.get("uri"), invocation.get("class_namespace")), {
                "apply": target, "classes": {}, "baselines": {}})
            call["classes"][entry["name"]] = prior.get("class")
            if prior.get("baseline") is not None and prior.get("class") == "burstable":
                call["baselines"][entry["name"]] = prior["baseline"]
        lines.append("libvirt domain %s: class back to %s" % (entry["name"], ", ".join(
            "%s%s (%s)" % ((before[target] or {}).get("class") or "none",
                           "" if (before[target] or {}).get("baseline") is None
                           else " with baseline %g CPU" % before[target]["baseline"], target)
            for target in sorted(before))))
    undo = []
    for (target, uri, namespace), call in sorted(calls.items(), key=lambda item: item[0][0]):
        if uri:
            call["uri"] = uri
        if namespace:
            call["class_namespace"] = namespace
        if not call["baselines"]:
            del call["baselines"]
        undo.append(call)
    return undo, lines


def _vsphere_undo(applied):
    """VMs the wave recorded first (no record before it) go back with
    state=restored, which also clears the record; a VM that already had a
    record gets the allocation it had before the wave (its record keeps the
    earlier prior values, which a later restore returns to)."""
    restore, present, lines = [], [], []
    for result, entry in _objects(applied.get("vsphere_reservations"), "vms"):
        before, after = entry.get("before"), entry.get("after")
        if not entry.get("changed") or not isinstance(before, dict) or not entry.get("uuid"):
            continue
        invocation = ((result.get("invocation") or {}).get("module_args") or {})
        if before.get("record") is None:
            restore.append(entry["uuid"])
            lines.append("vSphere VM %s: restored from its record" % entry.get("name"))
            continue
        params = {"uuids": [entry["uuid"]]}
        for resource in VSPHERE_RESOURCES:
            old, new = before.get(resource) or {}, (after or {}).get(resource) or {}
            changed = dict((key, value) for key, value in old.items() if new.get(key) != value)
            if old.get("shares_level") != "custom":
                # A named level sets its own shares.
                changed.pop("shares", None)
            elif "shares" in changed or "shares_level" in changed:
                changed["shares"] = old.get("shares")
                changed.pop("shares_level", None)
            if changed:
                params[resource] = changed
        locked = before.get("memory_reservation_locked_to_max")
        if locked is not None and locked != (after or {}).get("memory_reservation_locked_to_max"):
            params["memory_reservation_locked_to_max"] = locked
            if locked:
                (params.get("memory") or {}).pop("reservation", None)
        if invocation.get("attribute"):
            params["attribute"] = invocation["attribute"]
        present.append(params)
        lines.append("vSphere VM %s: allocation back to %s" % (entry.get("name"), dict(
            (key, value) for key, value in params.items() if key in VSPHERE_RESOURCES)))
    attribute = None
    for result in _results(applied.get("vsphere_reservations")):
        attribute = ((result.get("invocation") or {}).get("module_args") or {}).get("attribute") or attribute
    restore_params = {"uuids": restore, "state": "restored"} if restore else None
    if restore_params and attribute:
        restore_params["attribute"] = attribute
    return restore_params, present, lines


def undo(applied):
    """What puts back exactly what the wave changed, as module parameters
    per step, with one line per object for the report and notes on what
    cannot be put back."""
    applied = applied or {}
    notes = []
    config = _kubevirt_config_undo(applied)
    vms = _kubevirt_vm_undo(applied, notes)
    libvirt, libvirt_lines = _libvirt_undo(applied)
    vsphere_restore, vsphere_present, vsphere_lines = _vsphere_undo(applied)
    lines = ([config["line"]] if config else []) + [vm["line"] for vm in vms] + libvirt_lines + vsphere_lines
    return {"kubevirt_config": config["params"] if config else None,
            "kubevirt_vms": [vm["params"] for vm in vms],
            "libvirt_classes": libvirt,
            "vsphere_restore": vsphere_restore,
            "vsphere_present": vsphere_present,
            "lines": lines, "notes": notes,
            "empty": not (config or vms or libvirt or vsphere_restore or vsphere_present)}


def changes(applied):
    """One line per object the wave changed (or in check mode would change)."""
    lines = []
    for result in _results((applied or {}).get("kubevirt_config")):
        if result.get("changed"):
            kubevirt = result.get("kubevirt") or {}
            lines.append("KubeVirt CR %s/%s: %s" % (kubevirt.get("namespace"), kubevirt.get("name"), ", ".join(
                "%s %s -> %s" % (option, (result.get("before") or {}).get(option), (result.get("after") or {}).get(option))
                for option in KUBEVIRT_CONFIG_OPTIONS
                if (result.get("before") or {}).get(option) != (result.get("after") or {}).get(option))))
    for step, key, label in (("kubevirt_vms", "vms", "KubeVirt VM"), ("libvirt_classes", "domains", "libvirt domain"),
                             ("vsphere_reservations", "vms", "vSphere VM")):
        for _result, entry in _objects((applied or {}).get(step), key):
            if entry.get("changed"):
                lines.append("%s %s: %s" % (label, entry.get("name"), _delta(entry.get("before"), entry.get("after"))))
    return lines


def _flat(values, prefix=""):
    """{a: {b: 1}} as {"a.b": 1}; the vSphere record is left out (it is how the
    change is recorded, not the change)."""
    flat = {}
    for key, value in (values or {}).items():
        if key == "record":
            continue
        if isinstance(value, dict):
            flat.update(_flat(value, "%s%s." % (prefix, key)))
        else:
            flat[prefix + key] = value
    return flat


def _delta(before, after):
    if not isinstance(before, dict) or not isinstance(after, dict):
        return "changed"
    old, new = _flat(before), _flat(after)
    parts = ["%s %s -> %s" % (key, old.get(key), new.get(key)) for key in sorted(set(old) | set(new))
             if old.get(key) != new.get(key)]
    return ", ".join(parts) or "changed"
