"""A closed-loop cycle on real KubeVirt: playbooks/closed_loop.yml with
kubevirt=true contains a noisy VirtualMachine on the lab's real node, from
virt-handler's own kubevirt_vmi_* series in the lab's Prometheus (read
through an HTTPS front that wants a bearer token, as a Prometheus behind an
authenticating proxy is read), once when two cycles run at the same time,
and lets it go once its work has ended.

Two VMs spin on the machine's two cores with nothing else loading it:
"noisy", three vCPUs all busy, sold 0.3 CPU (KubeVirt's default
cpuAllocationRatio of 10), and "victim", one busy vCPU sold 0.2 CPU. The
kubelet turns what each was sold into its pod's CPU weight, so the kernel
already shares the host out 3:2 and the victim waits for a fifth of what it
wants; the noisy VM takes four times what it was sold. Why the victim is
sold 0.2 CPU: sold 0.1, it runs flat out at twice its entitlement, and the
policy took it for the culprit in a cycle where the noisy VM's measured
want dipped (a miss docs/policy.md explains); sold 0.8, it hardly waits, as
the kernel's weights keep it whole. The tenants' CPU is measured at their
compute containers before and under the brake, in the same test. The noisy
guest's work ends when told (a flag on its disk), so the release is that of
a tenant whose job finished.

The cycles run on an inventory whose one hypervisor host stands for the
lab node (real_kubevirt.NODE_INVENTORY), as on a KubeVirt cluster. Each cycle takes two samples (a
victim counts after waiting in 2 of the last 3); the policy's calm period
and cooldown are shortened to 0 s, as an operator may set them."""

import json
import os
import subprocess
import sys
import time
import uuid

import pytest

from cycle_summary import summary_in
import playbook_forkserver
import pod_cgroup
from kubevirt_fleet import PREFIX, cpus
from measure import TOLERANCE_CPUS
from prometheus_front import PrometheusFront
from prometheus_window import wait_for_window_after
from real_kubevirt import node_inventory
from run_module import ROOT
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.usage import USAGE_METRIC

# Seconds of each rate Prometheus is asked for (5 of its 2-s scrapes of
# virt-handler), and of each CPU rate the test measures at the cgroups.
WINDOW, RATE_SECONDS = 10, 6
POLICY = {"relax_calm_seconds": 0, "cooldown_seconds": 0, "relax_step_share": 0.2, "pressure_relax": 100.0}


def settle(lab, namespace, names, since, window=WINDOW):
    """Until Prometheus' rate window of the VMs' CPU holds only samples
    virt-handler gave after `since` (a unix time)."""
    wait_for_window_after(lab["OVERCOMMIT_PROMETHEUS_URL"], '%s{namespace="%s",name=~"%s"}'
                          % (USAGE_METRIC, namespace, "|".join(names)), since, window)


class Cycles(object):
    """Runs playbooks/closed_loop.yml on the VMs of one selector, each run's summary kept."""

    def __init__(self, lab, folder, selector, node, prometheus):
        self.lab, self.folder, self.selector, self.prometheus = lab, folder, selector, prometheus
        self.inventory = node_inventory(folder, node)

    def command(self, **extra):
        """(argv, the folder the cycle writes its summary to) of one cycle."""
        cycle_dir = self.folder / ("cycle-%d" % len([p for p in os.listdir(str(self.folder)) if p.startswith("cycle")]))
        cycle_dir.mkdir()
        extra_vars = dict({"samples": 2, "interval": 2, "policy": POLICY, "kubevirt": True,
                           "kubevirt_namespace": self.lab["OVERCOMMIT_KUBEVIRT_NAMESPACE"],
                           "kubevirt_selector": self.selector, "kubevirt_window": WINDOW,
                           "cycle_dir": str(cycle_dir)}, **self.prometheus)
        extra_vars.update(extra)
        return [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(self.inventory),
                os.path.join(ROOT, "playbooks", "closed_loop.yml"), "-e", json.dumps(extra_vars)], cycle_dir

    def environment(self):
        return dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1",
                    K8S_AUTH_KUBECONFIG=self.lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])

    def run(self, **extra):
        """One cycle: (its summary, its output)."""
        argv, cycle_dir = self.command(**extra)
        completed = playbook_forkserver.run(argv, env=self.environment())
        assert completed.returncode == 0, completed.stdout[-5000:] + completed.stderr[-2000:]
        return summary_in(cycle_dir), completed.stdout

    def run_together(self, count):
        """`count` cycles started at the same time: their summaries."""
        started = []
        for _index in range(count):
            argv, cycle_dir = self.command()
            process = subprocess.Popen(argv, env=self.environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True)
            started.append((cycle_dir, process))
        summaries = []
        for cycle_dir, process in started:
            output = process.communicate(timeout=600)[0]
            assert process.returncode == 0, output[-5000:]
            summaries.append(summary_in(cycle_dir))
        return summaries


def rates(kubevirt, names):
    """{name: CPUs its compute container used} over the same seconds."""
    folders = dict((name, kubevirt.cgroup(name, "cpuacct")) for name in names)
    return pod_cgroup.cpu_rates(folders, RATE_SECONDS)


def test_a_cycle_contains_a_noisy_kubevirt_vm_for_its_victim_and_releases_it_exactly_when_its_work_ends(
        lab, tmp_path, kubevirt, lab_node_kept, record_property):
    run = {"overcommit.test/cycle": uuid.uuid4().hex[:8]}
    noisy, victim = kubevirt.noisy_pair(run)
    key, victim_key = ("kubevirt/%s/%s" % (kubevirt.namespace, name) for name in (noisy, victim))
    assert kubevirt.cfs_quota(noisy) is None and kubevirt.compute_limits(noisy).get("cpu") is None
    both_running = time.time()
    before = rates(kubevirt, [noisy, victim])
    settle(lab, kubevirt.namespace, [noisy, victim], both_running)

    token = "oc-test-" + run["overcommit.test/cycle"]
    with PrometheusFront(lab["OVERCOMMIT_PROMETHEUS_URL"], str(tmp_path), token) as front:
        cycles = Cycles(lab, tmp_path, "overcommit.test/cycle=" + run["overcommit.test/cycle"], lab_node_kept,
                        {"prometheus_url": front.url, "prometheus_token": token,
                         "prometheus_ca_cert": front.cert_path})
        # Two cycles at once (two runners of the loop): one applies, the other
        # finds the VM changed under it. A cycle whose last sample catches the
        # noisy VM's measured want in a dip decides nothing; the next pair
        # contains it. Never the victim.
        seen = []
        for attempt in range(3):
            summaries = cycles.run_together(2)
            seen.append([(s["actions"], s["notes"]) for s in summaries])
            if any(s["actions"] for s in summaries):
                break
        record_property("attempts", attempt + 1)
        applied = [s for s in summaries if key in s["outcome"]["applied"]]
        assert len(applied) == 1, (before, seen, [s["outcome"] for s in summaries])
        summary, other = applied[0], [s for s in summaries if s is not applied[0]][0]
        actions = [(a["action"], a["object"], a["rule"]) for a in summary["actions"]]
        assert actions == [("throttle", key, "contain")], (before, seen, summary["skipped"], summary["lines"])
        assert not other["actions"] or key in other["outcome"]["conflict"] + other["outcome"]["refused"], other
        cap = summary["actions"][0]["cpus"]
        # The kernel holds QEMU's container to the cap the cycle chose, in place.
        assert kubevirt.cfs_quota(noisy) == pytest.approx(cap)
        annotations = kubevirt.annotations(noisy)
        assert cpus(annotations[PREFIX + "cpu-limit"]) == pytest.approx(cap)
        record = json.loads(annotations[PREFIX + "cpu-limit-throttle"])
        assert record["plan"] == summary["cycle"] and record["reason"].startswith("contain: ")
        applied = [e for e in kubevirt.events(noisy) if e[1] == "CPULimitApplied"]
        assert len(applied) == 1 and applied[0][0] == "Normal", kubevirt.events(noisy)
        assert PREFIX + "cpu-limit" not in kubevirt.annotations(victim) and kubevirt.cfs_quota(victim) is None

        # What the tenants got: the noisy VM is held to its cap; the victim loses nothing by it.
        # The cap lands near what the kernel's weights already give the noisy VM (about 1 CPU
        # against about 1.2; in one run 1.036 against 1.025), within two measurements' noise
        # of it, so how far it falls is not asked here: test_brake.py measures the brake
        # against the same VM's unthrottled rate.
        braked = rates(kubevirt, [noisy, victim])
        assert braked[noisy] <= cap + TOLERANCE_CPUS, (cap, before, braked)
        assert braked[victim] >= before[victim] - TOLERANCE_CPUS, (cap, before, braked)

        # The noisy tenant's work ends: the loop lets it go, exactly.
        # Its usage falls from its cap to nothing: a shorter window tells that apart.
        kubevirt.stop_guest(noisy)
        settle(lab, kubevirt.namespace, [noisy], time.time(), window=RATE_SECONDS)
        steps = []
        for _attempt in range(3):
            summary, output = cycles.run(kubevirt_window=RATE_SECONDS)
            steps += [(a["action"], a["rule"], a.get("cpus")) for a in summary["actions"] if a["object"] == key]
            assert victim_key not in [a["object"] for a in summary["actions"]], summary["actions"]
            if PREFIX + "cpu-limit" not in kubevirt.annotations(noisy):
                break
        assert steps and steps[-1][:2] == ("restore", "release"), (steps, output[-3000:])
    # Every query went through the front with the token, over TLS verified against its CA.
    assert front.queries and front.unauthorized == 0, (front.queries, front.unauthorized)
    # As documented: a pod's limit cannot be removed, so a launcher that had none gets its vCPUs
    # plus the default headroom of 1 CPU, which brakes nothing.
    assert kubevirt.compute_limits(noisy)["cpu"] == "4" and kubevirt.cfs_quota(noisy) == 4.0
    annotations = kubevirt.annotations(noisy)
    assert not [k for k in (PREFIX + "cpu-limit", PREFIX + "cpu-limit-throttle") if k in annotations], annotations
    # One Event for the throttle, one for each raise before the release, one for the restore.
    reasons = [e[1] for e in kubevirt.events(noisy) if e[1].startswith("CPULimit")]
    assert reasons == ["CPULimitApplied"] * len(steps) + ["CPULimitRestored"], kubevirt.events(noisy)
