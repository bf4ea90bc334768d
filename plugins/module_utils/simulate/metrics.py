# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the simulator measures of a policy on a trace. Pure: no I/O.
docs/policy.md defines each metric; the names are the module's return
values and the keys of simulation.json."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

METRICS = (
    "containment_p50_intervals", "containment_p95_intervals", "containment_p99_intervals",
    "culprit_precision", "throttled_cpu_seconds", "reversals_per_vm_per_10min", "dedicated_touched",
    "idle_cpu_while_throttled", "gate_toggles_per_node_hour", "credit_error", "throttled_share_without_culprit",
    "overload_steal_cpu_seconds", "contention_throttled_cpu_seconds", "culprit_recall",
)
# Product caps (a burstable VM held to its baseline) are what the tenant
# bought, not a guess about who is noisy: precision and work conservation
# judge the contention caps only.
PRODUCT_RULES = ("credits_exhausted",)
# What makes a VM a victim in the metrics: fixed numbers of the metric, not
# the policy's parameters, so that tuning the policy cannot move them. A VM
# is a victim in an interval when it waits for at least VICTIM_DELAY_RATIO of
# what it wants and at least VICTIM_MIN_DELAY_CPUS. Both are below the
# policy's default trigger (victim_steal_ratio 0.10, min_steal_cpus 0.05):
# a policy cannot meet containment by acting exactly where it is judged.
VICTIM_DELAY_RATIO = 0.08
VICTIM_MIN_DELAY_CPUS = 0.04
# The windows the flapping rates take their maximum over.
REVERSAL_WINDOW_SECONDS = 600.0
TOGGLE_WINDOW_SECONDS = 3600.0
# The public clouds' credit formula, written here apart from the policy's:
# one credit is one vCPU-minute; the bank holds 24 hours of earnings.
CREDIT_SECONDS = 60.0
CREDIT_BANK_SECONDS = 24 * 3600.0


def is_victim(delay, want):
    """Whether a VM that wanted `want` CPUs and waited `delay` of them is a
    victim, by the metric's own fixed thresholds."""
    return delay >= VICTIM_MIN_DELAY_CPUS and delay >= VICTIM_DELAY_RATIO * want


def window_maximum(indices, intervals):
    """Most events in any window of `intervals` consecutive intervals, the
    events given by their interval indices in order."""
    best, start = 0, 0
    for end in range(len(indices)):
        while indices[end] - indices[start] >= intervals:
            start += 1
        best = max(best, end - start + 1)
    return best


def cloud_credits(balance, baseline, used, seconds):
    """The balance after `seconds` at `used` CPUs: earn the baseline, spend
    what is used, between 0 and 24 hours of earnings."""
    bank = baseline * CREDIT_BANK_SECONDS / CREDIT_SECONDS
    return min(bank, max(0.0, balance + (baseline - used) * seconds / CREDIT_SECONDS)), bank


def percentile(values, share):
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, int(-(-share * len(ordered) // 1)))
    return ordered[min(rank, len(ordered)) - 1]


class Metrics(object):
    """Accumulates one policy's figures interval by interval."""

    def __init__(self, trace):
        self.trace = trace
        self.interval = trace.interval
        self.episodes = []
        self.open_episode = dict((host, 0) for host in trace.hosts)
        self.withheld = 0.0
        self.withheld_contention = 0.0
        self.withheld_culprit = 0.0
        self.idle_withheld = 0.0
        self.capacity_throttled = 0.0
        self.victim_steal = 0.0
        # CPU contention caps withheld from VMs that are no culprits while a
        # culprit is active: a wait the policy itself made.
        self.victim_held = 0.0
        self.overload_steal = 0.0
        self.withheld_without_culprit = 0.0
        self.demand_without_culprit = 0.0
        self.direction = {}
        self.reversals = {}
        self.dedicated = set()
        self.toggles = dict((host, []) for host in trace.hosts)
        self.index = 0
        self.actions = {}
        self.reference = {}
        self.credit_error = None
        self.throttled_vms = set()
        self.culprit_intervals = any(any(flags) for flags in trace.culprit.values())
        # Culprit VM-intervals on a host whose pool its VMs' demand exceeds
        # (a fact of the trace, whatever a policy does), and those braked.
        self.culprit_contended = 0
        self.culprit_braked = 0

    def interval_of_host(self, host, index, keys, specs, demands, used, contention, caps, rules, cpus, weighted=None):
        """One host's interval: containment episodes, withheld CPU, idle,
        recall. A victim is a VM that is no culprit and waits, by the fixed
        thresholds above: for the host's contention, or for a contention cap
        put on it (a capped VM that is no true culprit still pays for it).
        weighted: per VM, whether a policy demoted its CPU weight (a brake
        for recall, which withholds nothing)."""
        self.index = index
        ground_truth = self.trace.has_ground_truth
        culprit_flags = self.trace.culprit
        culprit_active = not ground_truth
        waiting = False
        withheld_contention = 0.0
        steal_here = 0.0
        demand_here = 0.0
        # For recall: the shared pool, what its VMs want, and its culprits.
        pool_here, shared_wanted, culprits_here = float(cpus), 0.0, []
        held_here = 0.0
        for position in range(len(keys)):
            key = keys[position]
            is_culprit = culprit_flags[key][index] == 1
            if is_culprit and demands[position] > 0:
                culprit_active = True
            vcpus = specs[position][0]
            want = demands[position] if demands[position] < vcpus else vcpus
            demand_here += want
            if specs[position][1]:
                pool_here -= vcpus
            else:
                shared_wanted += want
                if is_culprit and demands[position] > 0:
                    culprits_here.append(position)
            cap = caps[position]
            held = 0.0
            if cap is not None:
                held = want - cap if want > cap else 0.0
                if held > 0:
                    seconds = held * self.interval
                    self.withheld += seconds
                    if rules[position] not in PRODUCT_RULES:
                        withheld_contention += held
                        self.withheld_contention += seconds
                        if is_culprit:
                            self.withheld_culprit += seconds
            if is_culprit:
                continue
            steal = contention[position]
            if steal > 0:
                steal_here += steal
                self.victim_steal += steal * self.interval
            delay = steal
            if ground_truth and cap is not None and rules[position] not in PRODUCT_RULES:
                delay += held
                held_here += held
            if delay > 0 and is_victim(delay, want):
                waiting = True
        if ground_truth and culprits_here and shared_wanted > pool_here:
            for position in culprits_here:
                self.culprit_contended += 1
                capped = caps[position] is not None and rules[position] not in PRODUCT_RULES
                if capped or (weighted is not None and weighted[position]):
                    self.culprit_braked += 1
        if culprit_active:
            self.victim_held += held_here * self.interval
        else:
            # Overload with no culprit: reported apart, not charged to containment.
            self.overload_steal += steal_here * self.interval
            self.withheld_without_culprit += withheld_contention * self.interval
            self.demand_without_culprit += demand_here * self.interval
        if waiting and culprit_active:
            self.open_episode[host] += 1
        elif self.open_episode[host]:
            self.episodes.append(self.open_episode[host])
            self.open_episode[host] = 0
        if any(cap is not None and rule not in PRODUCT_RULES for cap, rule in zip(caps, rules)):
            # Over the shared pool only: a dedicated VM's idle pinned cores are
            # no CPU a capped shared VM could have used.
            pool, used_pool = cpus, 0.0
            for position in range(len(keys)):
                if specs[position][1]:
                    pool -= specs[position][0]
                else:
                    used_pool += used[position]
            pool = max(pool, 0.0)
            idle = pool - used_pool
            self.capacity_throttled += pool * self.interval
            if idle > 0 and withheld_contention > 0:
                self.idle_withheld += min(idle, withheld_contention) * self.interval

    def action(self, kind, key, rule, vm_class):
        self.actions[kind] = self.actions.get(kind, 0) + 1
        if kind in ("gate", "open"):
            self.toggles[key].append(self.index)
            return
        if vm_class == "dedicated":
            self.dedicated.add(key)
        self.throttled_vms.add(key)

    def cap_moved(self, key, tighter):
        direction = "tighten" if tighter else "loosen"
        previous = self.direction.get(key)
        if previous is not None and previous != direction:
            self.reversals.setdefault(key, []).append(self.index)
        self.direction[key] = direction

    def credits(self, key, baseline, used, balance_seen, first):
        """Compare the policy's balance with the cloud formula (cloud_credits,
        not the policy's own) run on the exact usage the host model gave."""
        if first:
            self.reference[key] = balance_seen if balance_seen is not None else 0.0
            return
        reference, bank = cloud_credits(self.reference[key], baseline, used, self.interval)
        self.reference[key] = reference
        if balance_seen is not None:
            error = abs(balance_seen - reference) / bank
            if self.credit_error is None or error > self.credit_error:
                self.credit_error = error

    def raw(self):
        """The sums the figures come from, so runs on several traces pool."""
        episodes = self.episodes + [length for length in self.open_episode.values() if length]
        if not episodes and self.culprit_intervals:
            # Culprits were there and no victim ever waited: contained at once.
            episodes = [0]
        reversal_window = max(1, int(round(REVERSAL_WINDOW_SECONDS / self.interval)))
        toggle_window = max(1, int(round(TOGGLE_WINDOW_SECONDS / self.interval)))
        return {
            "episodes": episodes, "ground_truth": self.trace.has_ground_truth,
            "withheld": self.withheld, "withheld_contention": self.withheld_contention,
            "withheld_culprit": self.withheld_culprit, "idle_withheld": self.idle_withheld,
            "capacity_throttled": self.capacity_throttled, "victim_steal": self.victim_steal,
            "victim_held": self.victim_held,
            "overload_steal": self.overload_steal, "withheld_without_culprit": self.withheld_without_culprit,
            "demand_without_culprit": self.demand_without_culprit,
            # The most in any 10-minute (1-hour) window, as a rate per window.
            "reversal_rate": max([window_maximum(indices, reversal_window) for indices in self.reversals.values()]
                                 or [0]),
            "toggle_rate": max([window_maximum(indices, toggle_window) for indices in self.toggles.values()] or [0]),
            "dedicated": len(self.dedicated), "credit_error": self.credit_error,
            "vms_throttled": len(self.throttled_vms), "actions": dict(self.actions),
            "culprit_contended": self.culprit_contended, "culprit_braked": self.culprit_braked,
        }

    def result(self):
        return figures([self.raw()])


TARGETS = {
    "containment_p95_intervals": ("<=", 2),
    "culprit_precision": (">=", 0.95),
    "culprit_recall": (">=", 0.8),
    "reversals_per_vm_per_10min": ("<=", 1),
    "dedicated_touched": ("==", 0),
    "idle_cpu_while_throttled": ("<=", 0.05),
    "gate_toggles_per_node_hour": ("<=", 2),
    "credit_error": ("<=", 0.01),
    "throttled_share_without_culprit": ("<=", 0.01),
}
# For "better" and "worse": which way each metric is good.
# Throttling is compared without the product caps (a burstable VM held to
# its baseline): policies that sell no burstable product have none.
LOWER_IS_BETTER = ("containment_p95_intervals", "contention_throttled_cpu_seconds", "reversals_per_vm_per_10min",
                   "dedicated_touched", "idle_cpu_while_throttled", "gate_toggles_per_node_hour",
                   "throttled_share_without_culprit")
HIGHER_IS_BETTER = ("culprit_precision", "culprit_recall")


def meets(value, target):
    """Whether a metric meets its target; None when the trace gave it no
    value (no culprit to be precise about, no burstable VM)."""
    if value is None:
        return None
    op, bound = target
    return value <= bound + 1e-12 if op == "<=" else value >= bound - 1e-12 if op == ">=" else value == bound


def verdict(figures_by_policy, ours, others):
    """Our policy against the targets, and against each other policy: it
    wins when it is better on containment or precision, worse on no other
    metric, and misses no target the other meets."""
    mine = figures_by_policy[ours]
    result = {"targets": dict((name, {"value": mine.get(name), "target": "%s %s" % target,
                                      "met": meets(mine.get(name), target)})
                              for name, target in sorted(TARGETS.items())), "versus": {},
              "victim_wait_reduction": wait_reduction(mine, figures_by_policy.get("none"))}
    for other in others:
        if other not in figures_by_policy:
            continue
        theirs = figures_by_policy[other]
        better, worse = [], []
        for name in LOWER_IS_BETTER + HIGHER_IS_BETTER:
            a, b = mine.get(name), theirs.get(name)
            if a is None or b is None or abs(a - b) < 1e-9:
                continue
            if name == "gate_toggles_per_node_hour" and not theirs["actions"].get("gate"):
                # Toggles measure a gate's flapping; a policy that never
                # gates has none to compare.
                continue
            if (a < b) == (name in LOWER_IS_BETTER):
                better.append(name)
            else:
                worse.append(name)
        missed = sorted(name for name, target in TARGETS.items()
                        if meets(mine.get(name), target) is False and meets(theirs.get(name), target) is True)
        result["versus"][other] = {
            "better": better, "worse": worse, "missed_where_it_meets": missed,
            "wins": bool(set(better) & {"containment_p95_intervals", "culprit_precision"}) and not (
                set(worse) - {"containment_p95_intervals", "culprit_precision"}) and not missed,
        }
    return result


def contention_wait(figures_of_policy):
    """The victims' wait in host-intervals with a culprit active: what a
    brake can answer (overload_steal_cpu_seconds is reported apart), and
    what contention caps withheld from VMs that are no culprits there (a
    wait the policy made)."""
    return figures_of_policy["victim_steal_cpu_seconds"] - figures_of_policy["overload_steal_cpu_seconds"] \
        + figures_of_policy.get("victim_held_cpu_seconds", 0.0)


def wait_reduction(mine, none):
    """1 - the victims' contention wait under a policy over theirs with no
    control (contention_wait): the share of the wait a culprit caused that
    the policy took away; None without a run of no control or with nobody
    waiting there."""
    if not none or contention_wait(none) <= 0:
        return None
    return round(1.0 - contention_wait(mine) / contention_wait(none), 4)


def figures(raws):
    """The metrics of one run, or of several pooled: episodes and CPU-seconds
    add up, rates and errors take the worst run."""
    episodes = [length for raw in raws for length in raw["episodes"]]
    withheld_contention = sum(raw["withheld_contention"] for raw in raws)
    capacity_throttled = sum(raw["capacity_throttled"] for raw in raws)
    errors = [raw["credit_error"] for raw in raws if raw["credit_error"] is not None]
    contended = sum(raw.get("culprit_contended", 0) for raw in raws)
    actions = {}
    for raw in raws:
        for kind, count in raw["actions"].items():
            actions[kind] = actions.get(kind, 0) + count
    return {
        "containment_p50_intervals": percentile(episodes, 0.50),
        "containment_p95_intervals": percentile(episodes, 0.95),
        "containment_p99_intervals": percentile(episodes, 0.99),
        "containment_episodes": len(episodes),
        "culprit_precision": round(sum(raw["withheld_culprit"] for raw in raws) / withheld_contention, 4)
        if withheld_contention > 0 and all(raw["ground_truth"] for raw in raws) else None,
        "throttled_cpu_seconds": round(sum(raw["withheld"] for raw in raws), 1),
        "contention_throttled_cpu_seconds": round(withheld_contention, 1),
        "reversals_per_vm_per_10min": round(max(raw["reversal_rate"] for raw in raws), 4),
        "dedicated_touched": sum(raw["dedicated"] for raw in raws),
        "idle_cpu_while_throttled": round(sum(raw["idle_withheld"] for raw in raws) / capacity_throttled, 4)
        if capacity_throttled > 0 else 0.0,
        "gate_toggles_per_node_hour": round(max(raw["toggle_rate"] for raw in raws), 3),
        "credit_error": round(max(errors), 6) if errors else None,
        "victim_steal_cpu_seconds": round(sum(raw["victim_steal"] for raw in raws), 1),
        "victim_held_cpu_seconds": round(sum(raw.get("victim_held", 0.0) for raw in raws), 1),
        "overload_steal_cpu_seconds": round(sum(raw.get("overload_steal", 0.0) for raw in raws), 1),
        "throttled_share_without_culprit": round(
            sum(raw.get("withheld_without_culprit", 0.0) for raw in raws)
            / sum(raw.get("demand_without_culprit", 0.0) for raw in raws), 4)
        if all(raw["ground_truth"] for raw in raws) and sum(raw.get("demand_without_culprit", 0.0) for raw in raws) > 0
        else None,
        "vms_throttled": sum(raw["vms_throttled"] for raw in raws),
        "actions": actions,
        "culprit_recall": round(sum(raw.get("culprit_braked", 0) for raw in raws) / contended, 4)
        if contended > 0 and all(raw["ground_truth"] for raw in raws) else None,
    }
