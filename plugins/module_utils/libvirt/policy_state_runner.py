# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""libvirt_policy_state's runner: reads, plans (policy_state.plan_policy)
and writes the policy state and kill switch of many domains over one
connection, each under its lock (lock.DomainLocks), so that a state written
by a cycle and a pause set by an operator at the same time never drop one
another."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import xml.etree.ElementTree as ET

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml, plan
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.cputune import WORKERS
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.domain_xml import CONFIG, LIVE
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.lock import DomainLocks
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.policy_state import plan_policy, view
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.reader import lookup


class DomainPolicyStateRunner(object):
    """One task: states and/or the kill switch for many domains. now and
    requested_by: when and by whom a new pause is set."""

    def __init__(self, client, request, now, requested_by):
        self.client = client
        self.request = request
        self.check_mode = request["check_mode"]
        self.pause_fields = {"reason": request.get("reason"), "by": requested_by, "time": now}
        self.locks = DomainLocks(request.get("lock_dir") or "")

    def run(self):
        return fleet.each(self.request["targets"], self.one, workers=WORKERS)

    def wanted(self, name):
        wanted = {}
        if name in self.request["states"]:
            wanted["state"] = self.request["states"][name]
        if name in (self.request.get("domains") or []):
            wanted["paused"] = self.request["paused"]
        return wanted

    def one(self, name, result):
        """One domain's state and kill switch, into `result`; a refusal is
        its own (fleet.each)."""
        domain = lookup(self.client, name, self.request["missing"])
        if self.check_mode:
            result.update(self.keep(name, domain))
        else:
            # Read and write under the domain's lock: a state and a pause
            # written at once by two runs keep each other.
            with self.locks.hold(self.client.uuid(domain), name):
                result.update(self.keep(name, domain))

    def keep(self, name, domain):
        """Reads, plans and writes one domain's state and kill switch."""
        described = self.client.describe(domain)
        targets = plan.targets_for(self.request["apply"], described["active"], described["persistent"])
        wanted = self.wanted(name)
        before, after = {}, {}
        for target in targets:
            root = ET.fromstring(self.client.definition(domain, target))
            current = domain_xml.parse_policy_of(root)
            planned = plan_policy(current, wanted, self.pause_fields)
            before[target], after[target] = view(current), view(planned)
        writes = [t for t in targets if before[t] != after[t]]
        if writes and not self.check_mode:
            self.write(domain, writes, after)
        shown = after[LIVE if LIVE in after else CONFIG]
        return {"changed": bool(writes), "before": before, "after": after, "policy": shown["policy"],
                "paused": shown["pause"] is not None, "pause": shown["pause"]}

    def write(self, domain, writes, after):
        # Targets that end up alike are written in one call.
        groups = []
        for target in writes:
            for group in groups:
                if after[group[0]] == after[target]:
                    group.append(target)
                    break
            else:
                groups.append([target])
        for group in groups:
            wanted = after[group[0]]
            self.client.set_metadata(domain, domain_xml.policy_xml(wanted["policy"], wanted["pause"]),
                                     domain_xml.POLICY_KEY, domain_xml.POLICY_NAMESPACE,
                                     live=LIVE in group, config=CONFIG in group)
