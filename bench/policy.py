# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How fast the control policy decides and the simulator replays, beside
the baselines they are held to, in one run:

  decision   one cycle of the policy (domain/policy.py) over 10,000 VMs on
             1,000 hosts, one core: a tenth of the hosts contended (noisy
             neighbours, waiting victims), some caps being relaxed, burstable
             VMs with credits, a node per host. Beside it, the naive
             threshold script deciding on the same snapshot; target < 1 s.
  replay     the simulator replaying the fleet scenario (about 1,000 VMs,
             24 h at 10 s intervals, about 9 million VM-intervals) with our policy; target
             < 2 minutes. Beside it, the same replay with all four policies
             in lockstep (the module's default), per policy.
  scenarios  (with --scenarios) every generated scenario including the fleet,
             in one run, with the table of metrics and the verdict; then
             every scenario but the fleet at --seeds seeds (5), ours against
             no control: the victims' wait reduction, precision, recall and
             containment p95, mean and spread over the seeds.
  sensitivity  (--sensitivity, alone) the targets our policy misses, pooled
             over every scenario but the fleet and, on a line of its own,
             over the fleet scenario's generator at --fleet-hosts hosts (10;
             the fleet has 50: a day replayed at every variation), with
             each parameter moved to -25 % and +25 % of its default, the
             others at theirs.

    source scripts/lib.sh
    $VENV/bin/python bench/policy.py [--hosts 1000 --vms-per-host 10] [--scenarios [--seeds 5]]
    $VENV/bin/python bench/policy.py --sensitivity [--fleet-hosts 10]
"""

import argparse
import math
import os
import random
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))

from ansible_collections.overcommit.control.plugins.module_utils.domain import policy  # noqa: E402
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError  # noqa: E402
from ansible_collections.overcommit.control.plugins.module_utils.simulate import engine, metrics, run, scenarios  # noqa: E402
from ansible_collections.overcommit.control.plugins.module_utils.simulate.controllers import NaiveThreshold  # noqa: E402

NOW = 1_700_000_000


def snapshot(hosts, per_host, seed=1):
    """Hosts and VMs as the info modules return them, with the state earlier
    cycles left on the objects."""
    rng = random.Random(seed)
    host_list, vms = [], []
    for number in range(hosts):
        name = "hv-%04d" % number
        contended = number % 10 == 0
        host_list.append({"name": name, "cpus": 32,
                          "pressure": {"some_avg10": 60.0 if contended else 1.0, "some_avg60": 30.0 if contended else 1.0},
                          "node": {"name": "node-%04d" % number, "gated": False, "policy": {}}})
        for index in range(per_host):
            vcpus = rng.choice((2, 4, 4, 8))
            vm_class = "burstable" if index % 14 == 3 else "dedicated" if index % 31 == 5 else "shared"
            used = vcpus * rng.uniform(0.1, 0.4)
            steal, cap, state = 0.0, None, None
            if contended and index == 0:
                used, steal, vcpus = 10.0, 5.5, 16
            elif contended:
                used = vcpus * 0.6
                steal = used * 0.4 if index < 4 else 0.0
                state = {"hist": "11"} if index < 4 else None
            elif number % 20 == 1 and index == 0:
                cap = 3.0
                state = {"cap": 3.0, "rule": "contain", "capped_at": NOW - 900, "changed_at": NOW - 600,
                         "direction": "tighten", "calm_since": NOW - 400}
            entry = {"name": "vm-%04d-%02d" % (number, index), "host": name, "class": vm_class, "vcpus": vcpus,
                     "cap_cpus": cap, "usage": {"cpus_used": round(used, 3), "steal_cpus": round(steal, 3)},
                     "policy": state}
            if vm_class == "burstable":
                entry["baseline_cpus"] = 0.2 * vcpus
                entry["policy"] = {"credits": rng.uniform(0, 50), "credits_at": NOW - 10}
            vms.append(entry)
    return host_list, vms


def timed(function, repeat):
    times = []
    result = None
    for _round in range(repeat):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def naive_views(hosts, vms):
    views_by_host = dict((h["name"], []) for h in hosts)
    for vm in vms:
        views_by_host[vm["host"]].append({"key": "%s/%s" % (vm["host"], vm["name"]), "used": vm["usage"]["cpus_used"],
                                          "cap": vm["cap_cpus"], "vcpus": vm["vcpus"], "class": vm["class"]})
    return [{"name": h["name"], "cpus": h["cpus"]} for h in hosts], views_by_host


def bench_decision(hosts, per_host):
    host_list, vms = snapshot(hosts, per_host)
    # Every action in the plan: the per-cycle budget would otherwise cut it short.
    params = policy.parameters({"max_actions_per_cycle": 100000})
    seconds, plan = timed(lambda: policy.decide(host_list, vms, NOW, params), 5)
    naive_hosts, naive_by_host = naive_views(host_list, vms)
    naive = NaiveThreshold(naive_hosts, [])
    naive_seconds = timed(lambda: naive.decide(NOW, naive_hosts, naive_by_host), 5)[0]
    kinds = {}
    for action in plan["actions"]:
        kinds[action["action"]] = kinds.get(action["action"], 0) + 1
    print("one policy decision, %d VMs on %d hosts (median of 5, one core):" % (len(vms), hosts))
    print("  overcommit policy (validates input, decides, plans state)  %8.3f s   %s" % (seconds, kinds))
    print("  naive threshold script on the same snapshot                %8.3f s" % naive_seconds)
    print("  policy / naive: %.1fx the time;  policy / target 1 s: %.2f (target <= 1)"
          % (seconds / naive_seconds, seconds / 1.0))


def bench_replay():
    started = time.perf_counter()
    trace = scenarios.generate("fleet", 1)
    generated = time.perf_counter() - started
    intervals = trace.count * len(trace.vms)
    started = time.perf_counter()
    engine.simulate(trace, ["overcommit"])
    ours = time.perf_counter() - started
    started = time.perf_counter()
    engine.simulate(trace)
    four = time.perf_counter() - started
    print("replay of the fleet scenario: %d VMs on %d hosts, 24 h at 10 s, %d VM-intervals (generated in %.1f s):"
          % (len(trace.vms), len(trace.hosts), intervals, generated))
    print("  overcommit policy alone                %7.1f s   %9.0f VM-intervals/s" % (ours, intervals / ours))
    print("  all four policies in lockstep          %7.1f s   %9.0f VM-intervals/s per policy"
          % (four, 4 * intervals / four))
    print("  ours / target 120 s: %.2f (target <= 1);  simulated day / wall time: %.0fx real time"
          % (ours / 120.0, trace.seconds / ours))


def bench_scenarios():
    started = time.perf_counter()
    request = run.check_request({"scenario": list(scenarios.SMALL) + ["fleet"], "report_dir": "unused"})
    simulation, _replayed = run.simulate(request)
    print("every generated scenario in one run (%.0f s):" % (time.perf_counter() - started))
    for line in run.table(simulation) + run.verdict_lines(simulation):
        print("  " + line)
    for name, scenario in simulation["scenarios"].items():
        unmet = [metric for metric, judged in scenario["verdict"]["targets"].items() if judged["met"] is False]
        reduction = scenario["verdict"].get("victim_wait_reduction")
        print("  %-20s targets not met: %s; victims' wait reduction %s" % (
            name, ", ".join(unmet) or "none", "n/a" if reduction is None else "%.1f %%" % (100 * reduction)))


SEED_COLUMNS = (("victim_wait_reduction", "wait cut", 100.0), ("culprit_precision", "precision", 1.0),
                ("culprit_recall", "recall", 1.0), ("containment_p95_intervals", "p95", 1.0))


def spread(values, scale):
    values = [v * scale for v in values if v is not None]
    if not values:
        return "n/a"
    return "%.3g (%.3g-%.3g)" % (statistics.mean(values), min(values), max(values))


def bench_seeds(seeds):
    """Every scenario but the fleet at `seeds` seeds, ours against no
    control: what varies with the draw of the trace, not only its shape."""
    started = time.perf_counter()
    print("every scenario but the fleet at seeds 1-%d, ours against no control; mean (min-max) over the seeds:" % seeds)
    print("  %-20s %s" % ("scenario", " ".join("%-22s" % title for _key, title, _scale in SEED_COLUMNS)))
    for name in scenarios.SMALL:
        rows = dict((key, []) for key, _title, _scale in SEED_COLUMNS)
        for seed in range(1, seeds + 1):
            result = engine.simulate(scenarios.generate(name, seed), ["none", policy.NAME], plot_points=1)["policies"]
            mine = dict(result[policy.NAME], victim_wait_reduction=metrics.wait_reduction(result[policy.NAME],
                                                                                          result["none"]))
            for key in rows:
                rows[key].append(mine.get(key))
        print("  %-20s %s" % (name, " ".join("%-22s" % spread(rows[key], scale) for key, _title, scale in SEED_COLUMNS)))
    print("  (%.0f s; wait cut in %%: 1 - victims' wait with ours / with no control)" % (time.perf_counter() - started))


SENSITIVITY_COLUMNS = (("containment_p95_intervals", "p95"), ("culprit_precision", "precision"),
                       ("culprit_recall", "recall"),
                       ("reversals_per_vm_per_10min", "reversals"), ("dedicated_touched", "dedicated"),
                       ("idle_cpu_while_throttled", "idle"), ("gate_toggles_per_node_hour", "toggles"),
                       ("throttled_share_without_culprit", "no-culprit"))


def pooled(traces, params):
    """Our policy's figures pooled over `traces` with `params`, and the
    targets it misses."""
    raws = [engine.simulate(trace, [policy.NAME], params, plot_points=1)["raw"][policy.NAME] for trace in traces]
    figures = metrics.figures(raws)
    misses = sorted(name for name, target in metrics.TARGETS.items() if metrics.meets(figures.get(name), target) is False)
    return figures, misses


def varied(name, default, factor):
    """The parameter moved by `factor` (an integer moved at least by one, as
    far as the factor goes), inside its range; None where it cannot move."""
    _default, low, high, _what = policy.PARAMETERS[name]
    value = default * factor
    if name in policy.INTEGER_PARAMETERS:
        value = int(math.floor(value)) if factor < 1 else int(math.ceil(value))
    value = max(low, value) if low is not None else value
    value = min(high, value) if high is not None else value
    return None if value == default else value


def sensitivity_row(label, value, over, figures, misses, baseline):
    cells = ["%-9s" % ("n/a" if figures.get(key) is None else "%g" % figures[key]) for key, _title in SENSITIVITY_COLUMNS]
    changed = sorted(set(misses) ^ set(baseline))
    verdict = "misses " + ", ".join(misses) if misses else "meets all"
    if changed:
        verdict += " (differs: %s)" % ", ".join(changed)
    return "  %-24s %-8s %-6s %s %s" % (label, value, over, " ".join(cells), verdict)


def bench_sensitivity(fleet_hosts):
    started = time.perf_counter()
    groups = [("small", [scenarios.generate(name, 1) for name in scenarios.SMALL])]
    if fleet_hosts:
        groups.append(("fleet", [scenarios.fleet(1, hosts=fleet_hosts)]))
    defaults = policy.parameters()
    baselines = dict((label, pooled(traces, None)) for label, traces in groups)
    print("each parameter at -25 %% and +25 %% of its default, the others at theirs; figures pooled over every"
          " scenario but the fleet (small)%s:" % (
              " and over the fleet's generator at %d hosts (the fleet has 50) for a day (fleet)" % fleet_hosts if fleet_hosts else ""))
    print("  %-24s %-8s %-6s %s targets" % ("parameter", "value", "over",
                                            " ".join("%-9s" % title for _key, title in SENSITIVITY_COLUMNS)))
    for label, _traces in groups:
        figures, baseline = baselines[label]
        print(sensitivity_row("(all at their defaults)", "", label, figures, baseline, baseline))
    for name in sorted(policy.PARAMETERS):
        for factor in (0.75, 1.25):
            value = varied(name, defaults[name], factor)
            if value is None:
                print("  %-24s %-8s cannot move from %g" % (name, "", defaults[name]))
                continue
            try:
                params = policy.parameters(dict(defaults, **{name: value}))
            except ValueRangeError as error:
                print("  %-24s %-8g refused: %s" % (name, value, error))
                continue
            for label, traces in groups:
                figures, misses = pooled(traces, params)
                print(sensitivity_row(name, "%g" % value, label, figures, misses, baselines[label][1]))
            sys.stdout.flush()
    print("  (%.0f s)" % (time.perf_counter() - started))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--vms-per-host", type=int, default=10)
    parser.add_argument("--no-replay", action="store_true", help="skip the 24 h fleet replay")
    parser.add_argument("--scenarios", action="store_true", help="also run every scenario with the fleet")
    parser.add_argument("--seeds", type=int, default=5, help="seeds of each small scenario with --scenarios")
    parser.add_argument("--sensitivity", action="store_true",
                        help="only the sensitivity table: each parameter at -25 %% and +25 %% of its default")
    parser.add_argument("--fleet-hosts", type=int, default=10,
                        help="with --sensitivity: hosts of the fleet scenario replayed per variation (10; all 50 take "
                             "about an hour; 0 leaves the fleet out)")
    args = parser.parse_args()
    if args.sensitivity:
        bench_sensitivity(args.fleet_hosts)
        return
    bench_decision(args.hosts, args.vms_per_host)
    if not args.no_replay:
        bench_replay()
    if args.scenarios:
        bench_scenarios()
        if args.seeds > 0:
            bench_seeds(args.seeds)


if __name__ == "__main__":
    main()
