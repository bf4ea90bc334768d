# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who waits, who is a culprit and what each VM is due: the usual demand,
the shared pool and entitlements, the weights, the pressure the brakes
made; the rules ask these. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.views import steal_ratio, wanted
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import BURSTABLE, DEDICATED


# The least CPU weight the policy demotes to: libvirt's cpu_shares take
# 2..262144 (cgroup v1) and a cgroup v2 cpu.weight 1..10000.
MIN_WEIGHT = 2

# A demotion that leaves the culprit more than this share of its weight
# changes too little to shorten anyone's wait: the quota rung comes next.
WEIGHT_STEP_SHARE = 0.5

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
    return want - ent >= params["culprit_min_excess_cpus"] and (
        want >= params["culprit_ratio"] * ent or flat_out(vm, want, params, settled))


# A VM judged a culprit by culprit_ratio alone (neither flat out nor
# surging) must also use more than its entitlement, by this share of it (and
# by at least IDLE_CPUS): one that uses no more than its due but waits its
# way to a big want takes nothing from the others; it is one of many waiting
# in an overload (a light guest waiting at each timer tick looks, by its want,
# like one three times its due).
OVER_DUE_SHARE = 0.2


def flat_out(vm, want, params, settled=None):
    """Whether a VM wanting `want` CPUs runs flat out: culprit_busy_share of
    its vCPUs, unless that is its settled usual level."""
    return want >= params["culprit_busy_share"] * vm["vcpus"] and (settled is None or want >= BUSY_AS_USUAL * settled)


def takes_no_more_than_its_due(vm, want, ent, params, usual=None, settled=None):
    """Whether a culprit judged by culprit_ratio alone (not flat out, not
    surging) uses no more than its entitlement `ent` (OVER_DUE_SHARE of it
    over): its want is mostly the time it waited, as in an overload where
    every VM waits; no brake on it gives anyone CPU it took."""
    if surges(want, usual, params) or flat_out(vm, want, params, settled):
        return False
    return vm["used"] - ent < max(IDLE_CPUS, OVER_DUE_SHARE * ent)


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


def own_wait_share(vm):
    """The share of wall time (%) a VM waited for CPU: its own cgroup's PSI
    cpu some where the runner read it (cgroup v2), else its vCPU threads'
    run-queue delay in CPUs, at most one (exact for one vCPU; for more, the
    most PSI some could be); None when neither was read."""
    if vm["pressure"] is not None:
        return vm["pressure"]
    if vm["steal"] is not None:
        return 100.0 * min(1.0, vm["steal"])
    return None


# After the last brake went off, the unbraked VMs' wait stands for the
# host's avg60 until the kernel's own avg60 is back within BRAKE_MEMORY_MARGIN
# points of it (the brake's wait has left its average), and at most
# BRAKE_MEMORY_SECONDS: a minute's average holds e^-5 of a wait five
# minutes gone.
BRAKE_MEMORY_SECONDS = 300

BRAKE_MEMORY_MARGIN = 1.0


def unbraked_pressure(host, vms, braked, now):
    """The host's CPU pressure as the gate and the calm test read it: the
    host's PSI as read while no VM is braked (capped, or its weight
    demoted); while one is, the pressure the unbraked VMs feel. A braked
    VM's runnable vCPUs wait out each throttled period (a cap) or yield to
    the others (a weight), and the kernel counts that as the host's CPU
    pressure (measured on cgroup v1: one guest capped to 0.1 CPU with
    nothing else busy, host PSI some avg10 about 73 %, docs/policy.md). PSI
    `some` of the host is at least that of any of its members, so the most
    any unbraked VM waited (own_wait_share; dedicated VMs included) is the
    host's pressure with the brakes' own wait left out, never more than the
    host read: a victim's own wait stays whole while any brake is on, and
    pressure from outside the VMs (the host's own threads) goes unseen then.
    avg60 is that wait averaged as the kernel averages, carried between
    cycles in the node's state (`unbraked_psi`; with none carried, as if this
    cycle's waits had always been), and after the last brake went off still
    read until the kernel's avg60 no longer holds the brake's wait (see
    BRAKE_MEMORY_SECONDS). With no wait read of any unbraked VM (no usage
    read), the host's own figures: no reading is no calm. `braked`: the keys
    of the VMs whose brake binds (it makes them wait). Raw figures are kept
    for the signals."""
    view = dict(host, avg10_raw=host["avg10"], avg60_raw=host["avg60"], braked_vms=len(braked), unbraked_psi=None)
    node = host.get("node")
    kept = (node.get("policy") or {}).get("unbraked_psi") if node is not None else None
    if not isinstance(kept, dict) or kept.get("at") is None or kept.get("avg60") is None:
        kept = None
    braked_at = now if braked else (kept or {}).get("braked_at")
    if host["avg10"] is None or braked_at is None or now - braked_at > BRAKE_MEMORY_SECONDS:
        return view
    shares = [share for share in (own_wait_share(vm) for vm in vms if vm["key"] not in braked) if share is not None]
    if not shares and any(vm["key"] not in braked for vm in vms):
        return view
    felt = max(shares or [0.0])
    if not braked and kept is not None and host["avg60"] is not None \
            and host["avg60"] <= kept["avg60"] + BRAKE_MEMORY_MARGIN:
        # The brake's wait has left the kernel's average: its own figures again.
        return view
    if kept is not None:
        decay60 = math.exp(-max(0.0, now - kept["at"]) / 60.0)
        felt60 = kept["avg60"] * decay60 + felt * (1.0 - decay60)
    else:
        # No history: as if the waits of this cycle had always been.
        felt60 = felt
    view["avg10"] = round(min(host["avg10"], felt), 2)
    if host["avg60"] is not None:
        view["avg60"] = round(min(host["avg60"], felt60), 2)
    view["unbraked_psi"] = {"avg60": round(felt60, 2), "at": now, "braked_at": braked_at}
    return view


def weight_in_force(vm, state):
    """Whether the CPU weight the policy demoted a VM to is the one it has."""
    return state.get("weight") is not None and vm["weight"] is not None and abs(vm["weight"] - state["weight"]) < 0.5
