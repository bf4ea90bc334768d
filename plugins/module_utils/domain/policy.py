# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The control policy: given what hosts and their VMs do now and what was
done before, which VMs to throttle to how many CPUs, which to relax or
restore, which nodes to gate or open, and why. Pure: plain data in, a plan
out, no I/O, no clock (the caller says what time it is).

Every cycle is decided from its input alone: the state a rule needs from
earlier cycles (trigger history, when a VM was capped, since when it is
calm, its last reversal, its credits; when a node was gated) comes in with
each object as `policy` and goes out in the plan for the runner to store on
the same object, beside the throttle or gate record. So any runner (an AWX
job, a rulebook, CI) can run the next cycle, and two runners that read the
same objects decide the same thing.

The rules, in the order a cycle applies them (docs/policy.md explains each):
  gate_pressure      steer new VMs away from a node whose host has sustained
                     CPU pressure (a PreferNoSchedule taint);
  gate_severe        close it to new VMs (NoSchedule) at severe CPU pressure;
  gate_memory        close it at memory pressure (PSI memory full): the
                     collection has no memory brake;
  contain            when VMs wait for CPU (steal or pressure in N of the
                     last M cycles, or one cycle of severe steal) and the
                     host has no idle CPU, brake the VMs taking most above
                     their entitlement, biggest first (and others only when
                     their excess is comparable), one rung a cycle: first
                     demote their CPU weight (a weight wastes no idle CPU
                     and shortens the wait of a waking victim, which a
                     quota does not), then, while victims still wait after
                     weight_cycles cycles, cap them to free just what the
                     others want; never dedicated VMs, never under a VM's
                     floor;
  credits_exhausted  hold a burstable VM with no credits left to its baseline;
  credits_earned     let it burst again once it has earned enough;
  relax              after a calm period and a cooldown, raise a cap one step
                     (relax_step_share of its vCPUs a cycle; while the VM
                     still presses its cap, a whole step only, and only while
                     idle_guard_share of the pool stays idle after it, in each
                     of the last trigger_m cycles); on a
                     host still contended, only the caps of VMs that are no
                     longer culprits;
  restore            when a step would reach the VM's vCPUs, restore exactly;
  release            a capped VM that was no culprit in trigger_n of the last
                     trigger_m cycles (nor pressed its cap while wanting more
                     than its entitlement) is let go at once, without the calm
                     period and cooldown (unless its cap flaps: a reversal
                     doubled its cooldown): restored exactly when it does not
                     press its cap, else raised a step each cycle;
  open_calm          open a node gated for gate_hold_seconds and calm for
                     open_calm_seconds; it stays open as long again unless
                     pressure turns severe (open_hold).
  placement          when victims still wait with every culprit at its floor,
                     or on a host overloaded with no culprit, for
                     placement_cycles cycles in a row, propose moving a VM
                     (which, where to, why) to the host of the cycle with
                     the most idle CPU; a proposal is never applied.
A per-cycle action budget and a cap on the share of nodes gated at once
bound every cycle; an object or host marked `paused` (the kill switch) gets
no action, and the plan says what was held back.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import credits as credit_rules
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import (
    BURSTABLE, CLASSES, DEDICATED, DEFAULT_CLASS, DEFAULT_FLOOR_FRACTION)

NAME = "overcommit"

# name: (default, low, high, what it is). Defaults from the field: Crane
# (10 s samples, 2-of-2 style N-of-M triggers, 300 s cooldowns), Koordinator
# (cut fast, recover at most +10 % a round), PARTIES/Heracles (a band
# between the act and relax thresholds), public-cloud burstable credits.
PARAMETERS = {
    "victim_steal_ratio": (0.10, 0.0, 1.0, "steal / (used + steal) at which a VM counts as waiting for CPU"),
    "relax_steal_ratio": (0.05, 0.0, 1.0, "steal ratio every VM must be under for the host to count as calm"),
    "min_steal_cpus": (0.05, 0.0, None, "steal in CPUs under which a VM never counts as waiting"),
    "severe_steal_ratio": (0.25, 0.0, 1.0, "steal ratio at which one cycle is enough to act (cut fast)"),
    "victim_pressure": (20.0, 0.0, 100.0, "PSI cpu some avg10 (%) of a VM's cgroup at which it counts as waiting"),
    "trigger_n": (2, 1, None, "cycles out of the last trigger_m a VM must wait in to be a victim"),
    "trigger_m": (3, 1, 64, "length of the trigger history"),
    "idle_guard_share": (0.10, 0.0, 1.0, "share of the host's CPUs idle at which nothing is throttled"),
    "headroom_share": (0.02, 0.0, 0.5, "share of the host's CPUs a containment leaves free"),
    "culprit_ratio": (3.0, 1.0, None, "wanted CPU / entitlement a VM needs to be a culprit"),
    "culprit_busy_share": (0.9, 0.0, 1.0, "share of its vCPUs a VM above its entitlement wants to be a culprit "
                                          "whatever culprit_ratio says (a VM running flat out)"),
    "culprit_min_excess_cpus": (0.25, 0.0, None, "CPUs above its entitlement a VM needs to be a culprit"),
    "culprit_peer_share": (0.5, 0.0, 1.0, "share of the biggest culprit's excess at which a culprit that waits too "
                                          "is still cut (a peer)"),
    "floor_fraction": (DEFAULT_FLOOR_FRACTION, 0.0, 1.0, "least share of its vCPUs a shared VM is capped to"),
    "placement_cycles": (3, 1, 64, "cycles in a row in which victims wait with every culprit at its floor, or with "
                                   "no culprit on an overloaded host, before the plan proposes moving a VM"),
    "weight_cycles": (1, 0, 64, "cycles in which victims still wait behind a culprit whose CPU weight was demoted "
                                "before it is capped too (0: no weight rung, cap at once)"),
    "quota_cut_share": (0.25, 0.0, 0.9, "share a culprit's cap is cut by in each cycle in which victims still "
                                        "wait while the pool's load fits, never under its floor (0: caps only for "
                                        "the fluid need)"),
    "usual_hours": (6.0, 0.0, 168.0, "hours a VM's usual demand is averaged over (0: no usual demand, culprits "
                                     "by fair shares alone)"),
    "surge_ratio": (2.0, 1.0, None, "wanted CPU over its usual demand at which a VM surges: a culprit while victims "
                                    "wait, even under its fair share"),
    "min_change_cpus": (0.05, 0.0, None, "smallest cap change worth an action"),
    "relax_calm_seconds": (60, 0, None, "seconds the host must be calm before a cap is raised"),
    "relax_step_share": (0.10, 0.01, 1.0, "most a cap is raised in one cycle, as a share of the VM's vCPUs"),
    "busy_share": (0.90, 0.0, 1.0, "share of its cap a VM must use to count as pressing it"),
    "pressure_relax": (10.0, 0.0, 100.0, "host PSI cpu some avg10 (%) the host must be under to count as calm"),
    "cooldown_seconds": (300, 0, None, "seconds after a cap is tightened before it may be raised"),
    "max_cooldown_seconds": (1800, 0, None, "longest cooldown after repeated reversals (it doubles at each)"),
    "gate_pressure": (20.0, 0.0, 100.0, "host PSI cpu some avg60 and avg10 (%) at which new VMs are steered away "
                                        "from its node (a PreferNoSchedule taint)"),
    "severe_gate_pressure": (50.0, 0.0, 100.0, "host PSI cpu some avg60 and avg10 (%) at which its node is closed to "
                                               "new VMs (a NoSchedule taint)"),
    "memory_gate_pressure": (5.0, 0.0, 100.0, "host PSI memory full avg60 (%) at which its node is closed to new VMs "
                                              "(the collection has no memory brake)"),
    "open_pressure": (5.0, 0.0, 100.0, "host PSI cpu some avg60 and avg10 (%) a gated node must be under to open"),
    "gate_hold_seconds": (1800, 0, None, "least time a node stays gated"),
    "open_calm_seconds": (600, 0, None, "seconds under open_pressure before a gated node opens"),
    "max_gated_share": (0.25, 0.0, 1.0, "largest share of the nodes gated at once"),
    "max_actions_per_cycle": (100, 1, None, "most actions one cycle plans; the rest wait for the next"),
    "credit_release_minutes": (5.0, 0.0, None, "minutes of full burst a held burstable VM must earn to burst again"),
    "initial_credit_share": (0.10, 0.0, 1.0, "share of the bank a burstable VM starts with when it has no balance"),
}
INTEGER_PARAMETERS = ("trigger_n", "trigger_m", "max_actions_per_cycle", "weight_cycles", "placement_cycles")

ACTIONS = ("gate", "weight", "throttle", "relax", "restore", "open")
# Order of escalation inside a cycle: gates first, then weights and caps, then letting go.
ACTION_ORDER = {"gate": 0, "weight": 1, "throttle": 1, "relax": 2, "restore": 3, "open": 4}
# Where a VM runs: a libvirt domain on its host, or a KubeVirt VM (named
# namespace/name, braked through its launcher pod) on the node of its host.
LIBVIRT, KUBEVIRT = "libvirt", "kubevirt"
PLATFORMS = (LIBVIRT, KUBEVIRT)


def vm_key(vm):
    """The object a VM is in plans and states: host/domain for libvirt;
    kubevirt/namespace/name for KubeVirt, whichever node it runs on (a
    migration moves it, its state travels on the VMI)."""
    if vm.get("platform") == KUBEVIRT:
        return "%s/%s" % (KUBEVIRT, vm["name"])
    return "%s/%s" % (vm["host"], vm["name"])


TIGHTEN = "tighten"
LOOSEN = "loosen"
# State keys a brake of ours keeps (a cap, a demoted weight); dropped
# together when the exact restore takes both away.
CAP_KEYS = ("cap", "rule", "capped_at", "changed_at", "direction", "calm_since", "released", "idle_seen",
            "weight", "weight_waits")
# The least CPU weight the policy demotes to: libvirt's cpu_shares take
# 2..262144 (cgroup v1) and a cgroup v2 cpu.weight 1..10000.
MIN_WEIGHT = 2
# A demotion that leaves the culprit more than this share of its weight
# changes too little to shorten anyone's wait: the quota rung comes next.
WEIGHT_STEP_SHARE = 0.5


def parameters(given=None):
    """The policy's parameters: defaults overridden by `given`, validated.
    Raises ValueRangeError naming the parameter."""
    given = given or {}
    if not isinstance(given, dict):
        raise ValueRangeError("policy", given, "a mapping of parameter names to values")
    unknown = sorted(set(given) - set(PARAMETERS))
    if unknown:
        raise ValueRangeError("policy.%s" % unknown[0], given[unknown[0]], "one of %s" % ", ".join(sorted(PARAMETERS)))
    params = {}
    for name, (default, low, high, _what) in PARAMETERS.items():
        value = given.get(name, default)
        if value is None:
            value = default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise ValueRangeError("policy.%s" % name, value, "a number")
        if name in INTEGER_PARAMETERS:
            if value != int(value):
                raise ValueRangeError("policy.%s" % name, value, "a whole number")
            value = int(value)
        if value < low or (high is not None and value > high):
            raise ValueRangeError("policy.%s" % name, value, "%s..%s" % (low, high if high is not None else "any"))
        params[name] = value
    if params["trigger_n"] > params["trigger_m"]:
        raise ValueRangeError("policy.trigger_n", params["trigger_n"], "at most trigger_m (%d)" % params["trigger_m"])
    if params["relax_steal_ratio"] > params["victim_steal_ratio"]:
        raise ValueRangeError("policy.relax_steal_ratio", params["relax_steal_ratio"],
                              "at most victim_steal_ratio (%g): the relax threshold is under the act threshold"
                              % params["victim_steal_ratio"])
    if params["open_pressure"] > params["gate_pressure"]:
        raise ValueRangeError("policy.open_pressure", params["open_pressure"],
                              "at most gate_pressure (%g)" % params["gate_pressure"])
    if params["severe_gate_pressure"] < params["gate_pressure"]:
        raise ValueRangeError("policy.severe_gate_pressure", params["severe_gate_pressure"],
                              "at least gate_pressure (%g): the hard gate is past the soft one" % params["gate_pressure"])
    return params


# ---------------------------------------------------------------- inputs

def _checked_number(field, value, required=False, low=0.0):
    if value is None:
        if required:
            raise ValueRangeError(field, value, "a number")
        return None
    if isinstance(value, bool):
        raise ValueRangeError(field, value, "a number")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueRangeError(field, value, "a number")
    if number < low:
        raise ValueRangeError(field, value, "a number of at least %g" % low)
    return number


def _pressure(value, field):
    """PSI cpu some (avg10, avg60) from host_pressure_info's `pressure`
    ({cpu: {some: {avg10, avg60}}}), its `vm_cgroup.cpu_pressure` (the VMs'
    cgroup parent: {some: {avg10, avg60}}), or a flat {some_avg10, some_avg60}."""
    if not value:
        return None, None
    if not isinstance(value, dict):
        raise ValueRangeError(field, value, "a mapping with some_avg10/some_avg60, some.avg10/avg60 or cpu.some.avg10/avg60")
    if isinstance(value.get("cpu"), dict) and isinstance(value["cpu"].get("some"), dict):
        some, path = value["cpu"]["some"], ".cpu.some."
    elif isinstance(value.get("some"), dict):
        some, path = value["some"], ".some."
    else:
        return _checked_number(field + ".some_avg10", value.get("some_avg10")), _checked_number(field + ".some_avg60", value.get("some_avg60"))
    return _checked_number(field + path + "avg10", some.get("avg10")), _checked_number(field + path + "avg60", some.get("avg60"))


def _memory_full(value, field):
    """PSI memory full avg60 from host_pressure_info's `pressure`
    ({memory: {full: {avg60}}}) or a flat {memory_full_avg60}; None when
    not given."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("memory"), dict) and isinstance(value["memory"].get("full"), dict):
        return _checked_number(field + ".memory.full.avg60", value["memory"]["full"].get("avg60"))
    return _checked_number(field + ".memory_full_avg60", value.get("memory_full_avg60"))


GATE_EFFECTS = (SOFT, HARD) = ("PreferNoSchedule", "NoSchedule")


def _shared_cpus(value, cpus, field):
    shared = _checked_number(field, value)
    if shared is not None and shared > cpus:
        raise ValueRangeError(field, value, "0..%g (the host's CPUs)" % cpus)
    return shared


def host_view(host, index=0):
    """One host of the input, checked. Accepts {name, cpus, shared_cpus,
    pressure, procs_running, cpus_used, pool_cpus_used, node, paused};
    `pool_cpus_used` is what the shared pool's own CPUs were busy (read per
    CPU; preferred to `cpus_used`, the whole host's); `shared_cpus` is the
    size of the shared pool (the CPUs shared VMs may run on, read from their
    cpusets), `node` is the Kubernetes node
    on this host ({name, gated, gate, policy, effect: the taint effect of
    its gate, NoSchedule when gated and not said}) or absent."""
    field = "hosts[%d]" % index
    if not isinstance(host, dict) or not host.get("name"):
        raise ValueRangeError(field + ".name", host.get("name") if isinstance(host, dict) else host, "a host name")
    avg10, avg60 = _pressure(host.get("pressure"), field + ".pressure")
    node = host.get("node")
    if node is not None and not (isinstance(node, dict) and node.get("name")):
        raise ValueRangeError(field + ".node", node, "a mapping with the node's name, or absent")
    cpus = _checked_number(field + ".cpus", host.get("cpus"), required=True)
    if cpus <= 0:
        raise ValueRangeError(field + ".cpus", host.get("cpus"), "a number of CPUs above 0")
    gated = node is not None and bool(node.get("gated") or node.get("gate"))
    effect = node.get("effect") if node is not None else None
    if effect is not None and effect not in GATE_EFFECTS:
        raise ValueRangeError(field + ".node.effect", effect, "one of %s, or absent" % ", ".join(GATE_EFFECTS))
    return {
        "name": host["name"], "cpus": cpus, "avg10": avg10, "avg60": avg60,
        "memory_full60": _memory_full(host.get("pressure"), field + ".pressure"),
        "shared_cpus": _shared_cpus(host.get("shared_cpus"), cpus, field + ".shared_cpus"),
        "cpus_used": _checked_number(field + ".cpus_used", host.get("cpus_used")),
        "pool_cpus_used": _checked_number(field + ".pool_cpus_used", host.get("pool_cpus_used")),
        "procs_running": _checked_number(field + ".procs_running", host.get("procs_running")),
        "paused": bool(host.get("paused")),
        "node": None if node is None else {
            "name": node["name"], "gated": gated, "effect": (effect or HARD) if gated else None,
            "policy": _state(node.get("policy"), field + ".node.policy"),
        },
    }


def _weight(value, field):
    weight = _checked_number(field, value)
    if weight is not None and weight <= 0:
        raise ValueRangeError(field, value, "a CPU weight above 0 (cpu.shares, cpu.weight or a CPU request), or absent")
    return weight


def _state(value, field):
    if value is None or value == "":
        return {}
    if not isinstance(value, dict):
        raise ValueRangeError(field, value, "the mapping a previous cycle returned")
    return value


def vm_view(vm, index=0):
    """One VM of the input, checked. Accepts libvirt_cputune_info's domain
    shape ({name, class, vcpus, cap_cpus, throttle, usage: {cpus_used,
    steal_cpus}}) plus `host`, `policy` (the state of the last cycle),
    `floor_cpus`, `baseline_cpus`, `entitled_cpus`, `credits`, `pressure`
    `paused`, `platform` (libvirt, kubevirt), `min_cap_cpus` (the least
    cap the platform takes: a KubeVirt launcher's CPU request) and `weight`
    (the CPU weight the host's scheduler gives it); flat cpus_used/steal_cpus
    are accepted too."""
    field = "vms[%d]" % index
    if not isinstance(vm, dict) or not vm.get("name") or not vm.get("host"):
        raise ValueRangeError(field, vm, "a mapping with name and host")
    platform = vm.get("platform") or LIBVIRT
    if platform not in PLATFORMS:
        raise ValueRangeError(field + ".platform", platform, "one of %s" % ", ".join(PLATFORMS))
    cls = vm.get("class") or DEFAULT_CLASS
    if cls not in CLASSES:
        raise ValueRangeError(field + ".class", cls, "one of %s" % ", ".join(CLASSES))
    vcpus = _checked_number(field + ".vcpus", vm.get("vcpus"), required=True)
    if vcpus < 1:
        raise ValueRangeError(field + ".vcpus", vm.get("vcpus"), "at least 1")
    usage = vm.get("usage") or {}
    used = _checked_number(field + ".usage.cpus_used", usage.get("cpus_used", vm.get("cpus_used")))
    steal = _checked_number(field + ".usage.steal_cpus", usage.get("steal_cpus", vm.get("steal_cpus")))
    cap = _checked_number(field + ".cap_cpus", vm.get("cap_cpus"))
    baseline = None
    if cls == BURSTABLE:
        baseline = credit_rules.check_baseline(field + ".baseline_cpus", vm.get("baseline_cpus"), vcpus)
    pressure = vm.get("pressure")
    if isinstance(pressure, dict):
        pressure = _pressure(pressure, field + ".pressure")[0]
    return {
        "key": vm_key(dict(vm, platform=platform)), "platform": platform, "name": vm["name"], "host": vm["host"],
        "class": cls, "vcpus": vcpus, "used": used or 0.0, "steal": steal, "cap": cap,
        # No reading of its usage (a shut-off or unsampled VM): no demand to learn from.
        "usage_known": used is not None,
        "pressure": _checked_number(field + ".pressure", pressure),
        "state": _state(vm.get("policy"), field + ".policy"),
        "floor": _checked_number(field + ".floor_cpus", vm.get("floor_cpus")),
        "min_cap": _checked_number(field + ".min_cap_cpus", vm.get("min_cap_cpus")),
        "baseline": baseline,
        "entitled": _checked_number(field + ".entitled_cpus", vm.get("entitled_cpus")),
        "weight": _weight(vm.get("weight"), field + ".weight"),
        # A dedicated VM pinned to CPUs that shared VMs may run on too.
        "in_shared_pool": bool(vm.get("in_shared_pool")) if cls == DEDICATED else True,
        "credits": _checked_number(field + ".credits", vm.get("credits")),
        "paused": bool(vm.get("paused")),
    }


# ---------------------------------------------------------------- signals

def wanted(vm):
    """CPU the VM would use with no contention and no cap: what it used plus
    what it waited for (a cap's throttled time shows up as steal too)."""
    return min(vm["vcpus"], vm["used"] + (vm["steal"] or 0.0))


def steal_ratio(vm):
    total = vm["used"] + (vm["steal"] or 0.0)
    return (vm["steal"] or 0.0) / total if total > 0 else 0.0


# How fast a VM's quiet baseline follows its wait in calm cycles (an
# exponential average over about five of them), and its resolution: a
# baseline is stored to the hundredth, so that it changes the VM's stored
# state rarely, not every cycle.
BASE_WEIGHT = 0.2
BASE_STEP = 0.01
# Usual demand (state `usual`, CPUs): an exponential average over
# usual_hours, kept to USUAL_STEP so that most cycles store nothing new,
# trusted once followed for USUAL_TRUST_SECONDS (its first value is what the
# VM wanted when first seen). A VM wanting less than BUSY_AS_USUAL times it
# is at its usual level.
USUAL_STEP = 0.05
USUAL_TRUST_SECONDS = 600
USUAL_SAMPLE_SECONDS = 3600
BUSY_AS_USUAL = 1.25


def follow_usual(state, want, now, hours, surge_ratio):
    """The state's usual demand moved towards `want`, as an exponential
    average over `hours`; stored only when it moves by USUAL_STEP (a lazy
    average: a cycle that moves it less leaves the state as it was). Since
    the time since it last moved stands for cycles that did not move it,
    one sample counts for at most USUAL_SAMPLE_SECONDS and is first brought
    within surge_ratio of the usual demand: a VM steady for hours that
    turns noisy is not taken for one whose usual level that is."""
    usual, at = state.get("usual"), state.get("usual_at")
    if usual is None or at is None:
        state.update(usual=round(round(want / USUAL_STEP) * USUAL_STEP, 2), usual_at=now, usual_since=now)
        return
    sample = min(want, max(surge_ratio * usual, USUAL_STEP)) if want > usual else max(want, usual / surge_ratio)
    share = 1.0 - math.exp(-min(max(0.0, now - at), USUAL_SAMPLE_SECONDS) / (hours * 3600.0))
    moved = round(round((usual + share * (sample - usual)) / USUAL_STEP) * USUAL_STEP, 2)
    if moved != usual:
        state.update(usual=moved, usual_at=now)


def trusted_usual(state, now, params, settled=False):
    """The usual demand in the state once followed long enough (settled:
    for usual_hours, as the flat-out exemption needs, since a VM already
    flat out when first seen starts its usual demand there), else None."""
    hours = params["usual_hours"]
    since = state.get("usual_since")
    least = hours * 3600.0 if settled else USUAL_TRUST_SECONDS
    if not hours or since is None or now - since < least:
        return None
    return state.get("usual")


def waits(vm, params, ratio, base=0.0):
    """Whether the VM waited for CPU this cycle more than `base`, its usual
    wait when its host is calm, by steal or by its own cgroup's pressure
    (where the runner has that instead of steal)."""
    if vm["steal"] is not None and vm["steal"] >= params["min_steal_cpus"] and steal_ratio(vm) - base >= ratio:
        return True
    pressure = vm["pressure"]
    return pressure is not None and pressure >= params["victim_pressure"] * ratio / params["victim_steal_ratio"]


def surges(want, usual, params):
    """Whether a VM wanting `want` CPUs is at surge_ratio times its usual
    demand `usual` (None: not known yet) and culprit_min_excess_cpus above it."""
    return usual is not None and want >= IDLE_CPUS and want > usual and want >= params["surge_ratio"] * usual \
        and want - usual >= params["culprit_min_excess_cpus"]


def is_culprit(vm, want, ent, params, usual=None, settled=None):
    """Whether a VM wanting `want` CPUs takes enough to be braked for others'
    sake: far above its usual demand `usual` (when known), or enough above
    its entitlement `ent`: culprit_ratio times it, or running flat out
    unless that is its settled usual level (a busy VM is not punished for
    being as busy as it always is)."""
    if surges(want, usual, params):
        return True
    flat_out = want >= params["culprit_busy_share"] * vm["vcpus"] and (settled is None or want >= BUSY_AS_USUAL * settled)
    return want - ent >= params["culprit_min_excess_cpus"] and (want >= params["culprit_ratio"] * ent or flat_out)


def floor_of(vm, params):
    if vm["floor"] is not None:
        floor = vm["floor"]
    elif vm["class"] == BURSTABLE:
        floor = vm["baseline"]
    else:
        floor = vm["vcpus"] * params["floor_fraction"]
    # A cap the platform refuses under (a launcher pod's limit under its request) is no cap.
    return max(floor, vm.get("min_cap") or 0.0)


def demoted_weight(floor, pool, others):
    """The least CPU weight that still gives a VM `floor` CPUs of a pool of
    `pool` CPUs while VMs of total weight `others` are busy too (weighted
    CFS shares a full pool in proportion to the weights): a demotion keeps
    the class's promise under full contention. None when no weight can
    (the floor is the whole pool)."""
    if floor >= pool:
        return None
    return max(MIN_WEIGHT, int(math.ceil(floor * others / (pool - floor))))


# A VM that uses and waits for less CPU than this is idle: it takes no part
# in the share-out of the pool (a guest's idle housekeeping, its timer ticks).
IDLE_CPUS = 0.05


def weights(vms):
    """{VM key: its CPU weight} for the shared VMs of one host: the weights
    the host's scheduler gives them when every one of them has one (libvirt's
    cpu_shares, a launcher pod's CPU request), else their vCPUs (a weight
    missing for one VM cannot be compared with the others')."""
    shared = [vm for vm in vms if vm["class"] != DEDICATED]
    given = all(vm.get("weight") is not None for vm in shared)
    return dict((vm["key"], vm["weight"] if given else vm["vcpus"]) for vm in shared)


def shared_pool(host, vms):
    """CPUs of the shared pool: what shared VMs can actually run on. The
    host's `shared_cpus` where the runner read it from the VMs' cpusets (and
    the host's isolated CPUs), else the host's CPUs less those its dedicated
    VMs pin (taken as theirs alone). The one definition idle CPU, load, need,
    entitlements and room to relax into are all taken over."""
    if host.get("shared_cpus") is not None:
        return host["shared_cpus"]
    # Not read: no smaller than what the shared VMs are seen to use (their
    # CPUs then are not all the dedicated VMs' alone).
    return min(host["cpus"], max(host["cpus"] - sum(vm["vcpus"] for vm in vms if vm["class"] == DEDICATED),
                                 sum(vm["used"] for vm in vms if vm["class"] != DEDICATED)))


def pool_vms(vms):
    """The VMs whose CPU comes out of the shared pool: every shared and
    burstable VM, and a dedicated VM whose pinned CPUs the pool shares."""
    return [vm for vm in vms if vm["class"] != DEDICATED or vm.get("in_shared_pool")]


def entitlements(host, vms, states=None):
    """CPUs each VM is entitled to under contention: what it says it was
    sold (`entitled_cpus`), else its weight's share of the shared pool (as
    weighted CFS shares it out) among the VMs that are not idle: CFS gives
    an idle VM's share to the others, so it does not shrink theirs. A
    burstable VM with credits may burst, at zero credits it is entitled to
    its baseline."""
    pool = shared_pool(host, vms)
    weight_of = weights(vms)
    active = [vm["key"] for vm in vms if vm["key"] in weight_of and wanted(vm) >= IDLE_CPUS]
    total_weight = sum(weight_of[key] for key in active) or sum(weight_of.values()) or 1.0
    result = {}
    for vm in vms:
        if vm["entitled"] is not None:
            share = vm["entitled"]
        elif vm["class"] == DEDICATED:
            share = vm["vcpus"]
        else:
            share = pool * weight_of[vm["key"]] / total_weight
        if vm["class"] == BURSTABLE:
            balance = (states[vm["key"]] if states is not None else vm["state"]).get("credits")
            share = max(share, vm["baseline"]) if balance is None or balance > 0 else vm["baseline"]
        result[vm["key"]] = share
    return result


def net_pressure(host, capped_wait, now):
    """The host with its CPU pressure net of what caps add to it. A VM held
    by a CFS cap has runnable vCPUs that wait out each throttled period, and
    the kernel counts that as CPU pressure of the host (measured on cgroup
    v1: one guest capped to 0.1 CPU with nothing else busy, host PSI some
    avg10 about 73 %, docs/policy.md); the capped VMs' steal is that wait (a
    cap's throttled time shows as steal). PSI `some` counts time in which at
    least one task waits, so the caps add at most min(1, their steal in CPUs)
    of it, averaged as the kernel averages (avg10, avg60): the share is carried between cycles in
    the node's state (`capped_psi`), so that the part of avg60 a cap lifted a
    minute ago still explains is not read as pressure either. The gate and
    the calm test read this net pressure, so a cap never keeps its own node
    gated or its own host "contended"; raw is kept for the signals."""
    node = host.get("node")
    kept = (node.get("policy") or {}).get("capped_psi") if node is not None else None
    current = 100.0 * min(1.0, capped_wait)
    if isinstance(kept, dict) and kept.get("at") is not None:
        elapsed = max(0.0, now - kept["at"])
        decay10, decay60 = math.exp(-elapsed / 10.0), math.exp(-elapsed / 60.0)
        added10 = kept.get("avg10", 0.0) * decay10 + current * (1.0 - decay10)
        added60 = kept.get("avg60", 0.0) * decay60 + current * (1.0 - decay60)
    else:
        # No history: as if the caps in force had always been.
        added10 = added60 = current
    carried = {"avg10": round(added10, 2), "avg60": round(added60, 2), "at": now} \
        if max(added10, added60) >= 0.5 else None
    view = dict(host, avg10_raw=host["avg10"], avg60_raw=host["avg60"], capped_wait=round(capped_wait, 3),
                capped_psi=carried)
    if host["avg10"] is not None:
        view["avg10"] = round(max(0.0, host["avg10"] - added10), 2)
    if host["avg60"] is not None:
        view["avg60"] = round(max(0.0, host["avg60"] - added60), 2)
    return view


def contain_targets(culprits, need, params):
    """({VM key: the cap a containment sets}, the need left over) for
    culprits given as (excess, vm, wanted, entitlement), biggest excess
    first, and `need` CPUs to free. Each is first cut no lower than what
    fair sharing would give it anyway, max(floor, min(wanted, entitlement)),
    the next one only while need remains; if need remains when all are
    there, they are cut further in the same order, never under their
    floors. A cut under min_change_cpus, or a cap at or above the vCPUs, is
    no action and frees nothing."""
    current = dict((vm["key"], min(want, vm["cap"]) if vm["cap"] is not None else want)
                   for _excess, vm, want, _ent in culprits)
    level = dict(current)
    for fair in (True, False):
        for _excess, vm, want, ent in culprits:
            if need < params["min_change_cpus"]:
                break
            floor = floor_of(vm, params)
            target = max(max(floor, min(want, ent)) if fair else floor, level[vm["key"]] - need)
            if target < level[vm["key"]]:
                need -= level[vm["key"]] - target
                level[vm["key"]] = target
    targets = {}
    for _excess, vm, _want, _ent in culprits:
        key = vm["key"]
        target = min(level[key], vm["cap"]) if vm["cap"] is not None else level[key]
        if current[key] - target < params["min_change_cpus"] or target >= vm["vcpus"]:
            need += current[key] - level[key]
            continue
        targets[key] = target
    return targets, need


def stepped_cap(vm, want, ent, params, surging=False):
    """The cap of a culprit while victims wait although the pool's load fits
    (their wait is latency behind it, which the fluid need does not see):
    first the fair bound max(floor, min(want, entitlement)), then, capped,
    quota_cut_share less each cycle, never under its floor; a surging VM
    whose bound is about what it wants starts with that step. None when the
    step would change less than min_change_cpus or cap nothing."""
    floor = floor_of(vm, params)
    step = 1.0 - params["quota_cut_share"]
    if vm["cap"] is None:
        current, target = want, max(floor, min(want, ent))
        if surging and current - target < params["min_change_cpus"]:
            target = max(floor, current * step)
    else:
        current = min(vm["cap"], want)
        target = max(floor, current * step)
    if current - target < max(params["min_change_cpus"], 1e-6) or target >= vm["vcpus"]:
        return None
    return target


def _weight_in_force(vm, state):
    """Whether the CPU weight the policy demoted a VM to is the one it has."""
    return state.get("weight") is not None and vm["weight"] is not None and abs(vm["weight"] - state["weight"]) < 0.5


def _why_not_cut(vm, want, params):
    """Why contain_targets set no cap on a culprit, in words."""
    floor = floor_of(vm, params)
    current = min(want, vm["cap"]) if vm["cap"] is not None else want
    if current - floor < params["min_change_cpus"]:
        return "it is at its floor of %.2f CPUs" % floor
    return "the others' cuts free what is needed, or its cut would be under min_change_cpus (%g)" \
        % params["min_change_cpus"]


# ---------------------------------------------------------------- the cycle

def decide(hosts, vms, now, params=None, views=False, fleet=None):
    """The plan of one cycle. hosts and vms as host_view/vm_view accept,
    checked here, or (views=True, the simulator's fast path) their views
    already; now in seconds since the epoch; params as parameters() takes
    them. Returns {actions, deferred, held, notes, state: {vms: {key: state
    or None}, nodes: {name: state or None}}} where state lists only objects
    whose state changed (None: clear it). fleet: {nodes, gated}, the
    counts of the whole Kubernetes fleet the share of gated nodes is taken
    of, when it is more than the nodes of the hosts given."""
    params = parameters(params)
    host_views = hosts if views else [host_view(h, i) for i, h in enumerate(hosts)]
    by_host = dict((h["name"], []) for h in host_views)
    for index, vm in enumerate(vms):
        view = vm if views else vm_view(vm, index)
        if view["host"] not in by_host:
            raise ValueRangeError("vms[%d].host" % index, view["host"], "one of the hosts given")
        by_host[view["host"]].append(view)
    cycle = Cycle(params, now)
    for host in host_views:
        cycle.host(host, by_host[host["name"]])
    nodes_total = len([h for h in host_views if h["node"]])
    # Nodes closed to new VMs: a soft gate only steers them away.
    nodes_gated = len([h for h in host_views if h["node"] and h["node"]["gated"] and h["node"]["effect"] == HARD])
    if fleet:
        nodes_total = max(nodes_total, _checked_number("fleet.nodes", fleet.get("nodes")) or 0)
        nodes_gated = max(nodes_gated, _checked_number("fleet.gated", fleet.get("gated")) or 0)
    return cycle.plan(nodes_total, nodes_gated)


class Cycle(object):
    """One cycle's decisions across hosts, then the fleet-wide bounds."""

    def __init__(self, params, now):
        self.params = params
        self.now = now
        self.proposed = []
        self.held = []
        self.notes = []
        self.vm_states = {}
        self.node_states = {}
        # The VMs of the host at hand whose demoted CPU weight is in force.
        self.demoted = set()
        # (VM key, why) a VM of the host at hand would be moved for this cycle.
        self.movable = None
        # Placement: the pool's idle CPU of each host, and VMs to propose moving.
        self.idle_by_host = {}
        self.to_move = []
        # One action per VM a cycle: the first rule to claim it wins.
        self.claimed = {}
        # Culprits of the host at hand judged by their usual demand: VM key -> usual CPUs.
        self.surging = {}

    # -- per host

    def host(self, host, vms):
        params = self.params
        states = {}
        min_steal, trigger_n = params["min_steal_cpus"], params["trigger_n"]
        used_pool, used_outside, stateful, capped_wait = 0.0, 0.0, False, 0.0
        # Calm going into this cycle: the quiet baselines follow the VMs' waits.
        calm_before = not any("1" in vm["state"].get("hist", "") or vm["cap"] is not None
                              or vm["state"].get("weight") is not None for vm in vms)
        for vm in vms:
            if vm["class"] != DEDICATED or vm.get("in_shared_pool"):
                used_pool += vm["used"]
            else:
                used_outside += vm["used"]
            steal = vm["steal"]
            if vm["cap"] is not None or _weight_in_force(vm, vm["state"]):
                # A capped or demoted VM's own wait is the brake's doing.
                capped_wait += steal or 0.0
            # The common case of a fleet, kept cheap: nothing recorded,
            # not capped, not waiting, no usual demand to follow.
            if not vm["state"] and vm["cap"] is None and (steal is None or steal < min_steal) \
                    and vm["pressure"] is None and vm["class"] != BURSTABLE \
                    and (not params["usual_hours"] or vm["class"] == DEDICATED or wanted(vm) < IDLE_CPUS):
                states[vm["key"]] = {}
                continue
            state = states[vm["key"]] = self._carry_state(vm, calm_before, host.get("paused"))
            stateful = stateful or bool(state) or vm["class"] == BURSTABLE
        self.demoted = set(vm["key"] for vm in vms if _weight_in_force(vm, states[vm["key"]]))
        if self.demoted:
            # Entitlements are what a VM was sold: its demoted weight is the
            # brake, not its due.
            vms = [dict(vm, weight=states[vm["key"]].get("weight_was", vm["weight"])) if vm["key"] in self.demoted
                   else vm for vm in vms]
        if host.get("pool_cpus_used") is not None:
            # The pool's own CPUs, read per CPU: what the VMs' sum misses
            # there (the host's own threads on them), and nothing busy elsewhere.
            used_pool = max(used_pool, host["pool_cpus_used"])
        elif host["cpus_used"] is not None:
            # The host's own measure counts what the VMs' sum misses (the
            # host itself, other tenants); the dedicated cores are not the pool's.
            used_pool = max(used_pool, host["cpus_used"] - used_outside)
        pool = shared_pool(host, vms)
        idle = max(0.0, pool - used_pool)
        self.idle_by_host[host["name"]] = (idle, pool)
        host = dict(net_pressure(host, capped_wait, self.now), pool=pool)
        if host["node"] is not None:
            self._gate(host)
        if not stateful:
            return
        self._credits(host, vms, states)
        severe = params["severe_steal_ratio"]
        victims = [vm for vm in vms if vm["cap"] is None and vm["key"] not in self.demoted and (
            states[vm["key"]].get("hist", "").count("1") >= trigger_n
            or states[vm["key"]].get("hist", "").endswith("1") and steal_ratio(vm) >= severe)]
        self.movable = None
        self.surging = {}
        if victims:
            self._contain(host, vms, states, entitlements(host, vms, states), victims, idle)
        self._placement(host, vms, states)
        if any(state.get("cap") is not None for state in states.values()) or self.demoted:
            self._relax(host, vms, states, idle)
        for vm in vms:
            if states[vm["key"]] != vm["state"]:
                self.vm_states[vm["key"]] = states[vm["key"]] or None

    def _carry_state(self, vm, calm_before, host_paused=False):
        """The VM's state with this cycle's trigger bit, its quiet baseline
        followed where the host was calm (no VM waited in the trigger
        history, no brake in force), and without a cap record someone else's
        change made stale."""
        params = self.params
        state = dict(vm["state"])
        if state.get("cap") is not None and (vm["cap"] is None or abs(vm["cap"] - state["cap"]) > 0.005):
            self.notes.append({"object": vm["key"], "rule": "foreign_change",
                               "note": "cap is %s, the policy set %g: someone else changed it; the policy leaves it alone"
                               % ("none" if vm["cap"] is None else "%g" % vm["cap"], state["cap"])})
            for key in CAP_KEYS:
                state.pop(key, None)
            state["foreign"] = True
        elif vm["cap"] is None:
            state.pop("foreign", None)
        if state.get("weight") is not None and not _weight_in_force(vm, state):
            self.notes.append({"object": vm["key"], "rule": "foreign_change",
                               "note": "CPU weight is %s, the policy set %g: someone else changed it; the policy "
                               "leaves the weight alone" % ("unknown" if vm["weight"] is None else "%g" % vm["weight"],
                                                            state["weight"])})
            for key in ("weight", "weight_was", "weight_waits"):
                state.pop(key, None)
        # A braked VM (capped, or its weight demoted) waits by the brake's
        # design: that is no victim's wait.
        braked = vm["cap"] is not None or state.get("weight") is not None
        base = state.get("base", 0.0)
        bit = "1" if not braked and waits(vm, params, params["victim_steal_ratio"], base) else "0"
        if calm_before and bit == "0" and not braked and vm["steal"] is not None:
            base = round((base + BASE_WEIGHT * (steal_ratio(vm) - base)) / BASE_STEP) * BASE_STEP
            if base >= BASE_STEP:
                state["base"] = round(base, 2)
            else:
                state.pop("base", None)
        # The kill switch leaves the object as it is: no usual demand is
        # learnt on a paused VM or host either.
        if params["usual_hours"] and vm["class"] != DEDICATED and vm.get("usage_known", True) \
                and not vm["paused"] and not host_paused and ("usual" in state or wanted(vm) >= IDLE_CPUS):
            follow_usual(state, wanted(vm), self.now, params["usual_hours"], params["surge_ratio"])
        history = (state.get("hist", "") + bit)[-params["trigger_m"]:]
        if "1" in history:
            state["hist"] = history
        else:
            state.pop("hist", None)
        restored_at = state.get("restored_at")
        if restored_at is not None and self.now - restored_at > params["max_cooldown_seconds"]:
            state.pop("restored_at", None)
            state.pop("cooldown", None)
        return state

    def _cap_after(self, vm):
        """The VM's cap once this cycle's actions so far are applied."""
        return self.claimed[vm["key"]] if vm["key"] in self.claimed else vm["cap"]

    def _ours(self, vm, state):
        """Whether the cap in force is the one the policy set."""
        return state.get("cap") is not None and vm["cap"] is not None

    def _propose(self, kind, host, vm, cpus, rule, reason, signals, state=None, priority=0.0):
        action = {"action": kind, "host": host["name"], "rule": rule, "reason": reason, "signals": signals}
        if vm is not None:
            action.update({"vm": vm["name"], "object": vm["key"], "class": vm["class"], "vcpus": vm["vcpus"],
                           "previous_cpus": vm["cap"]})
            if vm.get("platform", LIBVIRT) != LIBVIRT:
                action["platform"] = vm["platform"]
            if cpus is not None:
                action["cpus"] = round(cpus, 3)
            if kind in ("throttle", "relax") and state and state.get("weight") is not None:
                # A throttle sets the whole brake: the demoted weight stays with the cap.
                action["shares"] = state["weight"]
            self.claimed[vm["key"]] = cpus
        else:
            action.update({"node": host["node"]["name"], "object": "node/%s" % host["node"]["name"]})
        paused = host["paused"] or (vm is not None and vm["paused"])
        if paused:
            self.held.append(dict(action, held="kill switch: %s is paused" % ("host %s" % host["name"]
                                                                              if host["paused"] else vm["key"])))
            return None
        self.proposed.append((ACTION_ORDER[kind], -priority, len(self.proposed), action, state))
        return action

    def _gate(self, host):
        """Two tiers: sustained CPU pressure steers new VMs away from the node
        (PreferNoSchedule), severe CPU pressure or memory pressure closes it
        (NoSchedule); a soft gate is hardened when pressure gets severe, and
        either opens once calm."""
        params, now = self.params, self.now
        node = host["node"]
        avg10, avg60, memory = host["avg10"], host["avg60"], host.get("memory_full60")
        state = dict(node["policy"])
        capped_psi = host.get("capped_psi")
        signals = {"pressure_some_avg10": avg10, "pressure_some_avg60": avg60,
                   "procs_running": host["procs_running"]}
        if capped_psi or host.get("capped_wait"):
            # What the host's PSI said before the caps' own share was taken out.
            signals.update(pressure_some_avg10_raw=host["avg10_raw"], pressure_some_avg60_raw=host["avg60_raw"],
                           capped_wait_cpus=host["capped_wait"])
        if memory is not None:
            signals["memory_full_avg60"] = memory
        # What the caps add to the pressure averages, carried to the next cycle.
        carried = {"capped_psi": capped_psi} if capped_psi else {}
        state.pop("capped_psi", None)
        state.update(carried)
        if (avg10 is None or avg60 is None) and memory is None:
            self._keep_node_state(node, state)
            return
        tier = self._gate_tier(avg10, avg60, memory)
        if not node["gated"]:
            opened_at = state.get("opened_at")
            state = dict(carried)
            if opened_at is not None and now - opened_at < params["gate_hold_seconds"]:
                # A node the policy opened stays open as long as a gate is held
                # closed, unless pressure turns severe: steering new VMs away
                # and back every few minutes helps no scheduler.
                state["opened_at"] = opened_at
                if tier is not None and tier[1] == SOFT:
                    self.notes.append({"object": "node/%s" % node["name"], "rule": "open_hold",
                                       "note": "%s; opened %d s ago, it stays open for gate_hold_seconds (%d s) "
                                       "unless pressure turns severe" % (tier[2], now - opened_at,
                                                                         params["gate_hold_seconds"])})
                    tier = None
            if tier is not None:
                self._propose_gate(host, tier, signals, dict(carried, gated_at=now))
        elif state.get("gated_at") is not None:
            if tier is not None and tier[1] == HARD and node["effect"] == SOFT:
                self._propose_gate(host, tier, signals, dict(state))
                return
            calm = avg60 is not None and avg10 is not None and avg60 <= params["open_pressure"] \
                and avg10 <= params["open_pressure"] and (memory is None or memory < params["memory_gate_pressure"])
            if not calm:
                state.pop("calm_since", None)
            else:
                state.setdefault("calm_since", now)
                held_for, calm_for = now - state["gated_at"], now - state["calm_since"]
                if held_for >= params["gate_hold_seconds"] and calm_for >= params["open_calm_seconds"]:
                    self._propose("open", host, None, None, "open_calm",
                                  "CPU pressure %.1f %% (avg60) under %g %% for %d s, gated for %d s"
                                  % (avg60, params["open_pressure"], calm_for, held_for), signals,
                                  state=dict(carried, opened_at=now))
        self._keep_node_state(node, state)

    def _keep_node_state(self, node, state):
        if state != node["policy"]:
            self.node_states[node["name"]] = state or None

    def _gate_tier(self, avg10, avg60, memory):
        """(rule, taint effect, why) of the gate the pressures call for, or None."""
        params = self.params
        if memory is not None and memory >= params["memory_gate_pressure"]:
            return ("gate_memory", HARD, "memory pressure (full) %.1f %% (avg60) is at or above %g %%: closed to new "
                    "VMs, which no brake could make room for" % (memory, params["memory_gate_pressure"]))
        if avg10 is None or avg60 is None:
            return None
        for rule, effect, level, what in (("gate_severe", HARD, params["severe_gate_pressure"], "closed to new VMs"),
                                          ("gate_pressure", SOFT, params["gate_pressure"], "new VMs steered away")):
            if avg60 >= level and avg10 >= level:
                return (rule, effect, "CPU pressure %.1f %% (avg60) and %.1f %% (avg10) is at or above %g %%: %s "
                        "until it is calm" % (avg60, avg10, level, what))
        return None

    def _propose_gate(self, host, tier, signals, state):
        rule, effect, why = tier
        action = self._propose("gate", host, None, None, rule, why, signals,
                               state=dict(state, rule=rule, effect=effect),
                               priority=(host["avg60"] or 0.0) + (100.0 if effect == HARD else 0.0))
        if action is not None:
            action["effect"] = effect
        else:
            self.held[-1]["effect"] = effect

    def _credits(self, host, vms, states):
        """Credit accounting of the burstable VMs, and the caps it calls for."""
        params, now = self.params, self.now
        for vm in vms:
            if vm["class"] != BURSTABLE:
                continue
            state = states[vm["key"]]
            baseline = vm["baseline"]
            balance = state.get("credits")
            if balance is None:
                balance = vm["credits"] if vm["credits"] is not None else \
                    credit_rules.bank_cap(baseline) * params["initial_credit_share"]
            else:
                balance = credit_rules.accrue(balance, baseline, vm["used"], now - state.get("credits_at", now))
            state["credits"] = credit_rules.stored(balance)
            state["credits_at"] = now
            signals = {"credits": state["credits"], "baseline_cpus": baseline, "cpus_used": vm["used"]}
            release = credit_rules.release_level(baseline, vm["vcpus"], params["credit_release_minutes"])
            ours = self._ours(vm, state)
            if balance <= 0 and (vm["cap"] is None and not state.get("foreign") or ours and vm["cap"] > baseline + 1e-6):
                self._propose("throttle", host, vm, baseline, "credits_exhausted",
                              "burstable VM has no CPU credits left: held to its baseline of %g CPUs" % baseline,
                              signals, state=self._capped(state, baseline, "credits_exhausted"), priority=1.0)
            elif ours and state.get("rule") == "credits_exhausted" and balance >= release:
                self._propose("restore", host, vm, None, "credits_earned",
                              "burstable VM earned %.1f credits (%g needed to burst again)" % (balance, release),
                              signals, state=self._restored(state))

    def _contain(self, host, vms, states, ents, victims, idle):
        params = self.params
        cpus = host["pool"]
        names = [v["name"] for v in victims]
        signals = {"victims": names, "idle_cpus": round(idle, 3), "host_cpus": host["cpus"], "shared_cpus": cpus,
                   "pressure_some_avg10": host["avg10"], "procs_running": host["procs_running"]}
        if idle >= params["idle_guard_share"] * cpus:
            self.notes.append({"object": host["name"], "rule": "work_conservation",
                               "note": "%s wait for CPU but %.2f of the %g CPUs of the shared pool are idle: nothing "
                               "throttled" % (", ".join(names), idle, cpus)})
            return
        candidates = []
        for vm in vms:
            state = states[vm["key"]]
            if vm["class"] == DEDICATED or vm["key"] in self.claimed:
                continue
            if vm["cap"] is not None and not self._ours(vm, state):
                continue
            want, ent = wanted(vm), ents[vm["key"]]
            usual = trusted_usual(state, self.now, params)
            if is_culprit(vm, want, ent, params, usual, trusted_usual(state, self.now, params, settled=True)):
                if surges(want, usual, params):
                    # Judged by its own history: its fair bound is what it
                    # may want without surging, if that is under its due.
                    self.surging[vm["key"]] = (usual, ent)
                    ent = min(ent, params["surge_ratio"] * usual)
                candidates.append((want - ent, vm, want, ent))
        candidates.sort(key=lambda item: (-item[0], item[1]["key"]))
        # The biggest culprit and those whose excess is comparable to it are
        # peers: a waiting peer is no victim. Only victims outside them
        # justify a cut.
        peers = set(item[1]["key"] for item in candidates if item[0] >= params["culprit_peer_share"] * candidates[0][0]) \
            if candidates else set()
        if not candidates or not [v for v in victims if v["key"] not in peers]:
            self.notes.append({"object": host["name"], "rule": "contain",
                               "note": "%s wait for CPU but no other VM wants %g x its entitlement or runs flat out: "
                               "nothing throttled" % (", ".join(names), params["culprit_ratio"])})
            waiting = [v for v in victims if v["class"] != DEDICATED]
            if not candidates and waiting:
                # Overload with no culprit: no brake is fair; the answer is
                # fewer VMs here (the gate) or one moved away.
                biggest = max(waiting, key=lambda v: (wanted(v), v["key"]))
                load = sum(wanted(vm) for vm in pool_vms(vms))
                self.movable = (biggest["key"], "its host is overloaded with no culprit: the pool's VMs want %.2f of "
                                "%g CPUs" % (load, cpus))
            return
        # Culprits that may be braked, biggest excess first: the peers, then
        # smaller culprits that do not wait themselves (a victim that also
        # takes more than its share is what the containment is for, not what
        # pays for it).
        victim_keys = set(v["key"] for v in victims)
        cut = [item for item in candidates if item[1]["key"] in peers or item[1]["key"] not in victim_keys]
        biggest = candidates[0][0]
        for excess, vm, want, ent in candidates:
            if vm["key"] not in peers and vm["key"] in victim_keys:
                self.notes.append({"object": vm["key"], "rule": "contain",
                                   "note": "a culprit (wants %.2f CPUs, entitled to %.2f) that waits itself, with "
                                   "%d %% of the biggest culprit's excess (under culprit_peer_share %g): left alone"
                                   % (want, ent, int(100 * excess / biggest), params["culprit_peer_share"])})
        # The reasons name the VMs a brake is for: the peers' own wait is theirs.
        names = [v["name"] for v in victims if v["key"] not in peers]
        signals["victims"] = names
        waiting_now = [v["name"] for v in victims
                       if v["key"] not in peers and states[v["key"]].get("hist", "").endswith("1")]
        cut = self._weigh(host, vms, states, cut, signals, names, waiting_now)
        if not cut:
            return
        load = sum(min(wanted(vm), self._cap_after(vm)) if self._cap_after(vm) is not None else wanted(vm)
                   for vm in pool_vms(vms))
        need = load - cpus * (1.0 - params["headroom_share"])
        culprit_names = ", ".join(item[1]["name"] for item in cut)
        stepped = {}
        if need >= params["min_change_cpus"]:
            targets, need = contain_targets(cut, need, params)
        else:
            # The pool's load fits, yet victims wait: a waking victim queues
            # behind a runnable culprit, which the fluid need cannot see.
            targets = stepped = self._steps(cut, idle, cpus) if waiting_now else {}
            need = 0.0
            if not targets:
                if not waiting_now:
                    why = "no victim waits this cycle"
                elif not params["quota_cut_share"]:
                    why = "quota_cut_share is 0, a cap answers only the fluid need"
                elif idle + params["min_change_cpus"] > params["idle_guard_share"] * cpus:
                    why = "%.2f CPUs of the pool are idle already, near the idle guard's %.2f" % (
                        idle, params["idle_guard_share"] * cpus)
                elif all(min(want, vm["cap"] if vm["cap"] is not None else want) - floor_of(vm, params)
                         < params["min_change_cpus"] for _excess, vm, want, _ent in cut if vm["key"] not in self.claimed):
                    why = "every culprit is at its floor or braked this cycle"
                else:
                    why = "no culprit's step changes its cap by min_change_cpus (%g)" % params["min_change_cpus"]
                self.notes.append({"object": host["name"], "rule": "contain",
                                   "note": "%s wait for CPU beside culprits (%s) while the pool's load (%.2f of %g "
                                   "CPUs less headroom) fits: %s; nothing throttled" % (
                                       ", ".join(names), culprit_names, load, cpus, why)})
                if why.startswith("every culprit"):
                    self.movable = (cut[0][1]["key"], "victims wait with every culprit at its floor while the "
                                    "pool's load fits")
                return
        for _excess, vm, want, ent in cut:
            if vm["key"] not in targets:
                if vm["key"] not in self.claimed:
                    self.notes.append({"object": vm["key"], "rule": "contain",
                                       "note": "a culprit (wants %.2f CPUs, entitled to %.2f) left as it is: %s"
                                       % (want, ent, _why_not_cut(vm, want, params))})
                continue
            target = targets[vm["key"]]
            above = self._above(vm, want, ent)
            if vm["key"] in stepped and vm["cap"] is not None:
                how = "victims still wait with it capped at %.2f: cap cut by %d %% to %.2f CPUs" % (
                    vm["cap"], int(round(100 * (1.0 - target / vm["cap"]))), target)
            elif vm["key"] in stepped:
                how = "victims wait although the pool's load (%.2f of %g CPUs) fits: capped to %.2f CPUs" % (
                    load, cpus, target)
            else:
                how = "capped to %.2f CPUs" % target
            reason = "%s wait for CPU; %s wants %.2f CPUs, %s: %s" % (", ".join(names), vm["name"], want, above, how)
            vm_signals = dict(signals, cpus_used=vm["used"], steal_cpus=vm["steal"], wanted_cpus=round(want, 3),
                              entitled_cpus=round(ent, 3), floor_cpus=round(floor_of(vm, params), 3))
            if vm["key"] in self.surging:
                usual, entitled = self.surging[vm["key"]]
                vm_signals.update(entitled_cpus=round(entitled, 3), usual_cpus=usual, surge_bound_cpus=round(ent, 3))
            self._propose("throttle", host, vm, target, "contain", reason, vm_signals,
                          state=self._capped(states[vm["key"]], target, "contain"), priority=want - ent)
        if need >= params["min_change_cpus"]:
            self.notes.append({"object": host["name"], "rule": "contain",
                               "note": "culprits at their floors: %.2f CPUs of contention remain" % need})
            _excess, vm, want, _ent = cut[0]
            self.movable = (vm["key"], "victims wait with every culprit at its floor: %.2f CPUs of contention remain "
                            "on its host" % need)

    def _above(self, vm, want, ent):
        """Why a culprit is one, in words: its usual demand or its entitlement."""
        if vm["key"] in self.surging:
            usual = self.surging[vm["key"]][0]
            return "%.1fx its usual demand of %.2f" % (want / usual, usual) if usual else \
                "where it usually wants nothing"
        return "%.1fx its entitlement of %.2f" % (want / ent, ent) if ent else "with no entitlement under contention"

    def _steps(self, cut, idle, cpus):
        """{VM key: cap} of the stepwise quota (stepped_cap) for the cut's
        culprits not acted on this cycle; the steps together leave at most
        idle_guard_share of the pool idle, the line under which a cut is
        allowed at all."""
        params = self.params
        targets = {}
        if not params["quota_cut_share"]:
            return targets
        budget = params["idle_guard_share"] * cpus - idle
        for _excess, vm, want, ent in cut:
            target = stepped_cap(vm, want, ent, params, vm["key"] in self.surging) \
                if vm["key"] not in self.claimed else None
            if target is None:
                continue
            current = min(want, vm["cap"]) if vm["cap"] is not None else want
            target = max(target, current - budget)
            if current - target >= max(params["min_change_cpus"], 1e-6):
                budget -= current - target
                targets[vm["key"]] = target
        return targets

    def _placement(self, host, vms, states):
        """Counts, in the VM's state, the cycles in a row this host would have
        a VM moved away for; at placement_cycles it is proposed (where to is
        decided once every host's idle CPU is known, in plan())."""
        movable, why = self.movable or (None, None)
        for vm in vms:
            state = states[vm["key"]]
            if vm["key"] != movable:
                state.pop("placement_waits", None)
                continue
            count = state["placement_waits"] = state.get("placement_waits", 0) + 1
            for _order, _priority, _seq, action, acted_state in self.proposed:
                # A VM acted on this cycle (capped to its floor) keeps the count in the state its action stores.
                if action.get("object") == vm["key"] and acted_state is not None:
                    acted_state["placement_waits"] = count
            if count >= self.params["placement_cycles"]:
                self.to_move.append((vm, host, "%s, %d cycles in a row" % (why, count)))

    def _weigh(self, host, vms, states, cut, signals, names, waiting_now):
        """The first rung: demote the CPU weight of the culprits not braked
        yet, so that a victim that wakes runs before them; the cut list's
        culprits that go on to the quota rung: those already capped, those
        whose demoted weight left victims waiting for weight_cycles cycles,
        and those no weight can brake (said in the notes)."""
        params = self.params
        if not params["weight_cycles"]:
            return cut
        pool = pool_vms(vms)
        unknown = [vm["name"] for vm in pool if vm["weight"] is None]
        quota = []
        for item in cut:
            _excess, vm, want, ent = item
            state = states[vm["key"]]
            if vm["cap"] is not None or vm["key"] in self.claimed:
                quota.append(item)
                continue
            if vm["key"] in self.demoted:
                if waiting_now:
                    state["weight_waits"] = state.get("weight_waits", 0) + 1
                if state.get("weight_waits", 0) >= params["weight_cycles"]:
                    quota.append(item)
                else:
                    self.notes.append({"object": vm["key"], "rule": "contain",
                                       "note": "CPU weight demoted to %g: %s; the quota rung waits %d cycle(s) "
                                       "in which victims still wait" % (
                                           state["weight"], "%s still wait" % ", ".join(waiting_now) if waiting_now
                                           else "no victim waits this cycle", params["weight_cycles"])})
                continue
            floor = floor_of(vm, params)
            weight = None
            if vm.get("platform", LIBVIRT) != LIBVIRT:
                why = "its platform's runner sets no CPU weight"
            elif unknown:
                why = "the CPU weight of %s was not read" % ", ".join(unknown)
            else:
                others = sum(other["weight"] for other in pool if other["key"] != vm["key"])
                weight = demoted_weight(floor, host["pool"], others)
                why = "no weight under %g keeps its floor of %.2f CPUs with every other VM busy" % (
                    WEIGHT_STEP_SHARE * vm["weight"], floor)
                if weight is not None and weight > WEIGHT_STEP_SHARE * vm["weight"]:
                    weight = None
            if weight is None:
                self.notes.append({"object": vm["key"], "rule": "contain",
                                   "note": "CPU weight not demoted (%s): the quota rung instead" % why})
                quota.append(item)
                continue
            above = self._above(vm, want, ent)
            reason = ("%s wait for CPU; %s wants %.2f CPUs, %s: CPU weight demoted from %g to %d (with every VM "
                      "busy it still gets its floor of %.2f CPUs)" % (", ".join(names), vm["name"], want, above,
                                                                      vm["weight"], weight, floor))
            vm_signals = dict(signals, cpus_used=vm["used"], steal_cpus=vm["steal"], wanted_cpus=round(want, 3),
                              entitled_cpus=round(ent, 3), floor_cpus=round(floor, 3), weight=vm["weight"])
            action = self._propose("weight", host, vm, None, "contain", reason, vm_signals,
                                   state=self._weighted(state, weight, vm["weight"]), priority=want - ent)
            (action if action is not None else self.held[-1]).update(shares=weight, previous_shares=vm["weight"])
        return quota

    def _release_weight(self, host, vm, state, ents):
        """A demoted weight with no cap is let go, exactly, once the VM was no
        culprit in trigger_n of the last trigger_m cycles (a weight wastes no
        idle CPU, so it stays as long as the VM is one)."""
        params = self.params
        want = wanted(vm)
        released = (state.get("released", "") + ("0" if is_culprit(
            vm, want, ents[vm["key"]], params, trusted_usual(state, self.now, params),
            trusted_usual(state, self.now, params, settled=True)) else "1"))[-params["trigger_m"]:]
        state["released"] = released
        if vm["key"] in self.claimed or released.count("1") < params["trigger_n"]:
            return
        if self._flapping(state) and self.now - state.get("changed_at", self.now) < state["cooldown"]:
            return
        self._propose("restore", host, vm, None, "release",
                      "no longer a culprit in %d of the last %d cycles (wants %.2f CPUs): CPU weight restored exactly"
                      % (released.count("1"), len(released), want),
                      {"cpus_used": vm["used"], "wanted_cpus": round(want, 3), "weight": vm["weight"],
                       "demoted_weight": state["weight"]}, state=self._restored(state))

    def _relax(self, host, vms, states, idle):
        params, now = self.params, self.now
        calm = not any(vm["cap"] is None and vm["key"] not in self.demoted
                       and waits(vm, params, params["relax_steal_ratio"], states[vm["key"]].get("base", 0.0))
                       for vm in vms) and \
            (host["avg10"] is None or host["avg10"] < params["pressure_relax"])
        room, grown = idle - params["headroom_share"] * host["pool"], 0.0
        ents = None
        for vm in sorted(vms, key=lambda v: v["key"]):
            state = states[vm["key"]]
            if vm["cap"] is None and vm["key"] in self.demoted:
                ents = ents or entitlements(host, vms, states)
                self._release_weight(host, vm, state, ents)
                continue
            if not self._ours(vm, state) or state.get("rule") != "contain":
                continue
            want = wanted(vm)
            ents = ents or entitlements(host, vms, states)
            culprit = is_culprit(vm, want, ents[vm["key"]], params, trusted_usual(state, now, params),
                                 trusted_usual(state, now, params, settled=True))
            # A dip under the culprit thresholds is no release while the VM
            # still presses its cap and wants more than its entitlement.
            lingering = want >= params["busy_share"] * vm["cap"] and \
                want - ents[vm["key"]] >= params["culprit_min_excess_cpus"]
            # Whether it was a culprit in each of the last trigger_m cycles
            # ("1": it was not), the same N of M a victim needs.
            holding = culprit or lingering
            released = (state.get("released", "") + ("0" if holding else "1"))[-params["trigger_m"]:]
            state["released"] = released
            # The pool's idle CPU in each of the last trigger_m cycles: a
            # culprit still pressing its cap grows only into CPU that stayed
            # idle, not into a victim's passing lull.
            idle_seen = (state.get("idle_seen", []) + [round(idle, 3)])[-params["trigger_m"]:]
            state["idle_seen"] = idle_seen
            if vm["key"] in self.claimed:
                continue
            # On a calm host every cap may be relaxed; on a contended one only
            # those of VMs that are no culprits now.
            innocent = not calm and not holding
            if not calm and holding:
                # A contended host keeps its culprits capped; a VM that no
                # longer is one gets its CPU back, step by step, all the same.
                state.pop("calm_since", None)
                continue
            cap, step = vm["cap"], params["relax_step_share"] * vm["vcpus"]
            state.setdefault("calm_since", now)
            calm_for = now - state["calm_since"]
            signals = {"cpus_used": vm["used"], "wanted_cpus": round(want, 3), "cap_cpus": cap,
                       "idle_cpus": round(idle, 3), "calm_seconds": calm_for}
            if released.count("1") >= params["trigger_n"] and not self._flapping(state):
                # No culprit in N of the last M cycles: let go now, without the
                # calm period and cooldown meant for flapping caps. A cap it no
                # longer presses holds nothing back and goes whole.
                if want < params["busy_share"] * cap:
                    self._propose("restore", host, vm, None, "release",
                                  "no longer a culprit in %d of the last %d cycles and it uses %.2f of its %g CPUs: "
                                  "restored exactly" % (released.count("1"), len(released), vm["used"], cap),
                                  signals, state=self._restored(state))
                else:
                    self._step_up(host, vm, state, signals, cap + step, "release",
                                  "no longer a culprit in %d of the last %d cycles" % (released.count("1"),
                                                                                       len(released)),
                                  "it wants %.2f CPUs" % want)
                continue
            since_change = now - state.get("changed_at", now)
            cooldown = state.get("cooldown", params["cooldown_seconds"])
            if calm_for < params["relax_calm_seconds"] or (state.get("direction") == TIGHTEN and since_change < cooldown):
                continue
            if innocent:
                new_cap, why = cap + step, "it no longer takes far above its entitlement (wants %.2f CPUs)" % want
                context = "host still contended for %d s" % calm_for
            elif want < params["busy_share"] * cap:
                new_cap, why = cap + step, "it uses %.2f of its %g CPUs" % (vm["used"], cap)
                context = "host calm for %d s" % calm_for
            else:
                # A whole step or nothing, and only while the pool keeps the
                # idle CPU at which the work-conservation guard would not let
                # it be capped (idle_guard_share) in each of the last trigger_m
                # cycles: grown into less, it takes the others' CPU when their
                # lull ends, or makes them queue, and is cut again: a flap.
                guard = params["idle_guard_share"] * host["pool"]
                if len(idle_seen) < params["trigger_m"] or min(room, min(idle_seen) - guard - grown) < step:
                    continue
                room -= step
                grown += step
                new_cap = cap + step
                why = "it presses its cap and at least %.2f CPUs were idle in each of the last %d cycles" % (
                    min(idle_seen), len(idle_seen))
                context = "host calm for %d s" % calm_for
            self._step_up(host, vm, state, signals, new_cap, "relax", context, why)

    def _step_up(self, host, vm, state, signals, new_cap, rule, context, why):
        """Raise a cap of ours to `new_cap`: the exact restore once that
        reaches the VM's vCPUs."""
        if new_cap >= vm["vcpus"] - 1e-9:
            self._propose("restore", host, vm, None, "restore" if rule == "relax" else rule,
                          "%s and %s: restored exactly" % (context, why), signals, state=self._restored(state))
        else:
            self._propose("relax", host, vm, new_cap, rule,
                          "%s and %s: cap raised one step to %.2f CPUs" % (context, why, new_cap),
                          signals, state=self._loosened(state, new_cap))

    def _flapping(self, state):
        """Whether the cap was tightened again after being let go, recently
        enough that its cooldown is still doubled."""
        return state.get("cooldown", self.params["cooldown_seconds"]) > self.params["cooldown_seconds"]

    # -- state transitions of a VM's cap

    def _capped(self, state, cpus, rule):
        return self._tightened(dict(state, cap=round(cpus, 3)), rule)

    def _weighted(self, state, weight, was):
        new = dict(state, weight=weight, weight_was=was)
        new.pop("weight_waits", None)
        return self._tightened(new, "contain")

    def _tightened(self, state, rule):
        params, now = self.params, self.now
        new = dict(state, rule=rule, changed_at=now)
        new.setdefault("capped_at", now)
        new.pop("calm_since", None)
        new.pop("released", None)
        new.pop("foreign", None)
        if state.get("direction") == LOOSEN or state.get("restored_at") is not None:
            # Tightening again soon after letting go: a reversal. Wait longer
            # before the next relax, so a cap does not flap.
            new["cooldown"] = min(params["max_cooldown_seconds"],
                                  2 * state.get("cooldown", params["cooldown_seconds"]))
            new["last_reversal"] = now
        new.pop("restored_at", None)
        new["direction"] = TIGHTEN
        return new

    def _loosened(self, state, cpus):
        return dict(state, cap=round(cpus, 3), changed_at=self.now, direction=LOOSEN)

    def _restored(self, state):
        new = dict((k, v) for k, v in state.items() if k not in CAP_KEYS)
        new["restored_at"] = self.now
        return new

    # -- fleet-wide bounds

    def plan(self, nodes_total, nodes_gated):
        params = self.params
        actions, deferred = [], []
        gate_slots = int(params["max_gated_share"] * nodes_total + 1e-9) - nodes_gated
        budget = params["max_actions_per_cycle"]
        for _order, _priority, _seq, action, state in sorted(self.proposed, key=lambda item: item[:3]):
            if action["action"] == "gate" and action.get("effect") == HARD:
                # Only a hard gate closes a node; a soft one only steers new VMs away.
                if gate_slots <= 0:
                    deferred.append(dict(action, deferred="max_gated_share=%g allows %d of %d nodes gated at once "
                                         "and %d are" % (params["max_gated_share"],
                                                         int(params["max_gated_share"] * nodes_total + 1e-9),
                                                         nodes_total, nodes_gated)))
                    self.node_states.pop(action["node"], None)
                    continue
                gate_slots -= 1
            if budget <= 0:
                deferred.append(dict(action, deferred="max_actions_per_cycle=%d reached"
                                     % params["max_actions_per_cycle"]))
                if "vm" not in action:
                    self.node_states.pop(action["node"], None)
                continue
            budget -= 1
            actions.append(action)
            if "vm" in action:
                self.vm_states[action["object"]] = state or None
            else:
                self.node_states[action["node"]] = state or None
        return {"policy": NAME, "time": self.now, "actions": actions, "deferred": deferred, "held": self.held,
                "notes": self.notes, "proposals": self.proposals(),
                "state": {"vms": self.vm_states, "nodes": self.node_states}}

    def proposals(self):
        """Moves to propose: each VM to the other host of the cycle with the
        most CPU left of its pool once the VM is there and the target keeps
        its own headroom; else no host, said so. A person (or a migration
        playbook) decides."""
        idle = dict(self.idle_by_host)
        headroom = self.params["headroom_share"]
        out = []
        for vm, host, why in sorted(self.to_move, key=lambda item: -wanted(item[0])):
            want = wanted(vm)
            # What each other host has left, its own headroom kept, once the VM runs there.
            left = sorted((room - headroom * pool - want, name) for name, (room, pool) in idle.items()
                          if name != host["name"])
            proposal = {"action": "move", "object": vm["key"], "vm": vm["name"], "host": host["name"],
                        "wanted_cpus": round(want, 3), "why": why, "to": None}
            if left and left[-1][0] >= 0.0:
                name = left[-1][1]
                room, pool = idle[name]
                idle[name] = (room - want, pool)
                proposal.update(to=name, reason="%s; %s has %.2f CPUs idle for the %.2f it wants" % (
                    why, name, room, want))
            elif left:
                room, pool = idle[left[-1][1]]
                proposal["reason"] = "%s; no other host of this cycle has %.2f CPUs idle beside its headroom " \
                    "(the most: %.2f on %s, headroom %.2f)" % (why, want, room, left[-1][1], headroom * pool)
            else:
                proposal["reason"] = "%s; no other host in this cycle to move it to" % why
            out.append(proposal)
        return out
