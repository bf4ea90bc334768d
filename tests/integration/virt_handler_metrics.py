"""KubeVirt's VMI CPU metrics, served through the lab's real node_exporter
and scraped by its real Prometheus.

The lab has no virt-handler (no KubeVirt node agent runs here), so this
stands in for its metrics endpoint: a textfile of node_exporter's textfile
collector holding the same series virt-handler exports -
kubevirt_vmi_cpu_usage_seconds_total and, per vCPU,
kubevirt_vmi_vcpu_delay_seconds_total, with its name, namespace and node
labels - as counters that a thread advances at the rates a test sets. What
reads them (Prometheus' rate() through the collection's Prometheus client)
is what reads virt-handler's."""

import os
import threading
import time

# One file per test process: tests running side by side serve their own VMs.
FILE_NAME = "overcommit-test-kubevirt-vmi-%d.prom"
HEADER = """# HELP kubevirt_vmi_cpu_usage_seconds_total Total CPU time spent in all modes (sum of both vcpu and hypervisor usage).
# TYPE kubevirt_vmi_cpu_usage_seconds_total counter
# HELP kubevirt_vmi_vcpu_delay_seconds_total Amount of time spent by each vcpu waiting in the queue instead of running.
# TYPE kubevirt_vmi_vcpu_delay_seconds_total counter
"""


class VirtHandlerMetrics(object):
    def __init__(self, textfile_dir, tick=0.5):
        self.path = os.path.join(textfile_dir, FILE_NAME % os.getpid())
        self.tick = tick
        self.vms = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def set(self, namespace, name, node, cpus_used, steal_cpus=0.0, vcpus=1):
        """From now on the VM burns `cpus_used` CPUs and its vCPUs wait
        `steal_cpus` in all (spread over them)."""
        with self.lock:
            entry = self.vms.setdefault((namespace, name), {"usage": 0.0, "delay": [0.0] * vcpus})
            entry.update(node=node, cpus_used=cpus_used, steal_cpus=steal_cpus)

    def remove(self, namespace, name):
        with self.lock:
            self.vms.pop((namespace, name), None)

    def start(self):
        self._write()
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()
        self.thread.join(timeout=5)
        if os.path.exists(self.path):
            os.unlink(self.path)

    def _run(self):
        last = time.monotonic()
        while not self.stopping.wait(self.tick):
            now = time.monotonic()
            with self.lock:
                for entry in self.vms.values():
                    entry["usage"] += entry["cpus_used"] * (now - last)
                    share = entry["steal_cpus"] * (now - last) / len(entry["delay"])
                    entry["delay"] = [value + share for value in entry["delay"]]
            last = now
            self._write()

    def _write(self):
        lines = [HEADER]
        with self.lock:
            for (namespace, name), entry in sorted(self.vms.items()):
                labels = 'name="%s",namespace="%s",node="%s"' % (name, namespace, entry["node"])
                lines.append("kubevirt_vmi_cpu_usage_seconds_total{%s} %.6f\n" % (labels, entry["usage"]))
                for index, value in enumerate(entry["delay"]):
                    lines.append('kubevirt_vmi_vcpu_delay_seconds_total{id="%d",%s} %.6f\n' % (index, labels, value))
        # node_exporter may read at any moment: never a half-written file.
        partial = self.path + ".partial"
        with open(partial, "w") as handle:
            handle.write("".join(lines))
        os.rename(partial, self.path)
