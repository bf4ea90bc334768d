#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: policy_simulate
short_description: Replay CPU traces against the collection's control policy and the policies it is compared with
version_added: 0.1.0
description:
  - Replays a trace (a CSV of CPU demand per VM and interval) or generated scenarios on a model of each
    host's CPU, in which demand beyond capacity is shared out as CFS shares it (max-min fair, weighted by
    vCPUs, caps honoured), and runs several policies on the same trace in one run, C(none) (no control),
    C(naive) (a threshold script), C(crane_step) (Crane's step throttling) and C(overcommit) (this
    collection's policy, the one the C(recommend) and C(closed_loop) roles run).
  - Writes O(report_dir)/simulation.json (the metrics of each policy under C(policies.<policy name>), per
    scenario under C(scenarios.<name>.policies), and the plotted series) and O(report_dir)/simulation.html
    (one self-contained page, plots as inline SVG), each atomically.
  - The metrics and the policy's rules and parameters are defined in the collection's C(docs/policy.md).
  - Runs on the controller and needs no server. A malformed trace is refused with its line and the reason
    before anything is written.
author:
  - overcommit.control maintainers (@overcommit)
extends_documentation_fragment:
  - overcommit.control.attributes
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    details: Simulates and returns the metrics; writes no file.
  diff_mode:
    support: none
options:
  trace:
    description:
      - CSV to replay, with the header C(time,host,vm,class,vcpus,demand_cpus) and optionally C(culprit) (the
        ground truth, 0 or 1), C(baseline_cpus) (of burstable VMs; default 20 % of their vCPUs) and C(weight)
        (the VM's CPU weight, such as libvirt's cpu_shares; empty or absent, the VMs of a host are weighted by
        their vCPUs).
      - C(time) in seconds at regular intervals, one row per interval and VM; C(class) one of C(dedicated),
        C(shared), C(burstable); C(demand_cpus) the CPUs the VM wants, from 0 to its vCPUs (up to 5 % above
        them is rate jitter, clamped to the vCPUs and counted in C(clamped_demands)). A VM missing from an
        interval wants nothing in it.
      - Requires O(trace_hosts); mutually exclusive with O(scenario).
    type: path
  trace_hosts:
    description:
      - CSV with the header C(host,cpus), the CPUs of every host of O(trace).
    type: path
  scenario:
    description:
      - Generated scenarios to replay instead of a trace; V(all) is every scenario but C(fleet) (1,000 VMs
        on 50 hosts for a day, which takes minutes).
    type: list
    elements: str
  seed:
    description:
      - Seed of the scenario generator; the same seed gives the same traces.
    type: int
    default: 1
  report_dir:
    description:
      - Folder to write C(simulation.json) and C(simulation.html) to; created when missing.
    type: path
    required: true
  policies:
    description:
      - Policies to compare, in this order in the reports.
    type: list
    elements: str
    choices: [none, naive, crane_step, overcommit]
    default: [none, naive, crane_step, overcommit]
  policy:
    description:
      - Parameters of the C(overcommit) policy to change from their defaults, by name (for example
        C(victim_steal_ratio), C(trigger_n), C(cooldown_seconds)); C(docs/policy.md) lists them all.
    type: dict
    default: {}
  write_trace:
    description:
      - Also write each generated scenario as C(NAME.csv) and C(NAME_hosts.csv) in O(report_dir), in the format
        O(trace) reads, to replay it with one's own changes.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Compare the policies on every generated scenario
  overcommit.control.policy_simulate:
    scenario: [all]
    seed: 7
    report_dir: /tmp/simulation
  register: simulation

- name: Show how ours fared against its targets
  ansible.builtin.debug:
    msg: "{{ simulation.verdict.targets }}"

- name: Replay a trace exported from production, with a stricter steal target
  overcommit.control.policy_simulate:
    trace: traces/cluster-a.csv
    trace_hosts: traces/cluster-a-hosts.csv
    report_dir: reports/cluster-a
    policy:
      victim_steal_ratio: 0.05
      relax_steal_ratio: 0.02
"""

RETURN = r"""
policies:
  description: The metrics of each policy, pooled over the traces replayed (docs/policy.md defines them).
  returned: always
  type: dict
  sample:
    overcommit: {containment_p50_intervals: 1, containment_p95_intervals: 2, containment_p99_intervals: 6,
                 culprit_precision: 1.0, throttled_cpu_seconds: 141359.1, contention_throttled_cpu_seconds: 125383.8,
                 reversals_per_vm_per_10min: 2, dedicated_touched: 0, idle_cpu_while_throttled: 0.0142,
                 gate_toggles_per_node_hour: 2, credit_error: 0.000079, throttled_share_without_culprit: 0.0,
                 overload_steal_cpu_seconds: 33174.3, culprit_recall: 0.97}
scenarios:
  description:
    - Per trace replayed, its size and the metrics of each policy on it.
    - C(clamped_demands) counts the rows of a replayed trace whose demand, a little above the VM's vCPUs (rate
      jitter), was clamped to them.
  returned: always
  type: dict
verdict:
  description: The C(overcommit) policy against each target (value, target, met) and against each other
    policy (metrics it is better and worse on, and whether it wins, better on containment or precision and
    worse on nothing else); C(victim_wait_reduction), one less the victims' wait under it over their wait
    with no control, in host-intervals with a culprit active (null unless C(none) was simulated and someone
    waited there).
  returned: when the overcommit policy was simulated
  type: dict
verdict_lines:
  description: The verdict in words, one line per target and per other policy.
  returned: when the overcommit policy was simulated
  type: list
  elements: str
table:
  description: The pooled metrics as lines of a plain-text table, one column per policy.
  returned: always
  type: list
  elements: str
files:
  description: Paths written.
  returned: unless in check mode
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.simulate import run
from ansible_collections.overcommit.control.plugins.module_utils.simulate import files as simulate_files


def main():
    module = AnsibleModule(
        argument_spec=dict(
            trace=dict(type="path"),
            trace_hosts=dict(type="path"),
            scenario=dict(type="list", elements="str"),
            seed=dict(type="int", default=1),
            report_dir=dict(type="path", required=True),
            policies=dict(type="list", elements="str", choices=["none", "naive", "crane_step", "overcommit"],
                          default=["none", "naive", "crane_step", "overcommit"]),
            policy=dict(type="dict", default={}),
            write_trace=dict(type="bool", default=False),
        ),
        mutually_exclusive=[("trace", "scenario")],
        required_together=[("trace", "trace_hosts")],
        supports_check_mode=True,
    )
    try:
        request = run.check_request(module.params)
        simulate_files.check_paths(request)
        simulation, replayed = run.simulate(request, simulate_files.load_trace(request) if request["trace"] else None)
        files = None
        if not module.check_mode:
            files = simulate_files.write(simulation, request["report_dir"],
                                         replayed if request["write_trace"] else None)
    except ValueRangeError as exc:
        module.fail_json(msg=str(exc), field=exc.field)
    except (IOError, OSError) as exc:
        module.fail_json(msg="%s: %s" % (exc.filename or module.params["report_dir"], exc.strerror or exc))
    result = dict(changed=files is not None, policies=simulation["policies"], table=run.table(simulation),
                  scenarios=dict((name, dict((k, v) for k, v in scenario.items() if k != "series"))
                                 for name, scenario in simulation["scenarios"].items()))
    if "verdict" in simulation:
        result["verdict"] = simulation["verdict"]
        result["verdict_lines"] = run.verdict_lines(simulation)
    if files is not None:
        result["files"] = files
    module.exit_json(**result)


if __name__ == "__main__":
    main()
