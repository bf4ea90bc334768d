# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the info modules measured, as the policy's input; and what an
object looks like to a plan (the cap in force, the record's time, the
gate), read the same way when the plan is made and when it is applied.
Pure: no I/O, no clock.

`measured` is what the recommend role (and the report) keep per hypervisor
host: {vm_rounds: libvirt_cputune_info results, pressure_rounds:
host_pressure_info results, one per round and in the same order,
pressure_start: a host_pressure_info read before the first round,
vm_window: [start, end]}, plus `node` (the Kubernetes node on that host,
from the host's `kubernetes_node` variable) and `paused` (the kill switch).

`kubevirt` is kubevirt_vm_cpu_info's VMs, their usage read at the times of
the rounds (usage_rounds, one per round). A KubeVirt VM shares the CPUs of
its node, so it joins the host that stands for that node: decided with that
host's pressure, among that host's VMs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.common.record import unix_time
from ansible_collections.overcommit.control.plugins.module_utils.domain.plan import seen_of_domain, seen_of_node
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy import KUBEVIRT, vm_key
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import (
    BURSTABLE, DEDICATED, DEFAULT_FLOOR_FRACTION)


# ---------------------------------------------------------------- the policy's input

def vm_state(domain):
    """The policy state a VM starts from when no cycle kept one: a cap an
    approved plan (or the loop) set is the policy's own, so it may later be
    relaxed and restored; any other cap is someone else's and left alone."""
    record = domain.get("throttle") or {}
    # The weight is the plan's where its record says it set it: libvirt's
    # cpu_shares, a KubeVirt launcher's desired (demoted) CPU request.
    owned = "cpu_shares" in (record.get("owns") or []) or domain.get("desired_request") is not None
    weight = cpu_weight(domain) if owned else None
    if not record.get("plan") or domain.get("cap_cpus") is None and weight is None:
        return {}
    since = unix_time(record.get("time"))
    state = {"rule": record.get("rule") or "contain"}
    if domain.get("cap_cpus") is not None:
        state["cap"] = domain["cap_cpus"]
    if weight is not None:
        # A CPU weight the plan demoted: what it was is the record's.
        state["weight"] = weight
        was = cpu_weight({"cpu_request": domain.get("previous_cpu_request")}) if domain.get("platform") == KUBEVIRT \
            else ((record.get("previous") or {}).get("live") or {}).get("cpu_shares")
        if was:
            state["weight_was"] = was
    if since is not None:
        state.update(capped_at=since, changed_at=since)
    return state


def _policy_of(domain):
    """The state stored on the domain; a cap an approved plan set since the
    last cycle (its record names the plan, the stored state has no cap) is
    taken as the policy's own too."""
    stored = domain.get("policy") or {}
    if stored.get("cap") is not None:
        return stored
    return dict(vm_state(domain), **stored)


def shared_pool_cpus(domains, isolated=None):
    """The CPU ids of one host's shared pool: those its running shared and
    burstable domains may run on (libvirt_cputune_info's cpus_allowed), less
    the CPUs the kernel isolates (host_pressure_info's isolated_cpus). None
    when no running shared domain says (none runs, or an older reader)."""
    pool, known = set(), False
    for domain in domains:
        if not isinstance(domain, dict) or domain.get("class") == DEDICATED or not domain.get("active"):
            continue
        if domain.get("cpus_allowed") is None:
            continue
        known = True
        pool.update(domain["cpus_allowed"])
    return pool - set(isolated or ()) if known else None


def vm_input(host, domain, baseline_fraction=DEFAULT_FLOOR_FRACTION, pool=None):
    """One running domain (or KubeVirt VM) of a round as policy.vm_view
    takes it. A burstable domain without a baseline of its own gets the
    class's floor share of its vCPUs as its baseline; a dedicated domain
    pinned to CPUs of the shared `pool` (CPU ids) is marked as in it."""
    vm = {"name": domain["name"], "host": host, "class": domain.get("class"), "vcpus": domain.get("vcpus"),
          "platform": domain.get("platform"),
          "cap_cpus": domain.get("cap_cpus"), "usage": domain.get("usage") or {},
          "policy": _policy_of(domain),
          # The kill switch an operator set in the domain's metadata.
          "paused": bool(domain.get("paused"))}
    if domain.get("cpu_request") is not None:
        # Kubernetes refuses a launcher's CPU limit under its request.
        vm["min_cap_cpus"] = domain["cpu_request"]
    weight = cpu_weight(domain)
    if weight is not None:
        vm["weight"] = weight
    if domain.get("started_at") is not None:
        vm["started_at"] = domain["started_at"]
    if domain.get("class") == DEDICATED and pool is not None and domain.get("cpus_allowed") is not None:
        vm["in_shared_pool"] = bool(pool & set(domain["cpus_allowed"]))
    if domain.get("class") == BURSTABLE and domain.get("vcpus"):
        vm["baseline_cpus"] = domain.get("baseline_cpus") or domain["vcpus"] * baseline_fraction
    return vm


def cpu_weight(domain):
    """The CPU weight the host's scheduler gives a VM, in cgroup v1 shares:
    a libvirt domain's live cpu_shares (libvirt's default 1024, or cgroup
    v2's cpu.weight, 100 by default, which libvirt reports in its place); a
    KubeVirt launcher pod's CPU request as the kubelet turns it into shares
    (1024 a CPU): the request the brake keeps when it demoted one, as a cap
    is the desired cap (a new pod gets it back from a reconcile). None when
    not known."""
    request = domain.get("desired_cpu_request")
    if request is None:
        request = domain.get("cpu_request")
    if request is not None:
        return round(float(request) * 1024, 3) or None
    shares = (domain.get("live") or {}).get("cpu_shares")
    return shares if isinstance(shares, (int, float)) and not isinstance(shares, bool) and shares > 0 else None


def cpus_used(before, after):
    """CPUs the host used between two host_pressure_info reads (from their
    cpu_time), or None when either lacks it."""
    first, second = (before or {}).get("cpu_time"), (after or {}).get("cpu_time")
    if not first or not second or not after.get("cpus"):
        return None
    busy = second["busy_seconds"] - first["busy_seconds"]
    total = busy + second["idle_seconds"] - first["idle_seconds"]
    return round(after["cpus"] * busy / total, 3) if total > 0 and busy >= 0 else None


def pool_cpus_used(before, after, pool):
    """CPUs the pool's own CPUs (ids) were busy between two host_pressure_info
    reads (their cpu_time_per_cpu), or None when either lacks one of them."""
    first, second = (before or {}).get("cpu_time_per_cpu") or {}, (after or {}).get("cpu_time_per_cpu") or {}
    busy = total = 0.0
    for cpu_id in pool or ():
        # Ids come back as text from a module's JSON result.
        was, now = first.get(cpu_id, first.get(str(cpu_id))), second.get(cpu_id, second.get(str(cpu_id)))
        if not was or not now:
            return None
        spent = now["busy_seconds"] - was["busy_seconds"]
        busy += spent
        total += spent + now["idle_seconds"] - was["idle_seconds"]
    if not pool or total <= 0 or busy < 0:
        return None
    return round(len(pool) * busy / total, 3)


def host_input(name, pressure, node=None, paused=False, previous=None, pool=None):
    """One host of a round: host_pressure_info's result (and that of the
    round before, for the CPUs the host used in between: the VMs' sum
    misses what the host itself and its other tenants burn), the node on
    it (node_overcommit_info's entry) and the kill switch."""
    # The kill switch: on the host (an inventory variable) or on its node (a label).
    paused = bool(paused) or bool(node is not None and node.get("paused"))
    host = {"name": name, "cpus": pressure.get("cpus"), "pressure": pressure.get("pressure"),
            "procs_running": pressure.get("procs_running"), "paused": paused,
            "cpus_used": cpus_used(previous, pressure)}
    if pool is not None:
        host["shared_cpus"] = min(len(pool), pressure.get("cpus") or len(pool))
        host["pool_cpus_used"] = pool_cpus_used(previous, pressure, pool)
    if node is not None:
        host["node"] = {"name": node["name"], "gated": bool(node.get("gate")), "effect": gate_effect(node),
                        "policy": node.get("policy") or {}}
    return host


def gate_effect(node):
    """What the gate on a node (node_overcommit_info's entry) does to new
    VMs: NoSchedule when its taints or cordon close the node, PreferNoSchedule
    when its taints only steer VMs away, None when the node is not gated."""
    gate = node.get("gate")
    if not gate:
        return None
    # The record lists the keys of the taints the gate set; the node has their effects.
    keys = set(gate.get("taints") or [])
    effects = set(taint.get("effect") for taint in node.get("taints") or []
                  if isinstance(taint, dict) and taint.get("key") in keys)
    if gate.get("cordoned") or "NoSchedule" in effects or not effects:
        return "NoSchedule"
    return "PreferNoSchedule"


def _unreadable(result, key):
    """Why a registered info module result read nothing, or None when it
    read. The roles register these reads with ignore_errors, which keeps
    `failed`; one registered with failed_when false says failed=false, so a
    result without its `key` (domains, cpus) failed too. A failed read that
    still returned some (the other domains, when one guest was restarting)
    is a read."""
    if not isinstance(result, dict):
        return "no result"
    if result.get(key) is None or (result.get("failed") and not result.get(key)):
        return result.get("msg") or "failed"
    return None


def _rounds_of(name, measured):
    """The rounds of one host that read both its VMs and its pressure, and
    why the others could not be read (the last reason per kind)."""
    if not isinstance(measured, dict):
        raise ValueRangeError("measured.%s" % name, measured, "the rounds the recommend role took on the host")
    vm_rounds, pressure_rounds = measured.get("vm_rounds") or [], measured.get("pressure_rounds") or []
    if not isinstance(vm_rounds, list) or not isinstance(pressure_rounds, list):
        raise ValueRangeError("measured.%s" % name, measured, "vm_rounds and pressure_rounds as lists")
    usable, reasons = [], {}
    for index, (vms, pressure) in enumerate(zip(vm_rounds, pressure_rounds)):
        # A round that failed on the host (libvirtd away, no PSI) decides
        # nothing; one where only some domains could not be read (a guest
        # restarting) decides about the others.
        unread_vms, unread_pressure = _unreadable(vms, "domains"), _unreadable(pressure, "cpus")
        if unread_vms:
            reasons["the VMs (libvirt_cputune_info)"] = unread_vms
        if unread_pressure:
            reasons["the CPU pressure (host_pressure_info)"] = unread_pressure
        if unread_vms or unread_pressure:
            continue
        usable.append((index, [d for d in vms.get("domains") or [] if isinstance(d, dict) and not d.get("failed")],
                       pressure))
    return usable, "; ".join("%s: %s" % item for item in sorted(reasons.items()))


def _kubevirt_by_host(measured, kubevirt, skipped):
    """{host: [KubeVirt VMs on the node that host stands for]}; VMs on a
    node no measured host stands for go in `skipped`, per node."""
    if isinstance(kubevirt, dict):
        unread = _unreadable(kubevirt, "vms")
        if unread:
            # Kubernetes or Prometheus did not answer: no KubeVirt VM is decided about.
            skipped.append({"host": "kubevirt", "reason": "the KubeVirt VMs could not be read: %s" % unread})
            return {}
        kubevirt = kubevirt.get("vms")
    if kubevirt is None:
        return {}
    if not isinstance(kubevirt, list):
        raise ValueRangeError("kubevirt", type(kubevirt).__name__, "kubevirt_vm_cpu_info's result or its vms")
    host_of = dict((m.get("node"), name) for name, m in sorted(measured.items())
                   if isinstance(m, dict) and m.get("node"))
    out, unplaced = {}, {}
    for vm in kubevirt:
        if not isinstance(vm, dict) or vm.get("failed") or not vm.get("active"):
            continue
        host = host_of.get(vm.get("node"))
        if host is None:
            unplaced.setdefault(vm.get("node") or "no node", []).append(vm["name"])
        else:
            out.setdefault(host, []).append(vm)
    for node, names in sorted(unplaced.items()):
        skipped.append({"host": "node %s" % node,
                        "reason": "no measured hypervisor host stands for it (its kubernetes_node): its KubeVirt VMs "
                                  "%s are not planned" % ", ".join(sorted(names))})
    return out


def _kubevirt_round(vm, index):
    """A KubeVirt VM as a domain of round `index` (its usage then), or None
    when Prometheus had no usage of it then."""
    usage_rounds = vm.get("usage_rounds") or []
    usage = usage_rounds[index] if index < len(usage_rounds) else None
    if not isinstance(usage, dict) or usage.get("cpus_used") is None:
        return None
    return dict(vm, usage=usage, platform=KUBEVIRT)


def rounds(measured, nodes=None, kubevirt=None):
    """The policy's input, round by round: [(round index, hosts, vms)] over
    every host's usable rounds (a host whose round could not be read sits
    that round out; one whose last round could not be read gets nothing
    planned, and `skipped` says so), with `seen`: {object: what a plan sees of it} as of the
    last round, `skipped`: hosts that had no usable round and why, and
    `fleet`: the counts of nodes and gated nodes read."""
    if not isinstance(measured, dict):
        raise ValueRangeError("measured", measured, "a dict of hypervisor host to its rounds")
    nodes_by_name = dict((n["name"], n) for n in nodes or [] if isinstance(n, dict) and n.get("name"))
    per_host, skipped, seen, whys = {}, [], {}, {}
    kubevirt_vms = _kubevirt_by_host(measured, kubevirt, skipped)
    for name in sorted(measured):
        if measured[name] is None:
            skipped.append({"host": name, "reason": "not measured (unreachable, or its play failed)"})
            continue
        host_rounds, why = _rounds_of(name, measured[name])
        if not host_rounds:
            skipped.append({"host": name, "reason": "no round measured both its VMs and its pressure"
                                                    + (" (%s)" % why if why else "")})
            continue
        per_host[name], whys[name] = host_rounds, why
        node_name = measured[name].get("node")
        # Without the nodes read (Kubernetes not asked for) no node is missing.
        if node_name and nodes is not None and node_name not in nodes_by_name:
            skipped.append({"host": name, "reason": "node %s not found in Kubernetes: not gated" % node_name})
        node = nodes_by_name.get(node_name)
        if node is not None:
            seen["node/%s" % node["name"]] = seen_of_node(node)
        for domain in host_rounds[-1][1]:
            seen["%s/%s" % (name, domain["name"])] = seen_of_domain(domain)
        for vm in kubevirt_vms.get(name, []):
            seen[vm_key(dict(vm, platform=KUBEVIRT))] = seen_of_domain(vm)
    # Rounds line up by their index, so a host whose round failed sits that
    # round out and is decided at the times of the rounds it was measured in.
    last = max([r[-1][0] for r in per_host.values()] or [-1])
    out = []
    for position in range(last + 1):
        hosts, vms = [], []
        for name, host_rounds in sorted(per_host.items()):
            this = [r for r in host_rounds if r[0] == position]
            if not this:
                continue
            index, domains, pressure = this[0]
            measured_host = measured[name]
            previous = measured_host["pressure_rounds"][index - 1] if index > 0 else measured_host.get("pressure_start")
            pool = shared_pool_cpus(domains, pressure.get("isolated_cpus"))
            hosts.append(host_input(name, pressure, nodes_by_name.get(measured_host.get("node")),
                                    measured_host.get("paused"), previous, pool))
            vms.extend(vm_input(name, d, pool=pool) for d in domains
                       if isinstance(d, dict) and d.get("active") and d.get("usage") and not d.get("failed"))
            for vm in kubevirt_vms.get(name, []):
                this_round = _kubevirt_round(vm, position)
                if this_round is not None:
                    vms.append(vm_input(name, this_round))
        if hosts:
            out.append((position, hosts, vms))
    for name in sorted(per_host):
        for vm in kubevirt_vms.get(name, []):
            if _kubevirt_round(vm, last) is None:
                skipped.append({"host": vm_key(dict(vm, platform=KUBEVIRT)),
                                "reason": "Prometheus had no usage of it in the last round (round %d): nothing is "
                                          "planned for it (is virt-handler scraped, and the rate window at least twice "
                                          "the scrape interval?)" % (last + 1)})
    for name, host_rounds in sorted(per_host.items()):
        if host_rounds[-1][0] != last:
            skipped.append({"host": name, "reason": "its last round (%d) could not be read: nothing is planned for it%s"
                                                    % (last + 1, " (%s)" % whys[name] if whys[name] else "")})
    # The share of nodes gated at once is of the whole cluster read, not only
    # of the nodes that stand for a measured host.
    fleet = {"nodes": len(nodes_by_name),
             "gated": len([n for n in nodes_by_name.values() if gate_effect(n) == "NoSchedule"])}
    return {"rounds": out, "seen": seen, "skipped": skipped, "fleet": fleet}
