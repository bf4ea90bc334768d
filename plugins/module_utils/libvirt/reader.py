# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reads of libvirt domains the modules share: each domain's state for
the planner, the domains a selection names, and libvirt_cputune_info's
report with measured usage. Through the client; decisions stay in the pure
files (cputune.py, plan.py, domain_xml.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import xml.etree.ElementTree as ET

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import cpu, vm_class
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml, plan
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.client import CONFIG, ERR_NO_DOMAIN, LIVE, LibvirtClientError
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.cputune import NotOnThisHost, cap_cpus


def lookup(client, name, missing):
    """The domain named `name`; NotOnThisHost when it is not defined here
    and `missing` is ignore."""
    try:
        return client.lookup(name)
    except LibvirtClientError as exc:
        if exc.code == ERR_NO_DOMAIN and missing == "ignore":
            raise NotOnThisHost(name)
        raise


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
            usage = cpu.usage_from_samples(first[name], second[name]) if name in first and name in second else None
            if usage is not None:
                result["usage"] = usage
    return results
