# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""libvirt_cputune's runner: throttle and restore the CPU tuning of many
domains over one connection: read each domain's state (reader.py), plan
with the pure functions of plan.py and cputune.py, then write. One domain
failing is reported and the others go on."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.module_utils.domain import cpu, vm_class
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml, plan
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.client import CONFIG, LIVE
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.cputune import WORKERS, conflict, seen_target, shares_range
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.lock import DomainLocks
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.reader import lookup, read_state, select_domains


class CpuTuneRunner(object):
    """One task: `state` throttled or restored for many domains. now and
    requested_by: the time and the person each new record keeps."""

    def __init__(self, client, request, now, requested_by):
        self.client = client
        self.request = request
        self.check_mode = request["check_mode"]
        self.now = now
        self.requested_by = requested_by
        self.locks = DomainLocks(request.get("lock_dir") or "")

    def check_shares(self):
        """The shares asked for, in the range of this host's cgroup version."""
        if self.request["shares"] is not None:
            version = self.client.cgroup_version()
            label = {1: " (cgroup v1 shares)", 2: " (cgroup v2 weight)"}.get(version, "")
            cpu.check_range("shares", self.request["shares"], shares_range(version), label)

    def run(self):
        self.check_shares()
        selected = select_domains(self.client, self.request["domains"], self.request["classes"],
                                  self.request["class_namespace"])
        # Domains are independent and libvirtd serves calls in parallel (most
        # of a write is the daemon saving the domain's XML): a few workers cut
        # a fleet task's wall time without loading the daemon.
        return fleet.each(list(selected.items()), self.one, start=lambda item: fleet.started(item[0]),
                          workers=WORKERS)

    def one(self, item, result):
        """One domain, tuned into `result`; a refusal is its own (fleet.each)."""
        name, (domain, described) = item
        domain = domain or lookup(self.client, name, self.request["missing"])
        if name in self.request["expected"] and not self.check_mode:
            # The whole read-check-write under the domain's lock: a run
            # that started at the same time sees this one's record.
            with self.locks.hold(self.client.uuid(domain), name):
                self.tune(result, domain, None)
        else:
            self.tune(result, domain, described)

    def tune(self, result, domain, described):
        """Reads, checks `expected`, plans and writes one domain."""
        name = result["name"]
        expected = self.request["expected"]
        described = described or self.client.describe(domain)
        targets = plan.targets_for(self.request["apply"], described["active"], described["persistent"])
        read = targets
        if name in expected and seen_target(described) not in targets:
            read = targets + [seen_target(described)]
        state = read_state(self.client, domain, self.request["class_namespace"], described, read)
        result["class"], result["vcpus"] = state["vm_class"], state["vcpus"]
        if name in expected:
            seen, why = conflict(name, expected[name], state)
            if why:
                result.update(conflict=True, msg=why, seen=seen, throttle=state["record"])
                return
        if self.request["state"] == "throttled":
            domain_plan = self.plan_throttle(state, targets)
        else:
            domain_plan = plan.plan_restore(state, targets)
        result.update(self.execute(domain, state, domain_plan))

    def plan_throttle(self, state, targets):
        request, cap = self.request, self.request["cap"]
        capped_cpus = cpu.domain_cpus(cap, state["vcpus"])
        vm_class.check_throttle(state["vm_class"], state["class_reason"], state["vcpus"], capped_cpus,
                                request["floor"], request["force"])
        field = "quota" if request["cpus"] is None else "cpus"
        plan.check_cap_brakes(cap, state["vcpus"], field, request[field])
        fields = {"reason": request["reason"], "time": self.now, "by": self.requested_by,
                  "class": state["vm_class"], "scope": request["scope"], "cpus": capped_cpus,
                  "plan": request.get("plan_id")}
        return plan.plan_throttle(state, cap, targets, dict((k, v) for k, v in fields.items() if v is not None))

    def execute(self, domain, state, domain_plan):
        """Writes the plan. A new record is written before any value changes
        and removed only after the values are back, so a failure half-way
        always leaves the domain restorable."""
        record_before, record_after = domain_plan["record_before"], domain_plan["record_after"]
        record_changed = record_before != record_after
        writes = {}
        for target, change in domain_plan["changes"].items():
            if target == LIVE:
                writes[target] = plan.live_write_order(change["before"], change["after"])
            else:
                writes[target] = sorted(plan.changed(change["before"], change["after"]).items())
        changed = record_changed or any(writes.values())
        if changed and not self.check_mode:
            if record_after is not None and record_changed:
                self.write_record(domain, state, record_after)
            for key, value in writes.get(LIVE, []):
                self.client.set_scheduler_parameters(domain, {key: value}, LIVE)
            if writes.get(CONFIG):
                self.client.set_scheduler_parameters(domain, dict(writes[CONFIG]), CONFIG)
            if record_after is None and record_changed:
                self.write_record(domain, state, None)
        before = dict((t, c["before"]) for t, c in domain_plan["changes"].items())
        after = dict((t, c["after"]) for t, c in domain_plan["changes"].items())
        before["throttle"], after["throttle"] = record_before, record_after
        return {"changed": changed, "before": before, "after": after, "throttle": record_after}

    def write_record(self, domain, state, record):
        element = domain_xml.record_xml(record) if record is not None else None
        self.client.set_metadata(domain, element, domain_xml.THROTTLE_KEY, domain_xml.THROTTLE_NAMESPACE,
                                 live=state["active"], config=state["persistent"])
