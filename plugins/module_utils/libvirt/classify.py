# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The class of many libvirt domains, kept in their metadata (the element
<vm><class>..</class><baseline>..</baseline></vm> in CLASS_NAMESPACE), which
the brakes (libvirt_cputune) and the control policy read: what each domain
should be. Pure: classify_runner.py reads and writes it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import BURSTABLE, CLASSES
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.domain_xml import CONFIG, LIVE
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.cputune import check_name_keys


def check_classes(classes, baselines):
    """Options `classes` ({domain: class or null}) and `baselines` ({domain:
    CPUs}), checked before anything is read: {domain: {class, baseline}}."""
    if not isinstance(classes, dict) or not classes:
        raise ValueRangeError("classes", classes, "a mapping of domain name to %s, or null to remove the class"
                              % ", ".join(CLASSES))
    check_name_keys("classes", classes)
    baselines = baselines or {}
    wanted = {}
    for name, vm_class in classes.items():
        if vm_class is not None and vm_class not in CLASSES:
            raise ValueRangeError("classes.%s" % name, vm_class, "one of %s, or null to remove the class"
                                  % ", ".join(CLASSES))
        wanted[name] = {"class": vm_class, "baseline": None}
    for name, baseline in baselines.items():
        field = "baselines.%s" % name
        if name not in wanted or wanted[name]["class"] != BURSTABLE:
            raise ValueRangeError(field, baseline, "a baseline only for a domain classes makes burstable")
        if isinstance(baseline, bool) or not isinstance(baseline, (int, float)) or not baseline > 0:
            raise ValueRangeError(field, baseline, "a number of CPUs above 0 (and under the domain's vCPUs)")
        wanted[name]["baseline"] = float(baseline)
    return wanted


def check_request(params, check_mode):
    """The task's options as a request, checked before anything is read:
    `wanted` is {domain: {class, baseline}} (check_classes)."""
    return dict(params, check_mode=check_mode, wanted=check_classes(params["classes"], params.get("baselines")))


def check_baseline(name, baseline, vcpus):
    """A burstable baseline at or above the vCPUs is no baseline: refused
    for that domain, naming it."""
    if baseline is not None and baseline >= vcpus:
        raise ValueRangeError("baselines.%s" % name, baseline, "under the domain's %d vCPUs" % vcpus)


def shown(facts):
    """A target's class as results show it."""
    return {"class": facts["declared_class"], "baseline": facts["baseline_cpus"]}


def report_line(result, check_mode=False):
    """One domain's line: its class now and what it was."""
    name = result["name"]
    if result.get("failed"):
        return "%s: failed: %s" % (name, result.get("msg"))
    if result.get("skipped"):
        return "%s: skipped: %s" % (name, result.get("msg"))

    def text(view):
        if not view or view.get("class") is None:
            return "no class"
        return view["class"] + ("" if view.get("baseline") is None else " (baseline %g CPU)" % view["baseline"])
    now = text({"class": result.get("class"), "baseline": result.get("baseline")})
    if not result.get("changed"):
        return "%s: %s, unchanged" % (name, now)
    was = text((result.get("before") or {}).get(LIVE) or (result.get("before") or {}).get(CONFIG))
    return "%s: %s%s, was %s" % (name, "would be " if check_mode else "", now, was)
