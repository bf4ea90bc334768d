#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: libvirt_policy_state
short_description: Keep the control policy's state and the kill switch on many libvirt domains
version_added: 0.1.0
description:
  - Keeps, on each libvirt domain itself, what the control loop carries from one cycle to the next (the
    policy's per-VM state) and the per-domain kill switch, so that any runner can run the next cycle and
    people see both in the domain's XML. For many domains in one task over one connection.
  - Both live in one element of the domain's C(<metadata>) in the namespace
    C(https://overcommit.control/xmlns/policy/1) (prefix C(ocpolicy)) - C(<policy><pause reason="..." by="..."
    time="..."/><state>{JSON}</state></policy>). C(<pause>) present means paused, with why, who and when;
    C(<state>) holds the state as JSON with sorted keys. Either may be absent; with neither the element is
    removed. Writing the state keeps the pause and setting or clearing the pause keeps the state.
  - M(overcommit.control.libvirt_cputune_info) reports them per domain as C(policy), C(paused) and C(pause).
  - Only what differs is written; a second run with the same values changes nothing. Setting
    O(paused=true) on a domain already paused keeps who paused it and when, unless O(reason) differs.
  - Each domain is read and written under its lock (see O(lock_dir)), so a state written by a cycle and a
    pause set by an operator at the same moment on one host keep each other.
  - Every option is checked before anything is read or changed. One domain failing (unknown, shut off with
    O(apply=live)) neither hides nor stops the others; the task then fails and lists each failure.
author:
  - overcommit.control maintainers (@overcommit)
extends_documentation_fragment:
  - overcommit.control.libvirt
  - overcommit.control.attributes
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.actiongroups
options:
  states:
    description:
      - Domain name to the policy state to keep on it (a mapping of JSON values, as the policy returns it per VM),
        or null to remove the state kept there.
      - A value that is not a mapping or null, or that is not JSON (NaN, infinity), fails the task naming
        C(states.<name>) before anything is changed.
    type: dict
  domains:
    description:
      - Names of the domains whose kill switch O(paused) sets or clears.
      - Names are matched exactly; a name that is empty or has surrounding spaces (a list written as one string,
        C("web-1, web-2")) fails the task, naming the option and the element, before anything is read or changed.
        The same holds for the names in O(states).
    type: list
    elements: str
    default: []
    aliases: [names]
  paused:
    description:
      - V(true) sets the kill switch on O(domains) (the control loop takes no automatic action on them);
        V(false) clears it. Needs O(domains). At least one of O(states) and O(paused) is required.
    type: bool
  reason:
    description:
      - Why the domains are paused; kept with the pause.
    type: str
  requested_by:
    description:
      - Who paused them; kept with the pause. Defaults to the user running the module.
    type: str
  apply:
    description:
      - Where the element is written. V(auto) is V(both) for a running persistent domain (so it survives a
        guest restart), V(live) for a running transient one and V(config) for a shut-off one.
    type: str
    choices: [auto, live, config, both]
    default: auto
  missing:
    description:
      - What a name that is not defined on the host is. V(fail) reports it as a failed domain; V(ignore) reports
        it as skipped, for fleet runs that name every target on every host.
    type: str
    choices: [fail, ignore]
    default: fail
  lock_dir:
    description:
      - Folder of the per-domain lock files (C(fcntl.flock) on a file named by the domain's UUID), shared with
        O(overcommit.control.libvirt_cputune#module:lock_dir). Created with mode 0700 when missing; it must belong
        to the user running the module and be writable by nobody else. When the default cannot be used
        (C(/run/lock) not writable), C(overcommit-control-locks) in the system's temp dir is used instead.
      - Locks hold only among processes on the host that runs the module and use the same folder.
      - A domain whose lock another run holds for more than 60 seconds fails. Not taken in check mode.
    type: path
    default: /run/lock/overcommit-control
"""

EXAMPLES = r"""
- name: Keep what this cycle decided on the VMs it decided about
  overcommit.control.libvirt_policy_state:
    states:
      web-17: {cap: 0.5, rule: throttle, capped_at: 1714557600, hist: [0.9, 0.95]}
      web-18: null

- name: Stop every automatic action on two VMs (the kill switch)
  overcommit.control.libvirt_policy_state:
    domains: [web-17, batch-3]
    paused: true
    reason: "INC-4211: hands off while we investigate"

- name: Let the loop act on them again
  overcommit.control.libvirt_policy_state:
    domains: [web-17, batch-3]
    paused: false
"""

RETURN = r"""
summary:
  description: Names of the domains per outcome, and one line per domain for people.
  returned: always
  type: dict
  contains:
    report:
      description: One line per domain handled; names not defined on the host are only counted.
      type: list
      elements: str
      sample: ["web-17: state written", "batch-3: paused", "web-18: unchanged (not paused)"]
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
      description: Always empty here (the shape every fleet module's summary has).
      type: list
      elements: str
    failed:
      description: Domain name to why it failed.
      type: dict
domains:
  description: One result per domain, the names of O(states) first, then those of O(domains).
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
      description: Why this domain failed or was skipped.
      type: str
    policy:
      description: The policy state now kept on the domain (running definition when it runs), or null.
      type: dict
    paused:
      description: Whether the kill switch is now set on the domain.
      type: bool
    pause:
      description: With C(paused), C(reason), C(by) and C(time) (RFC 3339 UTC) of the pause; else null.
      type: dict
    before:
      description: Per target written (C(live), C(config)) the C(policy) and C(pause) before the task.
      type: dict
    after:
      description: Per target the C(policy) and C(pause) after the task.
      type: dict
  sample:
    - name: web-17
      changed: true
      policy: {cap: 0.5, rule: throttle}
      paused: false
      pause: null
      before: {live: {policy: null, pause: null}, config: {policy: null, pause: null}}
      after: {live: {policy: {cap: 0.5, rule: throttle}, pause: null}, config: {policy: {cap: 0.5, rule: throttle}, pause: null}}
"""

from ansible_collections.overcommit.control.plugins.module_utils.common.fleet import exit_fleet
from ansible_collections.overcommit.control.plugins.module_utils.common.record import requester, utc_now
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.domain_xml import CLASS_NAMESPACE
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.lock import DEFAULT_LOCK_DIR
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.module import LibvirtModule
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.policy_state import check_request, report_line
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.policy_state_runner import DomainPolicyStateRunner


def main():
    module = LibvirtModule(
        dict(
            class_namespace=dict(type="str", default=CLASS_NAMESPACE),
            states=dict(type="dict"),
            domains=dict(type="list", elements="str", default=[], aliases=["names"]),
            paused=dict(type="bool"),
            reason=dict(type="str"),
            requested_by=dict(type="str"),
            apply=dict(type="str", default="auto", choices=["auto", "live", "config", "both"]),
            missing=dict(type="str", default="fail", choices=["fail", "ignore"]),
            lock_dir=dict(type="path", default=DEFAULT_LOCK_DIR),
        ),
        name_fields=("domains",),
        required_one_of=[("states", "paused")],
    )
    request = module.checked(lambda params: check_request(params, module.check_mode))
    now, requested_by = utc_now(), requester(module.params)
    results = module.with_client(lambda client: DomainPolicyStateRunner(client, request, now, requested_by).run())
    exit_fleet(module, results, "domain", "domains", describe=lambda result: report_line(result, module.check_mode))


if __name__ == "__main__":
    main()
