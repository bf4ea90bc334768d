# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""libvirt_vm_class's runner: reads each domain's class metadata, asks
classify.py what it should be, and writes it, many domains over one
connection."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import xml.etree.ElementTree as ET

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml, plan
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.classify import check_baseline, shown
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.cputune import WORKERS
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.domain_xml import CONFIG, LIVE
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.reader import lookup


class ClassRunner(object):
    """One task: the class of many domains, over one connection."""

    def __init__(self, client, request):
        self.client = client
        self.request = request
        self.wanted = request["wanted"]
        self.check_mode = request["check_mode"]

    def run(self):
        return fleet.each(sorted(self.wanted), self.one, workers=WORKERS)

    def one(self, name, result):
        """One domain's class, into `result`; a refusal is its own (fleet.each)."""
        result.update(self.classify(name, lookup(self.client, name, self.request["missing"])))

    def classify(self, name, domain):
        """Reads, plans and writes one domain's class element."""
        described = self.client.describe(domain)
        targets = plan.targets_for(self.request["apply"], described["active"], described["persistent"])
        wanted = self.wanted[name]
        namespace = self.request["class_namespace"]
        before, after = {}, {}
        for target in targets:
            root = ET.fromstring(self.client.definition(domain, target))
            vcpu = root.find("vcpu")
            check_baseline(name, wanted["baseline"], int(vcpu.get("current") or vcpu.text) if vcpu is not None else 1)
            before[target] = shown(domain_xml.class_facts(root, namespace))
            after[target] = {"class": wanted["class"], "baseline": wanted["baseline"]}
        writes = [t for t in targets if before[t] != after[t]]
        if writes and not self.check_mode:
            self.client.set_metadata(domain, domain_xml.class_xml(wanted["class"], wanted["baseline"]),
                                     domain_xml.CLASS_KEY, namespace, LIVE in writes, CONFIG in writes)
        return {"changed": bool(writes), "before": before, "after": after, "class": wanted["class"],
                "baseline": wanted["baseline"]}
