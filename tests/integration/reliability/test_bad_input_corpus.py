"""A table of bad inputs for every module and every role's argument spec,
run with ansible-playbook against the lab's real servers (libvirtd, kube-
apiserver with KubeVirt's CRDs, vcsim). Each case must fail the task with a
message naming the field (and the allowed values where the module gives
them), without a traceback, and leave the objects it aimed at exactly as
they were: libvirt scheduler parameters and metadata, node taints, labels
and annotations, KubeVirt CRs, VMs, VMIs and their launcher pods, vSphere
VM allocations and records.

Some cases first plant what no module would write (a hand-edited throttle
record, an unreadable policy state, a foreign custom attribute value) and
remove it afterwards."""

import json
import os
import re
import sys
import tempfile
import uuid

import libvirt
import pytest
import yaml
from pyVmomi import vim

from domain_records import POLICY_NS, element_of, planted
from nodes import node_state
import playbook_forkserver
from run_module import INVENTORY, ROOT, run_module, run_role
from vsphere_checks import ATTRIBUTE, allocation, record_of

LIVE = libvirt.VIR_DOMAIN_AFFECT_LIVE
CONFIG = libvirt.VIR_DOMAIN_AFFECT_CONFIG
VMI_DESIRED = "overcommit.control/cpu-limit"
VMI_RECORD = "overcommit.control/cpu-limit-throttle"
GATE_RECORD = "overcommit.control/gate"


class Case(object):
    """One bad input. run: a module (`module`, `args`) or a role entry point
    (`role`, `entry`, `variables`). field: the name the message must give
    (equal to the result's `field` when the module returns one); allowed:
    texts the message must hold too. target: what the case aims at, read
    before and after. plant: what is planted on the target first."""

    def __init__(self, case_id, target, field, module=None, args=None, role=None, entry="main", variables=None,
                 allowed=(), plant=None):
        self.id, self.target, self.field = case_id, target, field
        self.module, self.args = module, args or {}
        self.role, self.entry, self.variables = role, entry, variables or {}
        self.allowed, self.plant = allowed, plant


def cputune(case_id, args, field, **kwargs):
    return Case(case_id, "domain", field, "libvirt_cputune", dict({"domains": ["{domain}"]}, **args), **kwargs)


def gate(case_id, args, field, **kwargs):
    return Case(case_id, "nodes", field, "node_admission", dict({"names": ["{node}", "{node2}"]}, **args), **kwargs)


def brake(case_id, args, field, **kwargs):
    return Case(case_id, "vmi", field, "kubevirt_vm_cpu_limit", dict({"namespace": "lab", "names": ["{vmi}"]}, **args),
                **kwargs)


def resources(case_id, args, field, **kwargs):
    return Case(case_id, "vm", field, "kubevirt_vm_resources", dict({"namespace": "lab", "names": ["{vm}"]}, **args),
                **kwargs)


# A valid class definition; each kubevirt_instancetype case breaks one field of it.
PRODUCT = {"name": "{instancetype}", "class": "shared", "cpus": 2, "memory": "2Gi"}


def product(case_id, changes, field, **kwargs):
    return Case(case_id, "instancetypes", "classes[{instancetype}].%s" % field, "kubevirt_instancetype",
                {"classes": [dict(PRODUCT, **changes)]}, **kwargs)


def kubevirt(case_id, args, field, **kwargs):
    return Case(case_id, "cr", field, "kubevirt_config", dict({"namespace": "lab", "name": "{cr}"}, **args), **kwargs)


def reserve(case_id, args, field, **kwargs):
    return Case(case_id, "vsphere", field, "vsphere_vm_reservation", dict({"vms": ["{vsphere_vm}"]}, **args), **kwargs)


def hand_edited(element):
    return ("throttle", element)


CASES = [
    # libvirt_cputune: out of range, wrong types, unknown names, impossible combinations, hand-edited records.
    cputune("cputune-cpus-tiny", {"cpus": 0.001}, "cpus", allowed=("allowed",)),
    cputune("cputune-cpus-caps-nothing", {"cpus": 1000, "force": True}, "cpus", allowed=("1 vCPU",)),
    cputune("cputune-cpus-not-a-number", {"cpus": "two"}, "cpus"),
    cputune("cputune-period", {"cpus": 0.5, "period": 500}, "period", allowed=("1000..1000000",)),
    cputune("cputune-quota", {"quota": 10}, "quota", allowed=("1000..",)),
    cputune("cputune-shares", {"shares": 0}, "shares"),
    cputune("cputune-emulator-cpus", {"emulator_cpus": 0}, "emulator_cpus"),
    cputune("cputune-floor", {"cpus": 0.5, "floor": 2}, "floor", allowed=("0..1",)),
    cputune("cputune-scope", {"cpus": 0.5, "scope": "socket"}, "scope", allowed=("domain, vcpu",)),
    cputune("cputune-state", {"state": "paused"}, "state", allowed=("throttled, restored",)),
    cputune("cputune-apply", {"cpus": 0.5, "apply": "sometimes"}, "apply", allowed=("auto, live, config, both",)),
    cputune("cputune-classes", {"classes": ["gold"], "cpus": 0.5}, "classes", allowed=("dedicated",)),
    cputune("cputune-cpus-and-quota", {"cpus": 0.5, "quota": 50000}, "cpus|quota"),
    cputune("cputune-throttle-without-cap", {"reason": "INC-1"}, "cpus"),
    cputune("cputune-name-with-spaces", {"domains": [" {domain}"], "cpus": 0.5}, "domains"),
    cputune("cputune-empty-name", {"domains": ["{domain}", ""], "cpus": 0.5}, "domains"),
    cputune("cputune-unknown-domain", {"domains": ["{domain}-not-defined"], "cpus": 0.5}, "{domain}-not-defined",
            allowed=("Domain not found",)),
    # Names: non-ASCII, very long, given twice, far too many, markup and selector characters.
    cputune("cputune-name-non-ascii", {"domains": ["{domain}-\u00e9t\u00e9"], "cpus": 0.5},
            "{domain}-\u00e9t\u00e9", allowed=("Domain not found",)),
    cputune("cputune-name-too-long", {"domains": ["{domain}" + "x" * 300], "cpus": 0.5}, "domains",
            allowed=("characters long, more than the 253",)),
    cputune("cputune-name-twice", {"domains": ["{domain}", "{domain}"], "cpus": 0.5}, "domains",
            allowed=("given twice",)),
    cputune("cputune-ten-thousand-names", {"domains": ["{domain}-%d" % n for n in range(10000)], "cpus": 0.5},
            "domains", allowed=("at most 5000 names",)),
    cputune("cputune-name-markup", {"domains": ["{domain}<&\"'"], "cpus": 0.5}, "{domain}<&\"'",
            allowed=("Domain not found",)),
    cputune("cputune-name-selector-characters", {"domains": ["{domain},tier=gold,!x"], "cpus": 0.5},
            "{domain},tier=gold,!x", allowed=("Domain not found",)),
    # Numbers: NaN, infinity, booleans, past 64 bits.
    cputune("cputune-cpus-nan", {"cpus": float("nan")}, "cpus", allowed=("500m",)),
    cputune("cputune-cpus-inf", {"cpus": float("inf")}, "cpus", allowed=("500m",)),
    cputune("cputune-cpus-bool", {"cpus": True}, "cpus", allowed=("500m",)),
    cputune("cputune-cpus-2-63", {"cpus": 2 ** 63}, "cpus", allowed=("500m",)),
    cputune("cputune-period-2-63", {"cpus": 0.5, "period": 2 ** 63}, "period"),
    cputune("cputune-shares-2-63", {"shares": 2 ** 63}, "shares"),
    cputune("cputune-expected-cap", {"cpus": 0.5, "expected": {"{domain}": {"cap_cpus": -1}}},
            "expected.{domain}.cap_cpus"),
    cputune("cputune-expected-unknown-key", {"cpus": 0.5, "expected": {"{domain}": {"cap": 1}}},
            "expected.{domain}.cap"),
    cputune("cputune-expected-other-domain", {"cpus": 0.5, "expected": {"web-9": {}}}, "expected.web-9"),
    cputune("cputune-record-cpus-restore", {"state": "restored"}, "throttle.cpus",
            plant=hand_edited('<throttle reason="INC-2" cpus="half"/>')),
    cputune("cputune-record-cpus-throttle", {"cpus": 0.5, "force": True}, "throttle.cpus",
            plant=hand_edited('<throttle reason="INC-2" cpus="inf"/>')),
    cputune("cputune-record-quota-out-of-range", {"state": "restored"}, "throttle.previous.live.global_quota",
            plant=hand_edited('<throttle cpus="0.5"><previous target="live" global_period="100000" '
                              'global_quota="5"/></throttle>'), allowed=("1000..",)),
    cputune("cputune-record-period-not-a-number", {"state": "restored"}, "throttle.previous.config.global_period",
            plant=hand_edited('<throttle cpus="0.5"><previous target="config" global_period="fast"/></throttle>')),
    cputune("cputune-record-shares-negative", {"state": "restored"}, "throttle.previous.config.cpu_shares",
            plant=hand_edited('<throttle cpus="0.5"><previous target="config" cpu_shares="-2"/></throttle>')),
    # libvirt_cputune_info
    Case("cputune-info-sample-seconds", "domain", "sample_seconds", "libvirt_cputune_info",
         {"domains": ["{domain}"], "sample_seconds": -1}, allowed=("0 or more",)),
    Case("cputune-info-classes", "domain", "classes", "libvirt_cputune_info", {"classes": ["platinum"]},
         allowed=("burstable",)),
    Case("cputune-info-name", "domain", "domains", "libvirt_cputune_info", {"domains": ["{domain} "]}),
    Case("cputune-info-record", "domain", "throttle.cpus", "libvirt_cputune_info",
         {"domains": ["{domain}"], "sample_seconds": 0}, plant=hand_edited('<throttle cpus="-1"/>')),
    # libvirt_vm_class
    Case("vm-class-unknown", "domain", "classes.{domain}", "libvirt_vm_class", {"classes": {"{domain}": "gold"}},
         allowed=("dedicated, shared, burstable",)),
    Case("vm-class-baseline-not-burstable", "domain", "baselines.{domain}", "libvirt_vm_class",
         {"classes": {"{domain}": "shared"}, "baselines": {"{domain}": 0.5}}),
    Case("vm-class-baseline-caps-everything", "domain", "baselines.{domain}", "libvirt_vm_class",
         {"classes": {"{domain}": "burstable"}, "baselines": {"{domain}": 64}}),
    Case("vm-class-apply", "domain", "apply", "libvirt_vm_class", {"classes": {"{domain}": "shared"},
                                                                   "apply": "sometimes"}),
    # libvirt_migrate
    Case("migrate-to-this-host", "domain", "target_uri", "libvirt_migrate",
         {"domains": ["{domain}"], "target_uri": "qemu:///system"}, allowed=("names the target host",)),
    Case("migrate-floor", "domain", "floor_fraction", "libvirt_migrate",
         {"domains": ["{domain}"], "target_uri": "qemu+ssh://hv-2/system", "floor_fraction": 2}, allowed=("0 to 1",)),
    # kubevirt_vm_migrate
    Case("kubevirt-migrate-target-node", "vmi", "target_node", "kubevirt_vm_migrate",
         {"namespace": "lab", "names": ["{vmi}"], "target_node": "Worker 7"}, allowed=("DNS subdomain",)),
    Case("kubevirt-migrate-no-names", "vmi", "names", "kubevirt_vm_migrate", {"namespace": "lab", "names": []}),
    # libvirt_policy_state
    Case("policy-state-not-a-mapping", "domain", "states.{domain}", "libvirt_policy_state",
         {"states": {"{domain}": [1, 2]}}, allowed=("a mapping",)),
    Case("policy-state-not-json", "domain", "states.{domain}", "libvirt_policy_state",
         {"states": {"{domain}": {"cap": float("nan")}}}, allowed=("no NaN",)),
    Case("policy-state-paused-without-domains", "domain", "domains", "libvirt_policy_state", {"paused": True}),
    Case("policy-state-domains-without-paused", "domain", "paused", "libvirt_policy_state",
         {"domains": ["{domain}"], "states": {}}),
    Case("policy-state-key-with-spaces", "domain", "states", "libvirt_policy_state", {"states": {" {domain}": {}}}),
    Case("policy-state-apply", "domain", "apply", "libvirt_policy_state",
         {"states": {"{domain}": {}}, "apply": "never"}, allowed=("auto, live, config, both",)),
    Case("policy-state-unreadable-stored", "domain", "states", "libvirt_policy_state",
         {"domains": ["{domain}"], "paused": False},
         plant=("policy", "<policy><state>{not json</state></policy>")),
    # host_pressure_info
    Case("host-pressure-name", "domain", "domains", "host_pressure_info", {"domains": ["{domain}", " x"]}),
    Case("host-pressure-collect-domains", "domain", "collect_domains", "host_pressure_info",
         {"collect_domains": "maybe"}),
    # node_admission
    gate("gate-state", {"state": "drained"}, "state", allowed=("gated, open",)),
    gate("gate-share-zero", {"max_gated_share": 0, "reason": "INC-1"}, "max_gated_share", allowed=("at most 1",)),
    gate("gate-share-above-one", {"max_gated_share": 1.5, "reason": "INC-1"}, "max_gated_share"),
    gate("gate-share-nan", {"max_gated_share": float("nan"), "reason": "INC-1"}, "max_gated_share"),
    gate("gate-name-twice", {"names": ["{node}", "{node}"], "reason": "INC-1"}, "names", allowed=("given twice",)),
    gate("gate-name-selector-characters", {"names": ["{node},tier=gold"], "reason": "INC-1"}, "{node},tier=gold"),
    gate("gate-taint-effect", {"taints": [{"key": "overcommit.control/x", "effect": "NoExecute"}]}, "effect",
         allowed=("NoSchedule, PreferNoSchedule",)),
    gate("gate-prefix", {"prefix": "no-slash"}, "prefix", allowed=("DNS subdomain",)),
    gate("gate-name-with-spaces", {"names": ["{node}", "{node2} "]}, "names"),
    gate("gate-policy-state", {"policy_state": [1]}, "policy_state", allowed=("a mapping",)),
    gate("gate-expected-key", {"expected": {"{node}": {"tainted": "yes"}}}, "expected.{node}.gated"),
    gate("gate-selector-matches-nothing", {"names": [], "label_selector": "overcommit.test/none=nothing",
                                           "reason": "INC-1"}, "label_selector", allowed=("matches none",)),
    gate("gate-open-selector-matches-nothing", {"names": [], "label_selector": "overcommit.test/none=nothing",
                                                "state": "open"}, "label_selector"),
    gate("gate-fleet-selector-malformed", {"fleet_label_selector": "tier notin (", "reason": "INC-1"},
         "fleet_label_selector"),
    gate("gate-selector-malformed", {"names": [], "label_selector": "a in (b", "reason": "INC-1"}, "label_selector"),
    gate("gate-record-not-json", {"state": "open"}, GATE_RECORD, plant=("node", {GATE_RECORD: "{hand-edited"})),
    gate("gate-unknown-node", {"names": ["{node}-missing"], "reason": "INC-1"}, "{node}-missing",
         allowed=("not found",)),
    # node_overcommit_info
    Case("node-info-prefix", "nodes", "prefix", "node_overcommit_info", {"names": ["{node}"], "prefix": "x"}),
    Case("node-info-name", "nodes", "names", "node_overcommit_info", {"names": ["", "{node}"]}),
    # kubevirt_config
    kubevirt("kubevirt-ratio-zero", {"cpu_allocation_ratio": 0}, "cpu_allocation_ratio"),
    kubevirt("kubevirt-memory-overcommit", {"memory_overcommit": 5}, "memory_overcommit"),
    kubevirt("kubevirt-rollout", {"vm_rollout_strategy": "Sometimes"}, "vm_rollout_strategy",
             allowed=("LiveUpdate",)),
    kubevirt("kubevirt-selector-type", {"auto_cpu_limit_namespace_selector": {"matchLabels": "tier"}},
             "auto_cpu_limit_namespace_selector.matchLabels", allowed=("a mapping",)),
    kubevirt("kubevirt-selector-values", {"auto_cpu_limit_namespace_selector": {
        "matchExpressions": [{"key": "tier", "operator": "In", "values": "a,b"}]}},
        "auto_cpu_limit_namespace_selector.matchExpressions[0].values"),
    kubevirt("kubevirt-selector-operator", {"auto_cpu_limit_namespace_selector": {
        "matchExpressions": [{"key": "tier", "operator": "Like", "values": ["a"]}]}},
        "auto_cpu_limit_namespace_selector.matchExpressions[0].operator", allowed=("In",)),
    kubevirt("kubevirt-clear-and-set", {"clear": ["cpu_allocation_ratio"], "cpu_allocation_ratio": 4}, "clear"),
    kubevirt("kubevirt-clear-unknown", {"clear": ["cpuAllocationRatio"]}, "clear", allowed=("memory_overcommit",)),
    kubevirt("kubevirt-selector-and-clear",
             {"auto_cpu_limit_namespace_selector": {"matchLabels": {"a": "b"}},
              "clear_auto_cpu_limit_namespace_selector": True},
             "auto_cpu_limit_namespace_selector|clear_auto_cpu_limit_namespace_selector"),
    # kubevirt_vm_resources
    resources("resources-class", {"vm_class": "gold"}, "vm_class", allowed=("burstable",)),
    resources("resources-cpu-request", {"vm_class": "shared", "cpu_request": "lots"}, "cpu_request"),
    resources("resources-memory-guest", {"vm_class": "shared", "memory_guest": "2 GB"}, "memory_guest"),
    resources("resources-floor", {"vm_class": "shared", "floor": 3}, "floor", allowed=("0..1",)),
    resources("resources-mode", {"mode": "fix"}, "mode", allowed=("audit",)),
    resources("resources-name", {"names": ["{vm}", " {vm}"], "vm_class": "shared"}, "names"),
    resources("resources-selector-matches-nothing", {"names": [], "label_selector": "overcommit.test/none=nothing",
                                                     "vm_class": "shared"}, "label_selector"),
    resources("resources-instancetype-and-template", {"instancetype": "shared-2c4g", "cpu_limit": "1"}, "cpu_limit",
              allowed=("instancetype",)),
    resources("resources-preference-alone", {"preference": "shared-2c4g"}, "preference", allowed=("instancetype",)),
    resources("resources-instancetype-missing", {"instancetype": "oc-corpus-no-such-instancetype"},
              "oc-corpus-no-such-instancetype"),
    # kubevirt_instancetype
    product("instancetype-dedicated-overcommit", {"class": "dedicated", "memory_overcommit_percent": 10},
            "memory_overcommit_percent", allowed=("dedicated",)),
    product("instancetype-overcommit-beyond-rules", {"memory_overcommit_percent": 80}, "memory_overcommit_percent",
            allowed=("at most 50",)),
    product("instancetype-burstable-baseline", {"class": "burstable", "baseline_cpus": 2}, "baseline_cpus",
            allowed=("under the class's 2 vCPUs",)),
    product("instancetype-baseline-not-burstable", {"baseline_cpus": 0.5}, "baseline_cpus"),
    product("instancetype-memory-text", {"memory": "2 GB"}, "memory", allowed=("4Gi",)),
    product("instancetype-cpus", {"cpus": 0}, "cpus", allowed=("1-512",)),
    Case("instancetype-max-overcommit", "instancetypes", "max_memory_overcommit_percent", "kubevirt_instancetype",
         {"classes": [dict(PRODUCT)], "max_memory_overcommit_percent": 100}),
    # kubevirt_vm_cpu_limit
    brake("brake-cpus-text", {"cpus": "1 CPU"}, "cpus", allowed=("500m",)),
    brake("brake-cpus-zero", {"cpus": "0"}, "cpus"),
    brake("brake-cpus-inf", {"cpus": "inf"}, "cpus"),
    brake("brake-cpus-bool", {"cpus": True}, "cpus"),
    brake("brake-name-twice", {"names": ["{vmi}", "{vmi}"], "cpus": "1"}, "names", allowed=("given twice",)),
    brake("brake-name-markup", {"names": ["{vmi}<&!="], "cpus": "1"}, "{vmi}<&!="),
    brake("brake-cpus-caps-nothing", {"cpus": "8", "force": True}, "cpus", allowed=("2 vCPUs",)),
    brake("brake-headroom", {"state": "restored", "headroom": -1}, "headroom"),
    brake("brake-floor", {"cpus": "1", "floor": 2}, "floor"),
    brake("brake-reconcile-with-cpus", {"state": "reconciled", "cpus": "1"}, "cpus"),
    brake("brake-without-namespace", {"namespace": None, "cpus": "1"}, "namespace"),
    brake("brake-state", {"state": "frozen"}, "state", allowed=("throttled",)),
    brake("brake-desired-oversized", {"names": [], "label_selector": "{vmi_selector}", "state": "reconciled"},
          "annotation", plant=("vmi", {VMI_DESIRED: "1" * 65536})),
    brake("brake-selector-matches-nothing", {"names": [], "label_selector": "overcommit.test/none=nothing",
                                             "cpus": "1"}, "label_selector"),
    brake("brake-restore-record-unreadable", {"state": "restored"}, VMI_RECORD,
          plant=("vmi", {VMI_DESIRED: "1", VMI_RECORD: "{previous: 2"})),
    brake("brake-throttle-record-not-a-mapping", {"cpus": "1"}, VMI_RECORD,
          plant=("vmi", {VMI_DESIRED: "1", VMI_RECORD: "[1, 2]"})),
    brake("brake-wait-timeout", {"cpus": "1", "wait": True, "wait_timeout": 0}, "wait_timeout",
          allowed=("1..3600 seconds",)),
    # kubevirt_vm_cpu_info and kubevirt_policy_state
    Case("vm-cpu-info-window", "vmi", "usage_window", "kubevirt_vm_cpu_info",
         {"namespace": "lab", "names": ["{vmi}"], "usage_window": 0}),
    Case("vm-cpu-info-namespace", "vmi", "namespace", "kubevirt_vm_cpu_info", {"names": ["{vmi}"]}),
    Case("vm-cpu-info-times", "vmi", "usage_times", "kubevirt_vm_cpu_info",
         {"namespace": "lab", "names": ["{vmi}"], "usage_times": ["noon"]}),
    Case("vmi-policy-state-key", "vmi", "states.{vmi}", "kubevirt_policy_state", {"states": {"{vmi}": {}}},
         allowed=("namespace/name",)),
    Case("vmi-policy-state-paused-without-names", "vmi", "names", "kubevirt_policy_state", {"paused": True}),
    Case("vmi-policy-state-missing", "vmi", "missing", "kubevirt_policy_state",
         {"states": {"lab/{vmi}": {}}, "missing": "skip"}),
    # node_policy_state
    Case("node-policy-state-name", "nodes", "names[0]", "node_policy_state", {"names": ["Node A"], "paused": True},
         allowed=("DNS subdomain",)),
    Case("node-policy-state-paused-without-names", "nodes", "names", "node_policy_state", {"paused": True}),
    Case("node-policy-state-value", "nodes", "states.{node}", "node_policy_state", {"states": {"{node}": "gated"}}),
    # vsphere_vm_reservation
    reserve("reserve-negative", {"cpu": {"reservation": -5}}, "cpu.reservation"),
    reserve("reserve-shares-without-custom", {"cpu": {"shares_level": "high", "shares": 10}}, "cpu.shares"),
    reserve("reserve-limit-under-reservation", {"memory": {"reservation": 128, "limit": 64}}, "memory.limit"),
    reserve("reserve-above-capacity", {"memory": {"reservation": 1048576}}, "memory.reservation"),
    reserve("reserve-state", {"state": "gone"}, "state", allowed=("present, restored",)),
    reserve("reserve-request-timeout", {"cpu": {"reservation": 10}, "request_timeout": 0}, "request_timeout",
            allowed=("more than 0 seconds",)),
    reserve("reserve-name", {"vms": ["{vsphere_vm} "], "cpu": {"reservation": 10}}, "vms"),
    reserve("reserve-folder-matches-nothing", {"vms": None, "folders": ["/DC0/vm/no-such-folder"],
                                               "cpu": {"reservation": 10}}, "folders"),
    reserve("reserve-foreign-record", {"state": "restored"}, ATTRIBUTE, plant=("vsphere", "owned by someone else")),
    reserve("reserve-record-unknown-field", {"state": "restored"}, ATTRIBUTE,
            plant=("vsphere", json.dumps({"v": 1, "prior": {"cpu.weight": 5}}))),
    reserve("reserve-record-prior-not-a-number", {"state": "restored"}, ATTRIBUTE, allowed=("cpu.reservation",),
            plant=("vsphere", json.dumps({"v": 1, "prior": {"cpu.reservation": "lots"}}))),
    reserve("reserve-record-prior-out-of-range", {"state": "restored"}, ATTRIBUTE, allowed=("memory.limit",),
            plant=("vsphere", json.dumps({"v": 1, "prior": {"memory.limit": -7}}))),
    # vsphere_overcommit_info
    Case("vsphere-info-samples", "vsphere", "samples", "vsphere_overcommit_info", {"samples": 0}, allowed=("1..",)),
    Case("vsphere-info-cluster", "vsphere", "clusters", "vsphere_overcommit_info", {"clusters": ["no-such-cluster"]}),
    Case("vsphere-info-host-name", "vsphere", "hosts", "vsphere_overcommit_info", {"hosts": [" DC0_C0_H0"]}),
    # policy_simulate (writes only its report folder, checked empty after)
    Case("simulate-scenario", "report_dir", "scenario", "policy_simulate",
         {"scenario": ["tsunami"], "report_dir": "{report_dir}"}),
    Case("simulate-seed", "report_dir", "seed", "policy_simulate",
         {"scenario": ["all"], "seed": -1, "report_dir": "{report_dir}"}),
    Case("simulate-policy-choice", "report_dir", "policies", "policy_simulate",
         {"scenario": ["all"], "policies": ["chaos"], "report_dir": "{report_dir}"}),
    # playbook_input (the check every playbook runs first): a spec it cannot check is refused, naming it.
    Case("playbook-input-kind", "report_dir", "variables.samples", "playbook_input",
         {"playbook": "recommend.yml", "variables": {"samples": "number"}}, allowed=("seconds_or_zero",)),
    # Roles: a bad variable fails the argument spec check, naming it, before any task.
    Case("role-throttle-cpus", "domain", "throttle_cpus", role="throttle",
         variables={"throttle_domains": ["{domain}"], "throttle_cpus": "two", "throttle_reason": "INC-1"}),
    Case("role-throttle-scope", "domain", "throttle_scope", role="throttle",
         variables={"throttle_domains": ["{domain}"], "throttle_cpus": 0.5, "throttle_reason": "INC-1",
                    "throttle_scope": "socket"}, allowed=("domain, vcpu",)),
    Case("role-throttle-reason-missing", "domain", "throttle_reason", role="throttle",
         variables={"throttle_domains": ["{domain}"], "throttle_cpus": 0.5}),
    Case("role-kill-switch-platform", "domain", "kill_switch_platforms", role="kill_switch",
         variables={"kill_switch_paused": True, "kill_switch_platforms": ["openstack"]},
         allowed=("libvirt, kubernetes, kubevirt",)),
    Case("role-kill-switch-undo-apply", "domain", "kill_switch_apply", role="kill_switch", entry="undo",
         variables={"kill_switch_platforms": ["libvirt"], "kill_switch_apply": "never"},
         allowed=("auto, live, config, both",)),
    Case("role-restore-apply", "domain", "restore_apply", role="restore",
         variables={"restore_domains": ["{domain}"], "restore_apply": "never"}, allowed=("auto, live, config, both",)),
    Case("role-restore-classes", "domain", "restore_classes", role="restore",
         variables={"restore_classes": ["gold"]}, allowed=("burstable",)),
    Case("role-reconcile-floor", "vmi", "kubevirt_cpu_reconcile_floor", role="kubevirt_cpu_reconcile",
         variables={"kubevirt_cpu_reconcile_floor": "lots"}),
    Case("role-metrics-dir-missing", "domain", "metrics_textfile_dir", role="metrics_textfile", variables={}),
    Case("role-esxi-guard-match", "vsphere", "esxi_guard_match", role="esxi_guard",
         variables={"esxi_guard_match": ["mac_address"]}, allowed=("system_uuid",)),
    Case("role-esxi-guard-samples", "vsphere", "esxi_guard_samples", role="esxi_guard",
         variables={"esxi_guard_samples": "many"}),
    Case("role-report-page-missing", "report_dir", "report_page", role="report",
         variables={"report_dir": "{report_dir}"}),
    Case("role-fleet-result-of-missing", "report_dir", "fleet_result_of", role="fleet_result",
         variables={"fleet_result_stats_key": "throttle"}),
    Case("role-recommend-ttl", "report_dir", "recommend_ttl_seconds", role="recommend",
         variables={"recommend_ttl_seconds": "an hour", "recommend_plan_dir": "{report_dir}"}),
    Case("role-apply-plan-plan-missing", "nodes", "apply_plan_plan", role="apply_plan", entry="check", variables={}),
    Case("role-rollout-wave-health", "cr", "rollout_wave_health", role="rollout_wave", entry="check",
         variables={"rollout_wave_health": {"max_steal": 0.5}}),
    Case("role-rollout-wave-template-class", "vm", "rollout_wave_kubevirt_templates", role="rollout_wave",
         variables={"rollout_wave_kubevirt_templates": [{"namespace": "lab", "names": ["{vm}"], "vm_class": "gold"}]},
         allowed=("dedicated, shared, burstable",)),
    Case("role-rollout-wave-ratio", "cr", "rollout_wave_kubevirt_config", role="rollout_wave",
         variables={"rollout_wave_kubevirt_config": {"namespace": "lab", "name": "{cr}", "cpu_allocation_ratio": "many"}}),
    Case("role-vm-classes-class", "instancetypes", "vm_classes_definitions", role="vm_classes",
         variables={"vm_classes_definitions": [dict(PRODUCT, **{"class": "gold"})]}, allowed=("burstable",)),
    Case("role-vm-classes-state", "instancetypes", "vm_classes_state", role="vm_classes",
         variables={"vm_classes_definitions": [PRODUCT], "vm_classes_state": "gone"}, allowed=("present, absent",)),
    Case("role-vm-classes-domains", "domain", "vm_classes_libvirt_domains", role="vm_classes",
         variables={"vm_classes_libvirt_domains": ["{domain}"]}),
    Case("role-closed-loop-mode", "nodes", "closed_loop_mode", role="closed_loop", entry="decide",
         variables={"closed_loop_mode": "yolo"}, allowed=("act, dry_run",)),
]


# ---------------------------------------------------------------- targets


class Targets(object):
    """The objects a case aims at: their names (for the args' placeholders)
    and their state, read before and after the case."""

    def __init__(self, request, target):
        self.request = request
        self.target = target
        self.names = {}
        getattr(self, "make_" + target)()

    def fixture(self, name):
        return self.request.getfixturevalue(name)

    def make_domain(self):
        self.domain = self.fixture("spare_domain")
        self.names["domain"] = self.domain.name()

    def read_domain(self):
        domain = self.domain
        tuning = {"config": domain.schedulerParametersFlags(CONFIG)}
        if domain.isActive():
            tuning["live"] = domain.schedulerParametersFlags(LIVE)
        return {"tuning": tuning, "throttle": element_of(domain), "policy": element_of(domain, POLICY_NS)}

    def make_nodes(self):
        self.names["node"], self.names["node2"] = self.fixture("make_nodes")(2, labels={"tier": "corpus"})

    def read_nodes(self):
        api = self.fixture("kube_admin")
        return [node_state(api, self.names[key]) for key in ("node", "node2")]

    def make_vmi(self):
        self.fleet = self.fixture("fleet")
        self.names["vmi"] = self.fleet.vmi(cores=2, limits={"cpu": "2"}, vm=True)
        self.names["vmi_selector"] = self.fleet.selector

    def read_vmi(self):
        # Not the VMI's Events: a refusal is announced with a Warning Event by design.
        name = self.names["vmi"]
        return {"vmi": self.fleet.annotations(name), "vm": self.fleet.vm_annotations(name),
                "limits": self.fleet.compute_limits(name)}

    def make_vm(self):
        from test_kubevirt_vm_resources import domain
        self.vms = self.fixture("vms")
        self.names["vm"] = self.vms.make(domain(cores=2, guest="1Gi"))

    def read_vm(self):
        return self.vms.read(self.names["vm"])

    def make_instancetypes(self):
        self.names["instancetype"] = "oc-corpus-%s" % uuid.uuid4().hex[:8]

    def read_instancetypes(self):
        from kubernetes import client
        custom = client.CustomObjectsApi(self.fixture("kube_admin"))
        found = {}
        for plural in ("virtualmachineclusterinstancetypes", "virtualmachineclusterpreferences"):
            try:
                found[plural] = custom.get_cluster_custom_object("instancetype.kubevirt.io", "v1beta1", plural,
                                                                 self.names["instancetype"])
            except client.ApiException as exc:
                if exc.status != 404:
                    raise
                found[plural] = None
        return found

    def make_cr(self):
        self.cr = self.fixture("kubevirt_cr")
        self.names["cr"] = self.cr["name"]

    def read_cr(self):
        return self.cr["read"]()

    def make_vsphere(self):
        self.si = self.fixture("vsphere")
        self.vm = self.fixture("vsphere_vm")
        self.names["vsphere_vm"] = self.vm.name

    def read_vsphere(self):
        return {"allocation": allocation(self.vm), "record": record_of(self.si, self.vm)}

    def make_report_dir(self):
        self.names["report_dir"] = str(self.fixture("tmp_path") / "report")

    def read_report_dir(self):
        path = self.names["report_dir"]
        return sorted(os.listdir(path)) if os.path.isdir(path) else None

    def read(self):
        return getattr(self, "read_" + self.target)()

    def fill(self, value):
        """`value` with every {placeholder} replaced by the target's names."""
        if isinstance(value, dict):
            return dict((self.fill(key), self.fill(item)) for key, item in value.items())
        if isinstance(value, list):
            return [self.fill(item) for item in value]
        if isinstance(value, str):
            for key, name in self.names.items():
                value = value.replace("{%s}" % key, name)
        return value


def vsphere_attribute_key(si):
    manager = si.RetrieveContent().customFieldsManager
    keys = [field.key for field in manager.field or [] if field.name == ATTRIBUTE]
    return keys[0] if keys else manager.AddCustomFieldDef(name=ATTRIBUTE, moType=vim.VirtualMachine).key


class Planted(object):
    """What a case plants on its target before it runs, removed afterwards."""

    def __init__(self, targets, plant):
        self.targets, self.plant, self.undo = targets, plant, None

    def __enter__(self):
        if self.plant is None:
            return
        kind, value = self.plant
        if kind in ("throttle", "policy"):
            namespace = POLICY_NS if kind == "policy" else "https://overcommit.control/xmlns/throttle/1"
            self.undo = planted(self.targets.domain, value, namespace)
            self.undo.__enter__()
        elif kind == "vsphere":
            si, vm = self.targets.si, self.targets.vm
            key = vsphere_attribute_key(si)
            manager = si.RetrieveContent().customFieldsManager
            manager.SetField(entity=vm, key=key, value=value)
            self.undo = _Reset(lambda: manager.SetField(entity=vm, key=key, value=""))
        elif kind in ("vmi", "node"):
            self.undo = _Reset(self.annotate(kind, value))

    def annotate(self, kind, annotations):
        """Sets `annotations` on the target VMI or first node; returns what removes them."""
        from kubernetes import client

        def patch(values):
            body = {"metadata": {"annotations": values}}
            if kind == "vmi":
                self.targets.fleet.custom.patch_namespaced_custom_object(
                    "kubevirt.io", "v1", "lab", "virtualmachineinstances", self.targets.names["vmi"], body)
            else:
                client.CoreV1Api(self.targets.fixture("kube_admin")).patch_node(self.targets.names["node"], body)
        patch(annotations)
        return lambda: patch(dict((key, None) for key in annotations))

    def __exit__(self, *exc):
        if self.undo is not None:
            self.undo.__exit__(*exc)


class _Reset(object):
    def __init__(self, reset):
        self.reset = reset

    def __exit__(self, *exc):
        self.reset()


# ---------------------------------------------------------------- the test


def messages(result):
    """The task's message and every per-object message of its result."""
    texts = [result.get("msg") or ""]
    for key in ("domains", "nodes", "vms", "classes"):
        for entry in result.get(key) or []:
            if isinstance(entry, dict) and entry.get("msg"):
                texts.append(entry["msg"])
    return "\n".join(texts)


def names_field(text, field):
    """Whether `text` names the field (alternatives separated by |) as a
    whole name, not inside a longer one."""
    return any(re.search(r"(?<![\w.-])%s(?![\w-])" % re.escape(name), text) for name in field.split("|"))


# Cases aimed at a libvirt domain plant records that host-wide reads would
# trip on, and the vSphere ones power a VM on in the lab's cluster: each runs
# in its platform's group (integration/conftest.py); the report role reads
# every domain of the host. The cases of any other target run in a group of
# their kind, so that their batch (below) runs once.
SHARING = {"domain": "libvirt", "report_dir": "libvirt", "vsphere": "vcsim"}


def host_of(case):
    return "lab-hypervisor" if case.target == "domain" and not case.role else "localhost"


def task_of(case, targets):
    """The case's one task, as run_module or run_role would run it."""
    if case.role:
        task = {"ansible.builtin.import_role": {"name": "overcommit.control." + case.role},
                "vars": targets.fill(case.variables)}
        if case.entry != "main":
            task["ansible.builtin.import_role"]["tasks_from"] = case.entry
        return task
    name = case.module if "." in case.module else "overcommit.control." + case.module
    return {"name": "run", name: targets.fill(case.args)}


class Batch(object):
    """The cases of one target kind that plant nothing, run as one
    playbook against one target made for them all, read before and after
    the whole run: one ansible-playbook and one target instead of one per
    case. Each case is a block whose rescue marks it, so a failing case
    does not stop the others; its result is the first task of its block
    (a role case: the role's first, the check of its argument spec), as
    run_module and run_role return it. A case that passed wrongly
    ran for real against the shared target, and the read after says so
    for every case of the kind."""

    def __init__(self, request, target, cases):
        targets = Targets(request, target)
        self.fields = dict((case.id, targets.fill(case.field)) for case in cases)
        hosts = sorted(set(host_of(case) for case in cases))
        play = [{"hosts": host, "gather_facts": False,
                 "tasks": [task for case in cases if host_of(case) == host for task in self.tasks(case, targets)]}
                for host in hosts]
        self.before = targets.read()
        output = run_plays(play)
        self.after = targets.read()
        self.results = {}
        for number, host in enumerate(hosts):
            case_id = None
            for task in output["plays"][number]["tasks"]:
                name = task["task"]["name"]
                result = task["hosts"].get(host, {})
                if name.startswith("begin "):
                    case_id = name[len("begin "):]
                elif case_id is not None and case_id not in self.results:
                    self.results[case_id] = result  # the case's task, or its role's first

    @staticmethod
    def tasks(case, targets):
        """A marker of where the case begins, then the case in its block."""
        return ({"name": "begin " + case.id, "ansible.builtin.debug": {"msg": case.id}},
                {"name": "case " + case.id, "block": [task_of(case, targets)],
                 "rescue": [{"name": "rescued " + case.id, "ansible.builtin.debug": {"msg": case.id}}]})


def run_plays(plays):
    """ansible-playbook's JSON output for `plays` on the lab inventory."""
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as handle:
        yaml.safe_dump(plays, handle)
        playbook = handle.name
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY, playbook]
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"))
    try:
        completed = playbook_forkserver.run(command, env=env)
    finally:
        os.unlink(playbook)
    try:
        return json.loads(completed.stdout)
    except ValueError:
        raise AssertionError("ansible-playbook gave no result (rc %d):\n%s\n%s" % (
            completed.returncode, completed.stdout[-3000:], completed.stderr[-3000:]))


_batches = {}


def batched(request, case):
    """The batch of `case`'s target kind, run by the first of its cases this
    worker meets."""
    if case.target not in _batches:
        _batches[case.target] = Batch(request, case.target, [
            other for other in CASES if other.target == case.target and other.plant is None])
    return _batches[case.target]


def run_alone(request, case):
    """A case that plants something on its target: its own target, read
    before and after it."""
    targets = Targets(request, case.target)
    with Planted(targets, case.plant):
        before = targets.read()
        if case.role:
            # For real, against the case's throwaway target: a spec check that
            # wrongly passed would change it, and the read after says so.
            result = run_role(case.role, targets.fill(case.variables), case.entry)
        else:
            result = run_module(case.module, targets.fill(case.args), host=host_of(case))
        after = targets.read()
    return result, targets.fill(case.field), before, after


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id, marks=pytest.mark.xdist_group(
    SHARING.get(case.target, "corpus-" + case.target))) for case in CASES])
def test_bad_input_fails_naming_the_field_and_changes_nothing(request, case):
    if case.plant is None:
        batch = batched(request, case)
        result, field, before, after = batch.results.get(case.id), batch.fields[case.id], batch.before, batch.after
        assert result is not None, "the batch of %s cases gave no result for %s" % (case.target, case.id)
    else:
        result, field, before, after = run_alone(request, case)
    assert result.get("failed") is True, result
    # ansible-core marks every failed task with exception "(traceback unavailable)" when there was none.
    assert "module_stderr" not in result and result.get("exception") in (None, "(traceback unavailable)"), result
    assert "Traceback" not in json.dumps(result), result
    text = messages(result)
    if "field" in result:
        assert result["field"] == field, (result["field"], text)
    assert names_field(text, field), (field, text)
    for allowed in case.allowed:
        assert allowed in text, (allowed, text)
    assert after == before


@pytest.mark.isolated
def test_the_corpus_covers_every_module_and_every_role():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir)
    modules = set(name[:-3] for name in os.listdir(os.path.join(root, "plugins", "modules")) if name.endswith(".py"))
    roles = set(name for name in os.listdir(os.path.join(root, "roles"))
                if os.path.exists(os.path.join(root, "roles", name, "meta", "argument_specs.yml")))
    assert len(CASES) >= 50
    assert len(set(case.id for case in CASES)) == len(CASES)
    uncovered_modules = modules - set(case.module for case in CASES)
    uncovered_roles = roles - set(case.role for case in CASES)
    assert not uncovered_modules and not uncovered_roles, (uncovered_modules, uncovered_roles)
