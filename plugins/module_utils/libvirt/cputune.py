# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Throttle and restore the CPU tuning of many libvirt domains over one
connection: gather each domain's state, plan with the pure functions in
`plan`, then write. One domain failing is reported and the others go on."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import xml.etree.ElementTree as ET

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet, names
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal, ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import cpu, vm_class
from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml, plan
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.client import (
    CONFIG, ERR_NO_DOMAIN, LIVE, LibvirtClientError)
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.lock import DomainLocks

WORKERS = 4
# The options of the libvirt modules that are lists of domain names.
NAME_FIELDS = ("domains",)


def selection_argument_spec():
    """Options libvirt_cputune and libvirt_cputune_info share (doc fragment
    overcommit.control.libvirt; the connection's `uri` is LibvirtModule's)
    and the way both select domains."""
    return dict(
        class_namespace=dict(type="str", default=domain_xml.CLASS_NAMESPACE),
        domains=dict(type="list", elements="str", default=[], aliases=["names"]),
        classes=dict(type="list", elements="str", default=[], choices=list(vm_class.CLASSES)),
    )


EXPECTED_KEYS = ("cap_cpus", "throttle_time")


class NotOnThisHost(ObjectRefusal):
    """A domain named but not defined on this host, with missing=ignore: a
    fleet run names every target on every host, so absent is no error."""

    def outcome(self):
        return {"skipped": True, "msg": "not defined on this host"}


def lookup(client, name, missing):
    """The domain named `name`; NotOnThisHost when it is not defined here
    and `missing` is ignore."""
    try:
        return client.lookup(name)
    except LibvirtClientError as exc:
        if exc.code == ERR_NO_DOMAIN and missing == "ignore":
            raise NotOnThisHost(name)
        raise


def check_name_keys(field, mapping):
    """Refuses (names.NameListError) keys of a mapping option that cannot be
    a domain's name (empty, surrounding spaces), naming `field.<key>`."""
    problems = []
    for key in mapping or {}:
        why = names.problem(key)
        if why:
            problems.append("%s.%s: the name %r %s" % (field, key, key, why))
    if problems:
        raise names.NameListError(field, problems)


def check_expected(expected, domains, classes):
    """Checks option `expected` ({domain: {cap_cpus, throttle_time}}) and
    returns it with both keys on every entry; raises ValueRangeError
    naming the field and the allowed values."""
    check_name_keys("expected", expected)
    out = {}
    for name, seen in (expected or {}).items():
        field = "expected.%s" % name
        if not isinstance(seen, dict):
            raise ValueRangeError(field, seen, "a mapping with cap_cpus (CPUs or null) and throttle_time "
                                               "(text or null), as libvirt_cputune_info read them")
        unknown = sorted(set(seen) - set(EXPECTED_KEYS))
        if unknown:
            raise ValueRangeError("%s.%s" % (field, unknown[0]), seen[unknown[0]],
                                  "only the keys %s" % ", ".join(EXPECTED_KEYS))
        cap = seen.get("cap_cpus")
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float)) or cap <= 0):
            raise ValueRangeError(field + ".cap_cpus", cap, "a number of CPUs above 0, or null for unlimited")
        when = seen.get("throttle_time")
        if when is not None and not isinstance(when, str):
            raise ValueRangeError(field + ".throttle_time", when, "the throttle record's time as text, or null")
        if not classes and name not in domains:
            raise ValueRangeError(field, name, "a domain the task acts on (one of domains: %s)"
                                  % ", ".join(domains))
        out[name] = {"cap_cpus": None if cap is None else float(cap), "throttle_time": when}
    return out


def cap_cpus(state):
    """What a domain's quotas let it use, in CPUs (None: unlimited), from
    its live tuning when it runs, else its persistent config: the cap_cpus
    libvirt_cputune_info reports and `expected` is compared with."""
    tuning = state["current"].get(LIVE) or state["current"].get(CONFIG) or {}
    return cpu.domain_cpus(tuning, state["vcpus"])


def seen_target(described):
    """The target cap_cpus is read from."""
    return LIVE if described["active"] else CONFIG


def conflict(name, expected, state):
    """What the domain looks like now (plans.seen_of_domain: cap_cpus and
    throttle_time) and why that is not what the caller saw when it decided
    (domain.plan.changed_since), or None when it is."""
    seen = plans.seen_of_domain({"cap_cpus": cap_cpus(state), "throttle": state["record"]})
    why = plans.changed_since({"object": name, "expected": expected}, seen)
    if why is None:
        return seen, None
    # changed_since speaks of a plan; here the caller's read is what is compared.
    prefix = "%s changed since plan: " % name
    detail = why[len(prefix):] if why.startswith(prefix) else why
    return seen, "%s changed since it was read: %s" % (name, detail)


def shares_range(cgroup_version):
    if cgroup_version == 1:
        return cpu.SHARES_RANGE_V1
    if cgroup_version == 2:
        return cpu.WEIGHT_RANGE_V2
    return (cpu.WEIGHT_RANGE_V2[0], cpu.SHARES_RANGE_V1[1])


def read_state(client, domain, class_namespace, described=None, targets=None):
    """Everything the planner needs about one domain, as plain data; tuning
    is read for `targets` only (None: every target the domain has), so a host
    that cannot report live tuning still serves config-only work."""
    described = described or client.describe(domain)
    facts = domain_xml.describe(described["xml"], class_namespace, client.host_cpu_count())
    if targets is None:
        targets = [t for t, has in ((LIVE, described["active"]), (CONFIG, described["persistent"])) if has]
    current = dict((target, client.scheduler_parameters(domain, target)) for target in targets)
    effective, why = vm_class.resolve_class(facts["declared_class"], facts["pinned"], facts["realtime"])
    return dict(facts, name=described["name"], active=described["active"], persistent=described["persistent"],
                current=current, vm_class=effective, class_reason=why)


def select_domains(client, names, classes, class_namespace):
    """Domains named, plus every domain whose effective class is listed, as
    name -> (domain, description) with None for what is still to be looked up;
    an unknown name is kept so that it is reported, not dropped."""
    selected = dict((name, (None, None)) for name in names or [])
    if classes:
        for domain in client.all_domains():
            try:
                described = client.describe(domain)
            except LibvirtClientError as exc:
                if exc.code == ERR_NO_DOMAIN:
                    # Undefined since it was listed: no longer on this host.
                    continue
                # Its class cannot be told: reported as this domain's failure.
                selected[domain.name()] = (domain, None)
                continue
            # The class alone decides: a domain whose throttle record cannot
            # be read is still selected, and fails on its own; so does one
            # whose class element is of a newer schema.
            try:
                facts = domain_xml.class_facts(ET.fromstring(described["xml"]), class_namespace,
                                               client.host_cpu_count())
            except ValueRangeError:
                selected[described["name"]] = (domain, described)
                continue
            effective, _why = vm_class.resolve_class(facts["declared_class"], facts["pinned"], facts["realtime"])
            if effective in classes:
                selected[described["name"]] = (domain, described)
    return selected


def check_request(params, check_mode):
    """The task's options as a request, every value checked before anything
    is read (the shares range, which depends on the host's cgroup version,
    is checked by the runner before any write); raises ValueRangeError
    naming the field and the allowed values."""
    if params["floor"] < 0 or params["floor"] > 1:
        raise ValueRangeError("floor", params["floor"], "0..1 (a fraction of the vCPUs)")
    # One rule for a number of CPUs on every platform: 2, 0.5 or "500m".
    cpus = None if params.get("cpus") is None else cpu.parse_cpus("cpus", params["cpus"])
    request = dict(params, cpus=cpus, check_mode=check_mode, cap=None,
                   expected=check_expected(params.get("expected"), params["domains"], params["classes"]))
    if params["state"] == "throttled":
        request["cap"] = plan.cap_values(
            vcpus=1, cpus=cpus, scope=params["scope"], period=params["period"], quota=params["quota"],
            shares=params["shares"], emulator_cpus=params["emulator_cpus"], emulator_quota=params["emulator_quota"])
    return request


def report_line(result, request):
    """The result's line of the task's report (plan.report_line)."""
    return plan.report_line(result, request["state"] == "restored", request["check_mode"])


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


def check_sample_seconds(params):
    """libvirt_cputune_info's sample_seconds: 0 (no measuring) or more."""
    if params["sample_seconds"] < 0:
        raise ValueRangeError("sample_seconds", params["sample_seconds"], "0 or more")


def describe_domains(client, names, classes, class_namespace, sample_seconds, sleep):
    """Tuning, class, throttle record and measured usage of many domains:
    usage comes from two domain-stats samples `sample_seconds` apart, each one
    call for all running domains."""
    if names or classes:
        selected = select_domains(client, names, classes, class_namespace)
    else:
        selected = dict((domain.name(), (domain, None)) for domain in client.all_domains())
    results, running = [], {}
    for name, (domain, described) in selected.items():
        result = {"name": name}
        try:
            domain = domain or client.lookup(name)
            state = read_state(client, domain, class_namespace, described)
        except (LibvirtClientError, ValueRangeError) as exc:
            result.update(failed=True, msg=str(exc))
            results.append(result)
            continue
        result.update(
            active=state["active"], persistent=state["persistent"], vcpus=state["vcpus"],
            max_vcpus=state["max_vcpus"], pinned=state["pinned"], realtime=state["realtime"],
            declared_class=state["declared_class"], baseline_cpus=state["baseline_cpus"],
            **{"class": state["vm_class"]})
        result.update(class_reason=state["class_reason"], throttle=state["record"],
                      live=plan.pick(state["current"].get(LIVE, {})) or None,
                      config=plan.pick(state["current"].get(CONFIG, {})) or None)
        result["cap_cpus"] = cap_cpus(state)
        policy = state["policy"]
        if policy["error"]:
            # As node_overcommit_info: the state reads as none, and why is said.
            result["policy_error"] = policy["error"]
        result.update(policy=policy["state"], paused=policy["pause"] is not None, pause=policy["pause"])
        if state["active"]:
            running[name] = (domain, result)
            try:
                result["cpus_allowed"] = client.cpus_allowed(domain)
            except LibvirtClientError:
                # It stopped between the two reads: the next read says so.
                result["cpus_allowed"] = None
            result["started_at"] = client.started_at(domain)
        results.append(result)
    if running and sample_seconds > 0:
        domains = [domain for domain, _result in running.values()]
        first = client.cpu_samples(domains)
        sleep(sample_seconds)
        second = client.cpu_samples(domains)
        for name, (_domain, result) in running.items():
            if name in first and name in second:
                result["usage"] = cpu.usage_from_samples(first[name], second[name])
    return results
