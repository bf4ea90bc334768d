#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: libvirt_cputune
short_description: Throttle and restore the CPU of many libvirt domains, with exact restore
version_added: 0.1.0
description:
  - Caps the CPU a running or defined libvirt domain may use, for many domains in one task over one
    connection, and restores exactly what was there before.
  - The cap is given in CPUs and applied to the whole domain with C(global_period) and C(global_quota)
    ("this VM may use at most 2 CPUs") or to each vCPU with C(vcpu_period) and C(vcpu_quota) ("each vCPU
    at most 0.5 CPU"); shares (cgroup v1) or weight (cgroup v2) and emulator caps can be set too.
  - On the first throttle the values it replaces are recorded in the domain's C(<metadata>) with the
    reason, time, requester and class, and which of them the throttles set (C(owns));
    O(state=restored) returns exactly those and removes the record, also when someone had custom values
    before. A value no throttle set (say the shares, when only a cap was given) is left as it is, so an edit
    someone else made meanwhile is not undone. Restoring a domain that was never throttled changes nothing.
  - The record is written before any value changes, and removed only after the values are back, so a
    failure half-way always leaves a domain restorable.
  - Live writes are ordered so that every step is valid on cgroup v1, where a child cgroup (a vCPU, the
    emulator) may not have a larger CPU share than the whole domain; combinations that cannot hold are
    refused with the reason.
  - Dedicated domains (pinned vCPUs, realtime scheduling, or class C(dedicated)) are refused, and so are
    caps under the floor of the shared class, unless O(force=true).
  - A cap that caps nothing, at or above the domain's vCPU count (or, per vCPU, at or above one CPU), is refused
    for that domain before anything is written to it.
  - With O(expected), a domain is changed only when it still is as the caller saw it when it decided (a closed loop
    cycle, or two runners at once); see O(expected) and O(lock_dir).
  - Every value is checked against libvirt's ranges before anything changes. One domain failing
    (unknown, shut off with O(apply=live), a host without a cgroup CPU controller) neither hides nor stops
    the others; the task then fails and lists each failure.
author:
  - overcommit.control maintainers (@overcommit)
extends_documentation_fragment:
  - overcommit.control.libvirt
  - overcommit.control.attributes
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.actiongroups
options:
  domains:
    description:
      - Names of the domains to act on.
      - Names are matched exactly; a name that is empty or has surrounding spaces (a list written as one string,
        C("web-1, web-2")) fails the task, naming the option and the element, before anything is read or changed.
    type: list
    elements: str
    default: []
    aliases: [names]
  classes:
    description:
      - Also act on every domain of the host whose class is one of these.
    type: list
    elements: str
    choices: [dedicated, shared, burstable]
    default: []
  state:
    description:
      - V(throttled) applies the cap; V(restored) returns the recorded pre-throttle values.
    type: str
    choices: [throttled, restored]
    default: throttled
  cpus:
    description:
      - The cap in CPUs, for the whole domain (O(scope=domain)) or for each vCPU (O(scope=vcpu)).
      - A number (V(2), V(0.5)) or millicores (V(500m)), the rule M(overcommit.control.kubevirt_vm_cpu_limit) and
        the playbooks follow too.
      - It must be under the domain's vCPU count (O(scope=domain)) or under 1 (O(scope=vcpu)). A larger cap caps
        nothing (a value meant as millicores, V(500) for 500m, would be one), so that domain fails, naming O(cpus)
        and its vCPUs, before anything is written to it. O(force) does not override this.
      - Mutually exclusive with O(quota).
    type: raw
  scope:
    description:
      - V(domain) caps the whole domain with C(global_period)/C(global_quota); V(vcpu) caps each vCPU
        with C(vcpu_period)/C(vcpu_quota).
    type: str
    choices: [domain, vcpu]
    default: domain
  period:
    description:
      - CFS period in microseconds for the cap, 1000..1000000.
    type: int
    default: 100000
  quota:
    description:
      - Raw CFS quota in microseconds per O(period) instead of O(cpus), 1000..17592186044415, or negative
        for no limit.
      - Like O(cpus), a quota that allows the domain its vCPU count or more (each vCPU one CPU or more with
        O(scope=vcpu)) caps nothing and fails that domain.
    type: int
  shares:
    description:
      - Relative CPU weight, C(cpu_shares). 2..262144 on cgroup v1, 1..10000 (weight) on cgroup v2.
    type: int
  emulator_cpus:
    description:
      - Cap in CPUs for the emulator threads (C(emulator_period)/C(emulator_quota)).
    type: float
  emulator_quota:
    description:
      - Raw emulator quota instead of O(emulator_cpus).
    type: int
  apply:
    description:
      - Where the change goes. V(auto) is V(both) for a running persistent domain (so the cap survives a
        guest restart), V(live) for a running transient one and V(config) for a shut-off one.
    type: str
    choices: [auto, live, config, both]
    default: auto
  reason:
    description:
      - Why the domain is throttled; kept in the record.
    type: str
  requested_by:
    description:
      - Who asked for the throttle; kept in the record. Defaults to the user running the module.
    type: str
  plan_id:
    description:
      - The id of the approved plan this change carries out (role C(overcommit.control.apply_plan) passes it);
        kept in the record as C(plan), so the object itself says which plan changed it.
    type: str
    version_added: 0.1.0
  force:
    description:
      - Throttle dedicated domains and go under the shared floor.
    type: bool
    default: false
  missing:
    description:
      - What a name in O(domains) that is not defined on the host is. V(fail) reports it as a failed domain;
        V(ignore) reports it as skipped, for fleet runs that name every target on every host.
    type: str
    choices: [fail, ignore]
    default: fail
  expected:
    description:
      - What the caller saw of each domain when it decided, as domain name to C(cap_cpus) (the whole-domain cap in
        CPUs as M(overcommit.control.libvirt_cputune_info) reports it, null for unlimited) and C(throttle_time) (the
        C(time) of the domain's throttle record, null when it has none); a key left out counts as null.
      - Right before writing a domain named here, and under that domain's lock (O(lock_dir)), its current cap and
        record time are compared with these (caps to the millicpu). When they differ the domain is left alone and
        its result has C(changed=false), C(conflict=true) and C(msg) saying what changed (for example that
        web-17 changed since it was read, its cap_cpus was unlimited and is 0.25 CPU now); the summary lists it
        under C(conflict). This is not a failure, and the other domains are still handled.
      - So two runs started together on one host with the same O(expected) change a domain once; the second
        sees the first's record and reports a conflict.
      - Domains not named here are written without a check or a lock. With O(domains) only, every name here must
        be one of O(domains).
    type: dict
    version_added: 0.1.0
  lock_dir:
    description:
      - Folder of the per-domain lock files (C(fcntl.flock) on a file named by the domain's UUID) taken for the
        read-check-write of each domain named in O(expected), and by M(overcommit.control.libvirt_policy_state).
        Created with mode 0700 when missing; it must belong to the user running the module and be writable by
        nobody else.
      - When the default cannot be used (C(/run/lock) not writable), C(overcommit-control-locks) in the system's
        temp dir is used instead.
      - Locks hold only among processes on the host that runs the module and use the same folder, not across
        machines that reach one libvirtd over a remote O(uri).
      - A domain whose lock another run holds for more than 60 seconds fails.
      - Not taken in check mode, which writes nothing.
    type: path
    default: /run/lock/overcommit-control
    version_added: 0.1.0
  floor:
    description:
      - The least a throttle may leave a non-dedicated domain, as a fraction of its vCPUs
        (0.25 means a 4 vCPU domain is not capped under 1 CPU).
    type: float
    default: 0.25
"""

EXAMPLES = r"""
- name: Cap three noisy VMs to 2 CPUs each, live and in their persistent config
  overcommit.control.libvirt_cputune:
    domains: [web-17, web-18, batch-3]
    cpus: 2
    reason: "INC-4211 noisy neighbours on hv-12"

- name: Each vCPU of the batch VMs at most half a CPU, running instances only
  overcommit.control.libvirt_cputune:
    domains: "{{ batch_vms }}"
    scope: vcpu
    cpus: 0.5
    apply: live

- name: Throttle web-17 only if nobody changed it since the cycle read it
  overcommit.control.libvirt_cputune:
    domains: [web-17]
    cpus: 0.5
    expected:
      web-17: {cap_cpus: null, throttle_time: null}

- name: Lift the cap tomorrow, back to exactly what was there
  overcommit.control.libvirt_cputune:
    domains: [web-17, web-18, batch-3]
    state: restored
"""

RETURN = r"""
summary:
  description: Names of the domains per outcome, and a report of what was done, for a per-host summary.
  returned: always
  type: dict
  contains:
    report:
      description:
        - One line per domain handled, for people - the CPU cap now in force and what it replaced (live tuning, else
          the persistent config), shares when they changed, or why it failed; names not defined on the host are only
          counted. Prefixed "would be" in check mode.
      type: list
      elements: str
      sample: ["web-17: 0.5 CPU, was unlimited", "web-18: 0.5 CPU, unchanged", "batch-3: failed: Domain not found",
               "2 skipped (not defined on this host)"]
    changed:
      description: Domains changed (or that would be, in check mode).
      type: list
      elements: str
    unchanged:
      description: Domains already as asked.
      type: list
      elements: str
    skipped:
      description: Names not defined on the host, with O(missing=ignore).
      type: list
      elements: str
    conflict:
      description: Domains left alone because they changed since the caller read them (O(expected)).
      type: list
      elements: str
      version_added: 0.1.0
    failed:
      description: Domain name to why it failed.
      type: dict
  sample: {changed: [web-17], unchanged: [web-18], skipped: [], conflict: [], failed: {batch-3: "Domain not found"},
           report: ["web-17: 0.5 CPU, was unlimited", "web-18: 0.5 CPU, unchanged", "batch-3: failed: Domain not found"]}
domains:
  description: One result per domain, in the order they were handled.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Domain name.
      type: str
    changed:
      description: Whether this domain was (or in check mode would be) changed.
      type: bool
    failed:
      description: Present and true when this domain failed; the other domains were still handled.
      type: bool
    skipped:
      description: Present and true when the name is not defined on the host and O(missing=ignore).
      type: bool
    msg:
      description: Why this domain failed, or with C(conflict) what changed since the caller read it.
      type: str
    conflict:
      description:
        - Present and true when the domain was left alone because it is no longer as O(expected) says.
      type: bool
      version_added: 0.1.0
    seen:
      description:
        - With C(conflict), what the domain looks like now, in the shape of O(expected) (C(cap_cpus),
          C(throttle_time)).
      type: dict
      version_added: 0.1.0
    class:
      description: The domain's effective class.
      type: str
    vcpus:
      description: The domain's current vCPUs.
      type: int
    before:
      description: Tuning per target (C(live), C(config)) before the task, and the throttle record.
      type: dict
    after:
      description: Tuning per target after the task, and the throttle record.
      type: dict
    throttle:
      description:
        - The throttle record now on the domain (reason, time, by, class, scope, cpus, previous values per target,
          and C(owns), the tuning keys the throttles set, which restore writes back), or null.
      type: dict
  sample:
    - name: web-17
      changed: true
      class: shared
      before: {live: {global_period: 100000, global_quota: -1}, throttle: null}
      after: {live: {global_period: 100000, global_quota: 200000}, throttle: {reason: INC-4211}}
"""

from ansible_collections.overcommit.control.plugins.module_utils.common.fleet import exit_fleet
from ansible_collections.overcommit.control.plugins.module_utils.common.record import requester, utc_now
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.cputune import NAME_FIELDS, check_request, report_line, selection_argument_spec
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.cputune_runner import CpuTuneRunner
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.lock import DEFAULT_LOCK_DIR
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.module import LibvirtModule


def main():
    module = LibvirtModule(
        dict(
            selection_argument_spec(),
            state=dict(type="str", default="throttled", choices=["throttled", "restored"]),
            cpus=dict(type="raw"),
            scope=dict(type="str", default="domain", choices=["domain", "vcpu"]),
            period=dict(type="int", default=100000),
            quota=dict(type="int"),
            shares=dict(type="int"),
            emulator_cpus=dict(type="float"),
            emulator_quota=dict(type="int"),
            apply=dict(type="str", default="auto", choices=["auto", "live", "config", "both"]),
            reason=dict(type="str"),
            requested_by=dict(type="str"),
            plan_id=dict(type="str"),
            force=dict(type="bool", default=False),
            floor=dict(type="float", default=0.25),
            missing=dict(type="str", default="fail", choices=["fail", "ignore"]),
            expected=dict(type="dict"),
            lock_dir=dict(type="path", default=DEFAULT_LOCK_DIR),
        ),
        name_fields=NAME_FIELDS,
        mutually_exclusive=[("cpus", "quota"), ("emulator_cpus", "emulator_quota")],
        required_one_of=[("domains", "classes")],
        required_if=[("state", "throttled", ("cpus", "quota", "shares", "emulator_cpus", "emulator_quota"), True)],
    )
    request = module.checked(lambda params: check_request(params, module.check_mode))
    now, requested_by = utc_now(), requester(module.params)
    results = module.with_client(lambda client: CpuTuneRunner(client, request, now, requested_by).run())
    exit_fleet(module, results, "domain", "domains", describe=lambda result: report_line(result, request))


if __name__ == "__main__":
    main()
