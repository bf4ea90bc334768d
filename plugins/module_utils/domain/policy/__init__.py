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

The package: views.py checks the input; judgement.py says who waits, who is
a culprit and what each VM is due; rules/ holds one file per rule with its
parameters (rules.RULES is their order); cycle.py runs them on each host
and applies the fleet-wide bounds; parameters.py gathers every parameter.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.cycle import (
    ACTION_ORDER, ACTIONS, Cycle, decide)
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.judgement import (
    BUSY_AS_USUAL, IDLE_CPUS, MIN_WEIGHT, USUAL_SAMPLE_SECONDS, USUAL_STEP, USUAL_TRUST_SECONDS, WEIGHT_STEP_SHARE,
    demoted_weight, entitlements, floor_of, follow_usual, is_culprit, own_wait_share, pool_vms, shared_pool,
    surges, trusted_usual, unbraked_pressure, waits, weights)
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.parameters import (
    INTEGER_PARAMETERS, NAME, PARAMETERS, parameters)
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.rules.contain import (
    contain_targets, stepped_cap)
from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.views import (
    GATE_EFFECTS, HARD, KUBEVIRT, LIBVIRT, PLATFORMS, SOFT, host_view, steal_ratio, vm_key, vm_view, wanted)
