"""Stateful property-based machines (hypothesis RuleBasedStateMachine) that
drive the collection's own runners in-process against the lab's real servers:
CpuTuneRunner over libvirt-python on a real guest, AdmissionRunner over
kube-apiserver on Node objects made for the run, ReservationRunner over vcsim
on a VM made for the run. Each runner is built and called the way its module
builds and calls it (plugins/modules/*); only the AnsibleModule around it is
left out, because a sequence of ansible-playbook runs is far too slow for
thousands of sequences.

Foreign writers go through the servers' own APIs (libvirt-python
setSchedulerParametersFlags, the kubernetes client's read-modify-write of a
Node, pyVmomi ReconfigVM_Task), never through the collection. Each machine
keeps its own model of what the object should hold and checks it against
what the server reports after every step (@invariant).

The environments (`libvirt_env`, `k8s_env`, `vsphere_env`) are context
managers shared by the tests (test_state_machines.py) and scripts/soak; on
leaving they put every object back as it was found."""

import contextlib
import json
import os
import shutil
import ssl
import tempfile
import threading
import uuid
import xml.etree.ElementTree as ET

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from ansible_collections.overcommit.control.plugins.module_utils.common.record import clock, record_fields, utc_now
from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import K8sClient
from ansible_collections.overcommit.control.plugins.module_utils.k8s.gate import plan as gate
from ansible_collections.overcommit.control.plugins.module_utils.k8s.gate.runner import AdmissionRunner
from ansible_collections.overcommit.control.plugins.module_utils.k8s.metadata import DEFAULT_PREFIX
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.client import LibvirtClient
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.cputune import check_request
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.cputune_runner import CpuTuneRunner
from ansible_collections.overcommit.control.plugins.module_utils.vsphere import reservation as rsv
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.client import VsphereClient
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.reservation_runner import ReservationRunner
from lab_logs import LAB_HOME

# Even without an example database Hypothesis caches what it reads of the
# source under .hypothesis in the working directory: kept out of the checkout.
if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    set_hypothesis_home_dir(os.path.join(LAB_HOME, "hypothesis"))

PERIOD = 100000
UNLIMITED = -1
REQUESTER = "state-machine"


def machine_settings(max_examples, step_count=10, derandomize=True):
    """Settings of a run: no example database (nothing written into the
    checkout), no deadline (the servers' latency varies with the load of the
    machine) and no shrinking: against real servers each shrink step is a
    real sequence of seconds, and one failure could take many minutes. A
    failing sequence is printed step by step as it ran, with the blob that
    replays it (@reproduce_failure). Derandomized in CI (the same sequences
    each run), random in the soak (every run explores new ones)."""
    return settings(max_examples=max_examples, stateful_step_count=step_count, deadline=None, database=None,
                    derandomize=derandomize, phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=list(HealthCheck), print_blob=True)


def run_machine(machine, max_examples, step_count=10, derandomize=True):
    run_state_machine_as_test(machine, settings=machine_settings(max_examples, step_count, derandomize))


def _cpus(quota):
    return None if quota is None or quota <= 0 else quota / float(PERIOD)


class LabMachine(RuleBasedStateMachine):
    """A machine bound to its environment (platform_env sets `env`), which
    counts the sequences it starts: one instance each."""

    env = None
    sequences = 0

    def __init__(self):
        super(LabMachine, self).__init__()
        type(self).sequences += 1
        self.last = None


# --------------------------------------------------------------------------- libvirt

LIBVIRT_KEYS = ("global_period", "global_quota", "vcpu_period", "vcpu_quota")


def _normal(values):
    """Scheduler parameters of either target in live form: a period of 0
    (config: not set) is the default period, a quota of 0 or less unlimited."""
    out = {}
    for key in LIBVIRT_KEYS:
        value = values.get(key, 0)
        if key.endswith("_period"):
            out[key] = value or PERIOD
        else:
            out[key] = UNLIMITED if value <= 0 else value
    return out


class LibvirtEnv(object):
    """One running guest of the lab (`name`), its connection, a lock folder,
    and the guest's tuning and metadata as found, put back on close."""

    def __init__(self, uri, name):
        import libvirt

        self.libvirt = libvirt
        libvirt.registerErrorHandler(lambda *args: None, None)
        self.uri = uri
        self.name = name
        self.conn = libvirt.open(uri)
        self.domain = self.conn.lookupByName(name)
        if not self.domain.isActive():
            self.domain.create()
        self.vcpus = self.domain.maxVcpus()
        self.lock_dir = tempfile.mkdtemp(prefix="oc-state-machine-")
        self.found = dict((target, self.params(target)) for target in ("live", "config"))
        self.found_shares = dict((target, self.shares(target)) for target in ("live", "config"))
        self.found_cputune = self.persistent_cputune()

    def persistent_cputune(self):
        element = ET.fromstring(self.xml("config")).find("cputune")
        return None if element is None else ET.tostring(element, encoding="unicode")

    def flags(self, target):
        return self.libvirt.VIR_DOMAIN_AFFECT_LIVE if target == "live" else self.libvirt.VIR_DOMAIN_AFFECT_CONFIG

    def params(self, target):
        values = self.domain.schedulerParametersFlags(self.flags(target))
        return dict((key, values[key]) for key in LIBVIRT_KEYS)

    def shares(self, target):
        return self.domain.schedulerParametersFlags(self.flags(target)).get("cpu_shares")

    def xml(self, target):
        flags = 0 if target == "live" else self.libvirt.VIR_DOMAIN_XML_INACTIVE
        return self.domain.XMLDesc(flags)

    def foreign_set(self, values):
        """A foreign writer (an administrator's virsh schedinfo --live --config)."""
        for target in ("live", "config"):
            self.domain.setSchedulerParametersFlags(dict(values), self.flags(target))

    def reset(self):
        """The guest as found: running, no throttle record, its tuning back.
        Children first, so that each write is valid on cgroup v1."""
        if not self.domain.isActive():
            self.domain.create()
        for target in ("live", "config"):
            found = self.found[target]
            for group in ("vcpu", "global"):
                keys = (group + "_period", group + "_quota")
                self.domain.setSchedulerParametersFlags(dict((key, found[key]) for key in keys), self.flags(target))
            if self.found_shares[target]:
                # Persistent shares not set (0) cannot be written back; close() puts the definition back.
                self.domain.setSchedulerParametersFlags({"cpu_shares": self.found_shares[target]}, self.flags(target))
        for flag in (self.libvirt.VIR_DOMAIN_AFFECT_LIVE, self.libvirt.VIR_DOMAIN_AFFECT_CONFIG):
            self.domain.setMetadata(self.libvirt.VIR_DOMAIN_METADATA_ELEMENT, None, None,
                                    domain_xml.THROTTLE_NAMESPACE, flag)

    def close(self):
        self.reset()
        if self.persistent_cputune() != self.found_cputune:
            # Values written back as 0 ("not set") can leave elements behind: the definition as found.
            root = ET.fromstring(self.domain.XMLDesc(self.libvirt.VIR_DOMAIN_XML_INACTIVE
                                                     | self.libvirt.VIR_DOMAIN_XML_SECURE))
            for element in root.findall("cputune"):
                root.remove(element)
            if self.found_cputune is not None:
                root.append(ET.fromstring(self.found_cputune))
            self.conn.defineXML(ET.tostring(root, encoding="unicode"))
        shutil.rmtree(self.lock_dir, ignore_errors=True)
        self.conn.close()


@contextlib.contextmanager
def libvirt_env(uri, name):
    env = LibvirtEnv(uri, name)
    try:
        env.reset()
        yield env
    finally:
        env.close()


class LibvirtMachine(LabMachine):
    """Throttle (whole domain or per vCPU), restore (plainly, or with
    `expected` as the closed loop and apply_plan call it), foreign edits of
    the capped values and of the shares (which no throttle here sets) and a
    guest restart, on one real guest.

    Model: `base`, the values before the first throttle (None while not
    throttled); `current`, what live and persistent tuning hold; `owner`,
    what the collection's caller last saw (cap and record time) for the
    compare-and-swap restore."""

    def __init__(self):
        super(LibvirtMachine, self).__init__()
        self.env.reset()
        self.current = _normal(self.env.found["live"])
        self.base = None
        self.scope = None
        self.owner = {"cap_cpus": self.cap(), "throttle_time": None}
        self.restarted = False
        # Per target: the shares, as someone else last set them.
        self.shares = dict((target, self.env.shares(target)) for target in ("live", "config"))

    def cap(self, values=None):
        values = values or self.current
        whole = _cpus(values["global_quota"])
        per_vcpu = _cpus(values["vcpu_quota"])
        caps = [c for c in (whole, None if per_vcpu is None else per_vcpu * self.env.vcpus) if c is not None]
        return min(caps) if caps else None

    def run(self, **options):
        """The runner as plugins/modules/libvirt_cputune.py builds and calls it."""
        params = dict(class_namespace=domain_xml.CLASS_NAMESPACE, domains=[self.env.name], classes=[],
                      state="throttled", cpus=None, scope="domain", period=PERIOD, quota=None, shares=None,
                      emulator_cpus=None, emulator_quota=None, apply="auto", reason="state machine",
                      requested_by=REQUESTER, plan_id=None, force=False, floor=0.25, missing="fail", expected=None,
                      lock_dir=self.env.lock_dir, uri=self.env.uri)
        params.update(options)
        request = check_request(params, False)
        client = LibvirtClient(self.env.uri)
        try:
            results = CpuTuneRunner(client, request, now=utc_now(), requested_by=params["requested_by"]).run()
        finally:
            client.close()
        assert len(results) == 1, results
        self.last = results[0]
        return results[0]

    @rule(scope=st.sampled_from(["domain", "vcpu"]), share=st.sampled_from([0.25, 0.375, 0.5, 0.75]))
    def throttle(self, scope, share):
        cpus = share * self.env.vcpus if scope == "domain" else share
        result = self.run(state="throttled", cpus=cpus, scope=scope)
        base = self.base or self.current
        if scope == "vcpu" and base["global_quota"] > 0 and base["global_quota"] < cpus * PERIOD:
            # cgroup v1 refuses a vCPU a larger share than its domain: refused, nothing written.
            assert result.get("failed") and "exceeds the whole-domain cap" in result["msg"], result
            assert not result["changed"], result
            return
        assert not result.get("failed") and not result.get("conflict"), result
        if self.base is None:
            self.base = dict(self.current)
        # The pre-throttle tuning with the cap on top (the other scope back to what it was).
        target = dict(self.base)
        quota = int(round(cpus * PERIOD))
        if scope == "domain":
            target.update(global_period=PERIOD, global_quota=quota)
            if target["vcpu_quota"] > 0 and target["vcpu_quota"] > quota:
                target["vcpu_quota"] = quota
        else:
            target.update(vcpu_period=PERIOD, vcpu_quota=quota)
        self.current, self.scope = target, scope
        assert result["throttle"] is not None, result
        self.owner = {"cap_cpus": self.cap(), "throttle_time": result["throttle"]["time"]}

    def expect_restored(self, result):
        assert not result.get("failed") and not result.get("conflict"), result
        assert result["throttle"] is None, result
        if self.base is not None:
            self.current = self.base
        self.base, self.scope = None, None
        self.owner = {"cap_cpus": self.cap(), "throttle_time": None}

    @rule()
    def restore(self):
        """A plain restore returns exactly the recorded values (a foreign edit
        of the cap included: the documented exact restore)."""
        self.expect_restored(self.run(state="restored"))

    @rule()
    def restore_compare_and_swap(self):
        """A restore that says what its caller saw: when someone changed the
        cap since, it says so and changes nothing."""
        result = self.run(state="restored", expected={self.env.name: dict(self.owner)})
        foreign = abs((self.cap() or 0) - (self.owner["cap_cpus"] or 0)) > 1e-6 or \
            (self.cap() is None) != (self.owner["cap_cpus"] is None)
        if foreign:
            assert result.get("conflict") and not result.get("changed"), result
            assert "changed since it was read" in result["msg"], result
        else:
            self.expect_restored(result)

    @rule(data=st.data())
    def foreign_edit(self, data):
        """Someone else changes the value the throttle owns (or, on a domain
        not throttled, its whole-domain cap), live and persistent."""
        if self.scope == "vcpu":
            key, choices = "vcpu_quota", [int(c * PERIOD) for c in (0.3, 0.6, 0.9)]
        else:
            key, choices = "global_quota", [UNLIMITED] + [int(c * self.env.vcpus * PERIOD) for c in (0.3, 0.6, 0.9)]
        if self.scope == "domain":
            choices = [c for c in choices if c > 0]
        elif self.scope == "vcpu" and self.current["global_quota"] > 0:
            # cgroup v1 refuses a vCPU a larger share than its domain.
            choices = [c for c in choices if c <= self.current["global_quota"]]
        choices = [c for c in choices if c != self.current[key]]
        if not choices:
            return
        value = data.draw(st.sampled_from(choices))
        self.env.foreign_set({key: value})
        self.current = dict(self.current, **{key: value})

    @rule(value=st.sampled_from([512, 2048, 4096]))
    def foreign_shares(self, value):
        """Someone else changes the shares, a value the throttles here never
        set: no throttle or restore may undo it."""
        self.env.foreign_set({"cpu_shares": value})
        self.shares = {"live": value, "config": value}

    @precondition(lambda self: not self.restarted)
    @rule()
    def restart_guest(self):
        """The guest shut off and started again: live tuning comes from the
        persistent definition, which every write of this machine kept equal."""
        self.env.domain.destroy()
        self.env.domain.create()
        self.restarted = True
        if self.shares["config"]:
            # Shares not set persistently (0) leave the kernel's default, as before.
            self.shares["live"] = self.shares["config"]

    @invariant()
    def tuning_as_modelled(self):
        for target in ("live", "config"):
            seen = _normal(self.env.params(target))
            assert seen == self.current, (target, seen, self.current, self.last)

    @invariant()
    def foreign_shares_kept(self):
        for target in ("live", "config"):
            assert self.env.shares(target) == self.shares[target], (target, self.shares, self.last)

    @invariant()
    def record_parseable_and_exact(self):
        for target in ("live", "config"):
            record = domain_xml.describe(self.env.xml(target))["record"]
            if self.base is None:
                assert record is None, (target, record, self.last)
            else:
                assert record is not None, (target, self.last)
                assert "cpu_shares" not in record["owns"], (target, record, self.last)
                for recorded in record["previous"].values():
                    assert _normal(recorded) == self.base, (target, record, self.base, self.last)


# --------------------------------------------------------------------------- Kubernetes

FOREIGN_TAINT_KEYS = ("example.com/maintenance", "example.com/gpu", "dedicated")
FOREIGN_LABEL_KEYS = ("example.com/team", "example.com/rack")
GATE_KEYS = ("gated", "pressure")
PREFIX = DEFAULT_PREFIX
RUN_LABEL = "overcommit.test/state-machine"


class K8sEnv(object):
    """The admin kubeconfig, an API client for the foreign writers, and the
    run's label; every node made is deleted on close."""

    def __init__(self, kubeconfig):
        from kubernetes import client, config

        self.kubeconfig = kubeconfig
        self.api = config.new_client_from_config(config_file=kubeconfig)
        self.core = client.CoreV1Api(self.api)
        self.exceptions = client.exceptions
        self.run = uuid.uuid4().hex[:8]
        self.made = []

    def make_node(self):
        name = "oc-sm-%s-%d" % (self.run, len(self.made))
        self.core.create_node({"metadata": {"name": name, "labels": {RUN_LABEL: self.run}}})
        self.made.append(name)
        return name

    def delete_node(self, name):
        try:
            self.core.delete_node(name)
        except self.exceptions.ApiException as exc:
            if exc.status != 404:
                raise
        self.made.remove(name)

    def node(self, name):
        return self.api.sanitize_for_serialization(self.core.read_node(name))

    def foreign_write(self, name, change):
        """A well-behaved foreign writer: read, change, replace guarded by the
        resourceVersion read, again on a conflict."""
        for _attempt in range(20):
            node = self.core.read_node(name)
            change(node)
            try:
                self.core.replace_node(name, node)
                return
            except self.exceptions.ApiException as exc:
                if exc.status != 409:
                    raise
        raise AssertionError("foreign writer: 20 conflicts in a row on %s" % name)

    def close(self):
        for name in list(self.made):
            self.delete_node(name)
        self.api.close()


@contextlib.contextmanager
def k8s_env(kubeconfig):
    env = K8sEnv(kubeconfig)
    try:
        yield env
    finally:
        env.close()


def _taint(key, value, effect="NoSchedule"):
    from kubernetes import client

    return client.V1Taint(key=key, value=value, effect=effect)


class K8sMachine(LabMachine):
    """Gate (with either owned taint, with or without cordon and an owned
    label), open, foreign taint, label and cordon writes, and two writers at
    once (two gates, or a gate and a foreign writer), on one new node.

    Model: the foreign taints and labels, the owned taints and the keys the
    gate record claims, the owned label, who cordoned."""

    def __init__(self):
        super(K8sMachine, self).__init__()
        self.name = self.env.make_node()
        self.foreign_taints = {}
        self.foreign_labels = {}
        self.owned = {}
        self.record_keys = None
        self.owned_label = None
        self.foreign_cordon = False
        self.gate_cordon = False

    def teardown(self):
        self.env.delete_node(self.name)

    def runner(self, state, keys=(), cordon=False, label=False):
        """The runner as plugins/modules/node_admission.py builds it."""
        params = {"names": [self.name], "label_selector": None, "state": state,
                  "taints": [{"key": key, "value": "cpu" if key == "pressure" else None, "effect": "NoSchedule"}
                             for key in keys] if keys else None,
                  "labels": {"esxi-host": label} if label is not False else {}, "cordon": cordon,
                  "reason": "state machine", "requested_by": REQUESTER, "plan_id": None, "prefix": PREFIX,
                  "max_gated_share": 1.0, "fleet_label_selector": "%s=%s" % (RUN_LABEL, self.env.run),
                  "force": False, "policy_state": None, "expected": None}
        request = gate.check_request(params, False)
        client = K8sClient({"kubeconfig": self.env.kubeconfig, "retry_seconds": 30.0, "request_timeout": 30.0})
        return client, AdmissionRunner(client, request, record_fields(params), clock, "state-machine")

    def call(self, state, **options):
        client, runner = self.runner(state, **options)
        try:
            results, _fleet = runner.run()
        finally:
            client.close()
        assert len(results) == 1 and not results[0].get("failed") and not results[0].get("conflict"), results
        self.last = results[0]
        return results[0]

    def model_gate(self, keys, cordon, label):
        for key in keys:
            self.owned[PREFIX + key] = "cpu" if key == "pressure" else None
        claimed = set(self.record_keys or []) & set(self.owned)
        self.record_keys = sorted(claimed | set(PREFIX + key for key in keys))
        if cordon:
            if not (self.foreign_cordon or self.gate_cordon):
                self.gate_cordon = True
        else:
            self.gate_cordon = False
        if label is not False:
            self.owned_label = label

    def model_open(self, label):
        keys = set(self.record_keys) if self.record_keys is not None else set([PREFIX + "gated"])
        for key in keys:
            self.owned.pop(key, None)
        self.record_keys = None
        self.gate_cordon = False
        if label is not False:
            self.owned_label = label

    @rule(keys=st.sampled_from([("gated",), ("pressure",), ("gated", "pressure")]), cordon=st.booleans(),
          label=st.sampled_from([False, None, "esx-01", "esx-02"]))
    def gate_node(self, keys, cordon, label):
        result = self.call("gated", keys=keys, cordon=cordon, label=label)
        assert result["gate"] is not None, result
        self.model_gate(keys, cordon, label)

    @rule(label=st.sampled_from([False, None]))
    def open_node(self, label):
        result = self.call("open", label=label)
        assert result.get("gate") is None, result
        self.model_open(label)

    @rule(key=st.sampled_from(FOREIGN_TAINT_KEYS), value=st.sampled_from(["a", "b", ""]),
          effect=st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"]))
    def foreign_taint(self, key, value, effect):
        def change(node):
            taints = [t for t in node.spec.taints or [] if t.key != key]
            node.spec.taints = taints + [_taint(key, value or None, effect)]
        self.env.foreign_write(self.name, change)
        self.foreign_taints[key] = (value or None, effect)

    @precondition(lambda self: self.foreign_taints)
    @rule(data=st.data())
    def foreign_untaint(self, data):
        key = data.draw(st.sampled_from(sorted(self.foreign_taints)))

        def change(node):
            node.spec.taints = [t for t in node.spec.taints or [] if t.key != key] or None
        self.env.foreign_write(self.name, change)
        del self.foreign_taints[key]

    @rule(key=st.sampled_from(FOREIGN_LABEL_KEYS), value=st.sampled_from(["x", "y", None]))
    def foreign_label(self, key, value):
        def change(node):
            labels = dict(node.metadata.labels or {})
            labels.pop(key, None)
            if value is not None:
                labels[key] = value
            node.metadata.labels = labels
        self.env.foreign_write(self.name, change)
        self.foreign_labels.pop(key, None)
        if value is not None:
            self.foreign_labels[key] = value

    @precondition(lambda self: not (self.foreign_cordon or self.gate_cordon))
    @rule()
    def foreign_cordon_node(self):
        def change(node):
            node.spec.unschedulable = True
        self.env.foreign_write(self.name, change)
        self.foreign_cordon = True

    @precondition(lambda self: self.foreign_cordon)
    @rule()
    def foreign_uncordon_node(self):
        def change(node):
            node.spec.unschedulable = None
        self.env.foreign_write(self.name, change)
        self.foreign_cordon = False

    @rule(first=st.sampled_from(GATE_KEYS), second=st.sampled_from(GATE_KEYS), foreign=st.sampled_from(FOREIGN_TAINT_KEYS))
    def concurrent_writers(self, first, second, foreign):
        """Two gates of this collection and a foreign taint writer at once."""
        errors, results = [], []

        def ours(key):
            try:
                client, runner = self.runner("gated", keys=(key,))
                try:
                    results.append(runner.run()[0][0])
                finally:
                    client.close()
            except Exception as exc:  # reported by the assertion below
                errors.append(exc)

        def theirs():
            try:
                self.env.foreign_write(self.name, lambda node: setattr(node.spec, "taints", [
                    t for t in node.spec.taints or [] if t.key != foreign] + [_taint(foreign, "c")]))
            except Exception as exc:  # reported by the assertion below
                errors.append(exc)

        threads = [threading.Thread(target=ours, args=(first,)), threading.Thread(target=ours, args=(second,)),
                   threading.Thread(target=theirs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        assert all(not r.get("failed") and not r.get("conflict") for r in results), results
        self.last = results
        self.foreign_taints[foreign] = ("c", "NoSchedule")
        # Either order: both owned taints end up there, and the record claims both.
        for key in set((first, second)):
            self.model_gate((key,), False, False)

    @invariant()
    def node_as_modelled(self):
        node = self.env.node(self.name)
        meta, spec = node["metadata"], node.get("spec") or {}
        taints = dict((t["key"], (t.get("value"), t["effect"])) for t in spec.get("taints") or [])
        labels = meta.get("labels") or {}
        annotations = meta.get("annotations") or {}
        foreign = dict((k, v) for k, v in taints.items() if not k.startswith(PREFIX))
        assert foreign == self.foreign_taints, (foreign, self.foreign_taints, self.last)
        owned = dict((k, v[0]) for k, v in taints.items() if k.startswith(PREFIX))
        assert owned == self.owned, (owned, self.owned, self.last)
        assert dict((k, labels.get(k)) for k in FOREIGN_LABEL_KEYS if k in labels) == self.foreign_labels, \
            (labels, self.foreign_labels)
        assert labels.get(PREFIX + "esxi-host") == self.owned_label, (labels, self.owned_label, self.last)
        assert labels.get(RUN_LABEL) == self.env.run, labels
        assert bool(spec.get("unschedulable")) == (self.foreign_cordon or self.gate_cordon), (spec, self.last)

    @invariant()
    def record_parseable_and_exact(self):
        annotations = self.env.node(self.name)["metadata"].get("annotations") or {}
        text = annotations.get(PREFIX + "gate")
        if self.record_keys is None:
            assert text is None, (text, self.last)
        else:
            record = json.loads(text)
            assert isinstance(record, dict), text
            assert record["taints"] == self.record_keys, (record, self.record_keys, self.last)
            assert record["cordoned"] is self.gate_cordon, (record, self.gate_cordon, self.last)


# --------------------------------------------------------------------------- vSphere

VM_MEMORY_MB = 128


class VsphereEnv(object):
    """A VM of its own in vcsim, powered on, destroyed on close; the
    connection details of the lab; a pyVmomi session for the foreign writer."""

    def __init__(self, lab):
        from pyVim.connect import SmartConnect
        from vsphere_task import wait_for_task
        from pyVmomi import vim

        self.vim, self.wait = vim, wait_for_task
        self.lab = lab
        self.si = SmartConnect(host=lab["VMWARE_HOST"], port=int(lab["VMWARE_PORT"]), user=lab["VMWARE_USER"],
                               pwd=lab["VMWARE_PASSWORD"], sslContext=ssl._create_unverified_context())
        content = self.si.RetrieveContent()
        view = content.viewManager.CreateContainerView(content.rootFolder, [vim.HostSystem], True)
        try:
            hosts = sorted((h for h in view.view if isinstance(h.parent, vim.ClusterComputeResource)),
                           key=lambda h: h.name)
        finally:
            view.Destroy()
        host = hosts[0]
        cluster = host.parent
        datacenter = cluster.parent
        while not isinstance(datacenter, vim.Datacenter):
            datacenter = datacenter.parent
        self.name = "oc-sm-%s" % uuid.uuid4().hex[:8]
        spec = vim.vm.ConfigSpec(name=self.name, numCPUs=2, memoryMB=VM_MEMORY_MB, guestId="otherGuest64",
                                 files=vim.vm.FileInfo(vmPathName="[%s]" % host.datastore[0].name))
        self.wait(datacenter.vmFolder.CreateVM_Task(config=spec, pool=cluster.resourcePool, host=host))
        view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
        try:
            self.vm = [v for v in view.view if v.name == self.name][0]
        finally:
            view.Destroy()
        if self.vm.runtime.powerState != "poweredOn":
            self.wait(self.vm.PowerOnVM_Task())
        self.cpu_capacity = 2 * host.summary.hardware.cpuMhz
        self.found = self.allocation()

    def allocation(self):
        """The flat fields the runner manages, as vSphere reports them (the
        number of shares only where the level is custom)."""
        config = self.vm.config
        out = {rsv.LOCKED: bool(config.memoryReservationLockedToMax)}
        for resource, info in (("cpu", config.cpuAllocation), ("memory", config.memoryAllocation)):
            out[resource + ".reservation"] = info.reservation
            out[resource + ".limit"] = info.limit
            level = str(info.shares.level) if info.shares is not None and info.shares.level else None
            out[resource + ".shares_level"] = level
            out[resource + ".shares"] = info.shares.shares if level == "custom" else None
        return out

    def change_version(self):
        return self.vm.config.changeVersion

    def record(self):
        content = self.si.RetrieveContent()
        keys = [f.key for f in content.customFieldsManager.field or [] if f.name == rsv.DEFAULT_ATTRIBUTE]
        values = [v.value for v in self.vm.customValue or [] if v.key in keys]
        return values[0] if values else ""

    def foreign_set(self, fields):
        """A foreign writer: one reconfigure with whole allocations (as the
        vSphere client sends them), the fields given changed."""
        vim = self.vim
        now = dict(self.allocation(), **fields)
        spec = vim.vm.ConfigSpec()
        for resource in ("cpu", "memory"):
            level = now[resource + ".shares_level"]
            shares = vim.SharesInfo(level=level, shares=now[resource + ".shares"] or 0) if level else None
            setattr(spec, resource + "Allocation", vim.ResourceAllocationInfo(
                reservation=now[resource + ".reservation"], limit=now[resource + ".limit"], shares=shares))
        self.wait(self.vm.ReconfigVM_Task(spec))

    def reset(self):
        if self.allocation() != self.found:
            self.foreign_set(self.found)
        if self.record():
            content = self.si.RetrieveContent()
            key = [f.key for f in content.customFieldsManager.field if f.name == rsv.DEFAULT_ATTRIBUTE][0]
            content.customFieldsManager.SetField(entity=self.vm, key=key, value="")

    def close(self):
        from pyVim.connect import Disconnect

        try:
            if self.vm.runtime.powerState == "poweredOn":
                self.wait(self.vm.PowerOffVM_Task())
            self.wait(self.vm.Destroy_Task())
        finally:
            Disconnect(self.si)


@contextlib.contextmanager
def vsphere_env(lab):
    env = VsphereEnv(lab)
    try:
        yield env
    finally:
        env.close()


def _limit_below(values, resource):
    limit, reservation = values[resource + ".limit"], values[resource + ".reservation"]
    return limit not in (None, UNLIMITED) and reservation is not None and limit < reservation


def planned_fields(current, desired):
    """The fields a reconfigure changes to reach `desired` (only fields that
    differ; a number of shares counts only under the custom level, and
    travels with its level)."""
    changed = {}
    for field, value in desired.items():
        resource = field.split(".")[0]
        if field.endswith(".shares"):
            level = desired.get(resource + ".shares_level", current[resource + ".shares_level"])
            if level == "custom" and current[field] != value:
                changed[field] = value
        elif current[field] != value:
            changed[field] = value
    for resource in rsv.RESOURCES:
        if resource + ".shares" in changed and resource + ".shares_level" not in changed:
            changed[resource + ".shares_level"] = desired.get(resource + ".shares_level",
                                                              current[resource + ".shares_level"])
    return changed


def vcsim_after(current, changed):
    """The allocation vcsim holds after the module's reconfigure of
    `changed`: the module sends the whole allocation (as read, with the
    changes) of a resource it writes, so every member is kept although vcsim
    takes what is sent as the whole allocation; the number of a named shares
    level is vSphere's own (read as None)."""
    after = dict(current, **changed)
    for resource in rsv.RESOURCES:
        if after[resource + ".shares_level"] != "custom":
            after[resource + ".shares"] = None
    return after


def _named_levels(prior):
    """A record's prior values without the number of shares of a named
    level (low, normal, high): vSphere derives that number itself."""
    out = dict(prior)
    for resource in rsv.RESOURCES:
        if out.get(resource + ".shares_level") != "custom" and resource + ".shares_level" in out:
            out[resource + ".shares"] = None
    return out


class VsphereMachine(LabMachine):
    """Reserve (CPU and memory reservations, a CPU limit, memory shares),
    restore (plainly, or guarded by the changeVersion its caller last saw)
    and foreign reconfigures of the same fields, on one VM.

    Model: `prior`, the record's values from before the first change of each
    field (None while there is no record); `current`, what the VM holds, as
    vcsim holds it (vcsim_after); `seen`, the changeVersion after the
    collection's last write."""

    def __init__(self):
        super(VsphereMachine, self).__init__()
        self.env.reset()
        self.current = dict(self.env.found)
        self.prior = None
        self.seen = self.env.change_version()

    def run(self, **options):
        """The runner as plugins/modules/vsphere_vm_reservation.py builds and calls it."""
        lab = self.env.lab
        params = dict(vms=[self.env.name], uuids=None, moids=None, folders=None, clusters=None, state="present",
                      cpu=None, memory=None, memory_reservation_locked_to_max=None, change_versions={},
                      attribute=rsv.DEFAULT_ATTRIBUTE, reason="state machine", requested_by=REQUESTER,
                      parallel_tasks=16)
        params.update(options)
        request = rsv.check_request(params, False)
        client = VsphereClient(lab["VMWARE_HOST"], lab["VMWARE_USER"], lab["VMWARE_PASSWORD"], int(lab["VMWARE_PORT"]),
                               False)
        try:
            results = ReservationRunner(client, request, now=utc_now(), requested_by=REQUESTER).run()
        finally:
            client.close()
        assert len(results) == 1, results
        self.last = results[0]
        return results[0]

    @rule(cpu_reservation=st.sampled_from([None, 0, 250, 1000]),
          cpu_limit=st.sampled_from([None, UNLIMITED, 1500, 3000]),
          memory_reservation=st.sampled_from([None, 0, 32, 64]),
          memory_shares=st.sampled_from([None, "low", "high", 1500]))
    def reserve(self, cpu_reservation, cpu_limit, memory_reservation, memory_shares):
        cpu = dict((k, v) for k, v in (("reservation", cpu_reservation), ("limit", cpu_limit)) if v is not None)
        memory = {} if memory_reservation is None else {"reservation": memory_reservation}
        if isinstance(memory_shares, int):
            memory.update(shares_level="custom", shares=memory_shares)
        elif memory_shares:
            memory["shares_level"] = memory_shares
        desired = dict(("cpu." + k, v) for k, v in cpu.items())
        desired.update(("memory." + k, v) for k, v in memory.items())
        if not desired or _limit_below(dict(self.current, **desired), "cpu"):
            return
        result = self.run(cpu=cpu or None, memory=memory or None)
        assert not result.get("failed"), result
        changed = planned_fields(self.current, desired)
        if changed:
            prior = dict(self.prior or {})
            for field in changed:
                prior.setdefault(field, self.current[field])
                if field.endswith(".shares_level"):
                    number = field.replace(".shares_level", ".shares")
                    prior.setdefault(number, self.current[number])
            self.prior = prior
        self.current = vcsim_after(self.current, changed)
        self.seen = self.env.change_version()

    def expect_restored(self, result):
        assert not result.get("failed"), result
        if self.prior is not None:
            desired = dict((f, v) for f, v in self.prior.items() if v is not None)
            for resource in rsv.RESOURCES:
                if desired.get(resource + ".shares_level") not in (None, "custom"):
                    desired.pop(resource + ".shares", None)
            self.current = vcsim_after(self.current, planned_fields(self.current, desired))
        self.prior = None
        self.seen = self.env.change_version()

    @rule()
    def restore(self):
        self.expect_restored(self.run(state="restored"))

    @rule()
    def restore_compare_and_swap(self):
        """A restore guarded by the changeVersion its caller last saw: after a
        foreign reconfigure it is refused, saying so, and nothing is written."""
        stale = self.env.change_version() != self.seen
        result = self.run(state="restored", change_versions={self.env.name: self.seen})
        if stale:
            assert result.get("failed") and result.get("field") == "change_versions", result
            assert "changed since it was read" in result["msg"], result
        else:
            self.expect_restored(result)

    @rule(field=st.sampled_from(["cpu.reservation", "cpu.limit", "memory.reservation", "memory.shares_level"]),
          data=st.data())
    def foreign_edit(self, field, data):
        """Someone else reconfigures one field, sending the VM's whole
        allocation as read (so vcsim keeps the others)."""
        choices = {"cpu.reservation": [0, 100, 500], "cpu.limit": [UNLIMITED, 2000, 4000],
                   "memory.reservation": [0, 16, 48], "memory.shares_level": ["normal", "low", "high"]}[field]
        change = {field: data.draw(st.sampled_from(choices))}
        if field == "memory.shares_level":
            change["memory.shares"] = None
        after = dict(self.current, **change)
        if _limit_below(after, "cpu"):
            return
        self.env.foreign_set(change)
        self.current = after

    @invariant()
    def allocation_as_modelled(self):
        seen = self.env.allocation()
        assert seen == self.current, (seen, self.current, self.last)

    @invariant()
    def record_parseable_and_exact(self):
        record = rsv.decode_record(self.env.record())
        if self.prior is None:
            assert record is None, (record, self.last)
        else:
            assert record is not None, (self.prior, self.last)
            assert _named_levels(record["prior"]) == _named_levels(self.prior), (record, self.prior, self.last)


MACHINES = {"libvirt": LibvirtMachine, "kubernetes": K8sMachine, "vsphere": VsphereMachine}


@contextlib.contextmanager
def platform_env(platform, lab, guest="oc-lab-idle-1"):
    """The environment of one platform's machine, bound to the machine class."""
    opened = {"libvirt": lambda: libvirt_env(lab["OVERCOMMIT_LIBVIRT_URI"], guest),
              "kubernetes": lambda: k8s_env(lab["OVERCOMMIT_KUBECONFIG_ADMIN"]),
              "vsphere": lambda: vsphere_env(lab)}[platform]()
    with opened as env:
        MACHINES[platform].env = env
        try:
            yield env
        finally:
            MACHINES[platform].env = None
