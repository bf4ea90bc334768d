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
host's pressure, among that host's VMs.

Both become one record per VM (domain.observed) as they are taken in here;
everything after reads those records."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain.observed import observed_vm, observed_vms
from ansible_collections.overcommit.control.plugins.module_utils.domain.plan import seen_of_node
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy import KUBEVIRT, LIBVIRT
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import (
    BURSTABLE, DEDICATED, DEFAULT_FLOOR_FRACTION)


# ---------------------------------------------------------------- the policy's input

def shared_pool_cpus(vms, isolated=None):
    """The CPU ids of one host's shared pool: those its running shared and
    burstable VMs (records) may run on (libvirt_cputune_info's cpus_allowed),
    less the CPUs the kernel isolates (host_pressure_info's isolated_cpus).
    None when no running shared VM says (none runs, or an older reader)."""
    pool, known = set(), False
    for vm in vms:
        if vm["class"] == DEDICATED or not vm["active"] or vm["cpus_allowed"] is None:
            continue
        known = True
        pool.update(vm["cpus_allowed"])
    return pool - set(isolated or ()) if known else None


def vm_input(vm, baseline_fraction=DEFAULT_FLOOR_FRACTION, pool=None):
    """One running VM's record (domain.observed) as policy.vm_view takes
    it. A burstable VM without a baseline of its own gets the class's floor
    share of its vCPUs as its baseline; a dedicated VM pinned to CPUs of
    the shared `pool` (CPU ids) is marked as in it."""
    out = dict((key, vm[key]) for key in ("name", "host", "class", "vcpus", "platform", "cap_cpus", "usage", "policy",
                                          "paused"))
    for key in ("min_cap_cpus", "weight", "started_at"):
        if vm[key] is not None:
            out[key] = vm[key]
    if vm["class"] == DEDICATED and pool is not None and vm["cpus_allowed"] is not None:
        out["in_shared_pool"] = bool(pool & set(vm["cpus_allowed"]))
    if vm["class"] == BURSTABLE and vm["vcpus"]:
        out["baseline_cpus"] = vm["baseline_cpus"] or vm["vcpus"] * baseline_fraction
    return out


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
        readable = [d for d in vms.get("domains") or [] if isinstance(d, dict) and not d.get("failed")]
        usable.append((index, observed_vms(LIBVIRT, name, readable), pressure))
    return usable, "; ".join("%s: %s" % item for item in sorted(reasons.items()))


def _left_out(name, vms, index):
    """Notes on the VMs of host `name` its round `index` read but the policy
    cannot decide about, each with why: a domain that could not be read, and
    a running one whose usage could not be measured."""
    out = []
    for reading in (vms.get("domains") or []) if isinstance(vms, dict) else []:
        if not isinstance(reading, dict) or not reading.get("name"):
            continue
        note = {"object": "%s/%s" % (name, reading["name"]), "rule": "measure"}
        if reading.get("failed"):
            out.append(dict(note, note="could not be read in the last round (round %d): %s; nothing is planned "
                                       "for it" % (index + 1, reading.get("msg") or "no reason given")))
        elif reading.get("active") and not reading.get("usage"):
            out.append(dict(note, note="its CPU use could not be measured in the last round (round %d: it started "
                                       "or stopped between the two samples, or a counter went back); nothing is "
                                       "planned for it" % (index + 1)))
    return out


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


def _kubevirt_round(vm, host, index):
    """A KubeVirt VM's record in round `index` (its usage then), or None
    when Prometheus had no usage of it then."""
    usage_rounds = vm.get("usage_rounds") or []
    usage = usage_rounds[index] if index < len(usage_rounds) else None
    if not isinstance(usage, dict) or usage.get("cpus_used") is None:
        return None
    return observed_vm(KUBEVIRT, host, vm, usage)


def rounds(measured, nodes=None, kubevirt=None):
    """The policy's input, round by round: [(round index, hosts, vms)] over
    every host's usable rounds (a host whose round could not be read sits
    that round out; one whose last round could not be read gets nothing
    planned, and `skipped` says so), with `seen`: {object: what a plan sees of it} as of the
    last round, `skipped`: hosts that had no usable round and why,
    `fleet`: the counts of nodes and gated nodes read, and `left_out`: the
    policy's notes on VMs of a host measured in the last round that nothing
    can be decided about (unreadable, or their use not measured), which
    do not make the host unmeasured."""
    if not isinstance(measured, dict):
        raise ValueRangeError("measured", measured, "a dict of hypervisor host to its rounds")
    nodes_by_name = dict((n["name"], n) for n in nodes or [] if isinstance(n, dict) and n.get("name"))
    per_host, skipped, seen, whys, left_out = {}, [], {}, {}, []
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
        for vm in host_rounds[-1][1] + observed_vms(KUBEVIRT, name, kubevirt_vms.get(name)):
            seen[vm["key"]] = vm["seen"]
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
            index, observed, pressure = this[0]
            measured_host = measured[name]
            previous = measured_host["pressure_rounds"][index - 1] if index > 0 else measured_host.get("pressure_start")
            pool = shared_pool_cpus(observed, pressure.get("isolated_cpus"))
            hosts.append(host_input(name, pressure, nodes_by_name.get(measured_host.get("node")),
                                    measured_host.get("paused"), previous, pool))
            observed = observed + [_kubevirt_round(vm, name, position) for vm in kubevirt_vms.get(name, [])]
            vms.extend(vm_input(vm, pool=pool) for vm in observed if vm and vm["active"] and vm["usage"])
        if hosts:
            out.append((position, hosts, vms))
    for name in sorted(per_host):
        for vm in kubevirt_vms.get(name, []):
            if _kubevirt_round(vm, name, last) is None:
                skipped.append({"host": observed_vm(KUBEVIRT, name, vm)["key"],
                                "reason": "Prometheus had no usage of it in the last round (round %d): nothing is "
                                          "planned for it (is virt-handler scraped, and the rate window at least twice "
                                          "the scrape interval?)" % (last + 1)})
    for name, host_rounds in sorted(per_host.items()):
        if host_rounds[-1][0] != last:
            skipped.append({"host": name, "reason": "its last round (%d) could not be read: nothing is planned for it%s"
                                                    % (last + 1, " (%s)" % whys[name] if whys[name] else "")})
        else:
            left_out.extend(_left_out(name, measured[name]["vm_rounds"][last], last))
    # The share of nodes gated at once is of the whole cluster read, not only
    # of the nodes that stand for a measured host.
    fleet = {"nodes": len(nodes_by_name),
             "gated": len([n for n in nodes_by_name.values() if gate_effect(n) == "NoSchedule"])}
    return {"rounds": out, "seen": seen, "skipped": skipped, "fleet": fleet, "left_out": left_out}
