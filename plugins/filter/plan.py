# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of stage 2 (roles recommend and apply_plan): the plan made from
what the info modules measured, checked before anything is applied, and
split per object into what to apply, what is done and what is refused."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.control import recommend
from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans
from ansible_collections.overcommit.control.plugins.module_utils.domain.observed import acts_on, observed_vms
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy import KUBEVIRT, LIBVIRT
from ansible_collections.overcommit.control.plugins.plugin_utils.filter_guard import BAD_INPUT, filter_guard


def _names(only):
    """`only` as a list: a text is split at commas, as Ansible splits a list
    option given as one string."""
    if isinstance(only, str):
        return [name.strip() for name in only.split(",") if name.strip()]
    return list(only or [])


def _now(now):
    if now is None:
        return time.time()
    try:
        return float(now)
    except (TypeError, ValueError):
        raise ValueRangeError("now", now, "a unix time")


def _round_times(measured, now):
    """One time per round position: the latest host's, so that no round is
    decided before it was measured."""
    times = []
    # Anything else than a host's rounds is refused by the policy's input, naming it.
    hosts = measured if isinstance(measured, dict) else {}
    for name in sorted(hosts):
        host = hosts[name] if isinstance(hosts[name], dict) else {}
        for index, stamp in enumerate(host.get("round_times") or []):
            try:
                stamp = float(stamp)
            except (TypeError, ValueError):
                raise ValueRangeError("measured.%s.round_times[%d]" % (name, index), stamp, "a unix time")
            if index == len(times):
                times.append(stamp)
            else:
                times[index] = max(times[index], stamp)
    return times or [now]


@filter_guard
def recommend_plan(measured, nodes=None, now=None, policy=None, ttl_seconds=plans.DEFAULT_TTL_SECONDS, kubevirt=None,
                   max_unmeasured_share=0.0, migrate=False):
    """measured: {host: {vm_rounds, pressure_rounds, round_times, node,
    paused}}; nodes: node_overcommit_info's nodes (or its result);
    kubevirt: kubevirt_vm_cpu_info's result (or its vms), read at the
    rounds' times (plan_round_times); migrate: whether proposed moves
    become migrate actions."""
    now = _now(now)
    if isinstance(nodes, dict):
        nodes = nodes.get("nodes")
    try:
        ttl = float(ttl_seconds)
    except (TypeError, ValueError):
        raise ValueRangeError("ttl_seconds", ttl_seconds, "a number of seconds above 0")
    return recommend.recommend(measured, nodes, _round_times(measured, now), now, policy or {}, ttl, kubevirt,
                               max_unmeasured_share, migrate)


@filter_guard
def plan_round_times(measured, now=None):
    """The unix time of each round the hosts measured (the latest host's per
    round): the times to read the KubeVirt VMs' usage at."""
    return _round_times(measured, _now(now))


def plan_invalid(plan, now=None, only=None):
    """Why the plan may not be applied at all (not a plan, expired, `only`
    naming objects it does not have), or an empty text when it may."""
    try:
        plans.check(plan, _now(now))
        plans.select(plan, _names(only))
    except (plans.PlanExpired,) + BAD_INPUT as exc:
        return str(exc)
    return ""


@filter_guard
def plan_review(plan, now=None, only=None, host=None, domains=None, nodes=None, kubevirt=None):
    """The plan's actions on the libvirt domains of one hypervisor `host`
    (with libvirt_cputune_info's `domains` read there just now), on the
    KubeVirt VMs (with kubevirt_vm_cpu_info's result or vms), or on the
    Kubernetes nodes (with node_overcommit_info's `nodes`): {plan, apply,
    done, refused}."""
    selected = plans.select(plans.check(plan, float("-inf")), _names(only))
    if nodes is not None:
        if isinstance(nodes, dict):
            nodes = nodes.get("nodes")
        actions = [a for a in selected if a.get("node")]
        live = dict(("node/%s" % n["name"], {"seen": plans.seen_of_node(n), "plan": plans.applied_plan(n)})
                    for n in nodes)
        return plans.review(plan, actions, live, _now(now))
    if kubevirt is not None:
        platform, readings = KUBEVIRT, kubevirt.get("vms") if isinstance(kubevirt, dict) else kubevirt
    elif not host:
        raise ValueRangeError("host", host, "the hypervisor host whose domains are given")
    else:
        platform, readings = LIBVIRT, domains
    vms = observed_vms(platform, host, readings)
    actions = [a for a in selected if acts_on(a, platform, host)]
    live = dict((vm["key"], {"seen": vm["seen"], "plan": vm["plan"], "unreadable": vm["unreadable"]}) for vm in vms)
    return plans.review(plan, actions, live, _now(now))


@filter_guard
def plan_outcome(review, results=None, check_mode=False):
    """What applying did to each object of a review: {applied, done,
    refused, failed} as objects, and one line each for the job's output.
    results: the registered loop results of the module that applied
    review.apply (item = the action)."""
    if isinstance(results, dict):
        results = results.get("results") or []
    return plans.outcome(review, [(r.get("item"), r) for r in results or [] if isinstance(r, dict)], bool(check_mode))


@filter_guard
def plan_unreached(plan, hosts, only=None):
    """The plan's actions on VMs of hypervisor hosts that reported no
    outcome (unreachable, or their play failed), each not applied and
    named: plan_outcome's shape. hosts: those hosts, or a mapping of the
    hosts the run targeted to the outcome each kept (none when it kept
    none)."""
    if isinstance(hosts, dict):
        hosts = [host for host, kept in hosts.items() if not kept]
    selected = plans.select(plans.check(plan, float("-inf")), _names(only))
    return plans.unreached(plan, selected, set(hosts or []))


class FilterModule(object):
    def filters(self):
        return {
            "recommend_plan": recommend_plan,
            "plan_round_times": plan_round_times,
            "plan_invalid": plan_invalid,
            "plan_review": plan_review,
            "plan_outcome": plan_outcome,
            "plan_unreached": plan_unreached,
        }
