"""VirtualMachines on the lab's real KubeVirt (`tests/testbed/lab up
kubevirt`), for the tests and the demo alike: virt-controller renders each
VMI's virt-launcher pod, the lab node's kubelet runs it, and virt-handler
has the launcher start QEMU (KVM or TCG, as the lab decided) on a guest whose disk is one of
boot_sectors' programs. Made, started, restarted and deleted through the
API as a user would (virt-api, which serves `virtctl`, does not run in the
lab); CPU is read where the kubelet puts it, the compute container's
cgroup, which holds QEMU."""

import os

from kubernetes import client
from kubernetes.client.rest import ApiException

import boot_sectors
import pod_cgroup
import seed_kubevirt
from polling import wait_for

GROUP, VERSION = "kubevirt.io", "v1"
COMPUTE = "compute"
DISK_BYTES = 1 << 20
# Seconds a CPU rate is measured over.
RATE_SECONDS = 3.0
# From a VirtualMachine's start to its QEMU running: the launcher pod's
# start, virt-handler's sync and QEMU's, on two busy cores.
START_SECONDS = 180
# From runStrategy Halted, or the VM's deletion, to its VMI gone.
STOP_SECONDS = 120


def compute_of(pod):
    """(spec, status or None) of a launcher pod's compute container."""
    spec = next(c for c in pod.spec.containers if c.name == COMPUTE)
    return spec, next((s for s in pod.status.container_statuses or [] if s.name == COMPUTE), None)


class LabKubeVirt(object):
    """The lab's KubeVirt namespace and node, as `lab up` wrote them to lab.env."""

    def __init__(self, api_client, namespace, disks, taint):
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.namespace = namespace
        self.disks = disks
        self.taint = taint

    # --- VirtualMachines ---------------------------------------------------

    def disk(self, name):
        return os.path.join(self.disks, name, "disk.img")

    def create(self, name, program, labels=None, start=True, cores=1, cpu_request=None):
        """A VirtualMachine of `cores` vCPUs booting `program` (the lab's own
        VM shape), sold `cpu_request` when given (else what KubeVirt derives
        from its vCPUs); returns its uid without waiting for it to run."""
        boot_sectors.write_disk(self.disk(name), program, DISK_BYTES)
        body = seed_kubevirt.vm_manifest(name, self.disk(name), self.taint, namespace=self.namespace, labels=labels,
                                         run_strategy="Always" if start else "Halted", cores=cores,
                                         cpu_request=cpu_request)
        made = self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, "virtualmachines", body)
        return made["metadata"]["uid"]

    def read(self, plural, name):
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, name)

    def vmi(self, name):
        """The VM's VMI, or None."""
        try:
            return self.read("virtualmachineinstances", name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def running_pod(self, name):
        """The VMI's running launcher pod, or None."""
        vmi = self.vmi(name)
        if not vmi or vmi.get("status", {}).get("phase") != "Running":
            return None
        active = vmi["status"].get("activePods") or {}
        pods = self.core.list_namespaced_pod(self.namespace, label_selector="kubevirt.io=virt-launcher").items
        return next((pod for pod in pods if pod.metadata.uid in active and pod.status.phase == "Running"), None)

    def wait_running(self, name, other_than=None):
        """Until the VMI runs in a launcher pod (other than the pod named
        `other_than`) with QEMU in it; returns the pod."""
        def ready():
            pod = self.running_pod(name)
            if pod is None or pod.metadata.name == other_than:
                return None
            return pod if self.qemu_pid(pod) else None

        what = "VM %s/%s running QEMU" % (self.namespace, name) + (" in a new launcher pod" if other_than else "")
        try:
            return wait_for(what, ready, START_SECONDS, interval=1.0)
        except AssertionError as exc:
            raise AssertionError("%s; %s" % (exc, self.describe(name)))

    def describe(self, name):
        """Where the VM's start stands, for a failure's message."""
        vmi = self.vmi(name) or {}
        pods = self.core.list_namespaced_pod(self.namespace, label_selector="kubevirt.io=virt-launcher").items
        return "its VMI %s is %s; launcher pods: %s (virt-handler.log in the lab's logs says more)" % (
            vmi.get("metadata", {}).get("uid", "(none)"), vmi.get("status", {}).get("phase", "(no phase)"),
            ", ".join("%s %s" % (pod.metadata.name, pod.status.phase) for pod in pods
                      if pod.metadata.name.startswith("virt-launcher-%s-" % name)) or "none")

    def pod_gone(self, pod_name):
        try:
            self.core.read_namespaced_pod(pod_name, self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise
        return False

    def set_run_strategy(self, name, strategy):
        self.custom.patch_namespaced_custom_object(GROUP, VERSION, self.namespace, "virtualmachines", name,
                                                   {"spec": {"runStrategy": strategy}})

    def restart(self, name):
        """Stops the VM and starts it again, as `virtctl restart` would: its
        VMI and launcher pod are new; returns the new pod once QEMU runs.

        Starts again only once the old launcher pod is gone, not just its
        VMI. A restart in the lab once stalled for good: the new launcher ran
        but QEMU never started in it. The likeliest cause, read in
        virt-handler v1.7.0 (pkg/virt-handler/vm.go, `execute`): a new VMI
        seen while its name's old domain is still cached and the old launcher
        still answers is returned from without being queued again, and once
        the old VMI's cleanup has closed its notify pipe no event of the old
        domain's end comes to queue it."""
        old = self.running_pod(name)
        self.set_run_strategy(name, "Halted")
        wait_for("VM %s/%s stopped" % (self.namespace, name), lambda: self.vmi(name) is None, STOP_SECONDS,
                 interval=1.0)
        if old is not None:
            wait_for("VM %s/%s's old launcher pod %s gone" % (self.namespace, name, old.metadata.name),
                     lambda: self.pod_gone(old.metadata.name), STOP_SECONDS, interval=1.0)
        self.set_run_strategy(name, "Always")
        return self.wait_running(name, other_than=old.metadata.name if old else None)

    def delete(self, names, uids=(), wait=False):
        """Deletes the VMs (virt-controller stops their VMIs, the kubelet their
        launchers), and the ControllerRevisions KubeVirt kept of their starts,
        which no garbage collector removes in the lab: those of `uids` (of
        VMs maybe deleted already) and of the VMs still there; with `wait`,
        until their VMIs are gone."""
        uids = set(uids)
        for name in names:
            try:
                uids.add(self.read("virtualmachines", name)["metadata"]["uid"])
                self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, "virtualmachines", name)
            except ApiException as exc:
                if exc.status != 404:
                    raise
        for revision in self.apps.list_namespaced_controller_revision(self.namespace).items:
            if any(ref.uid in uids for ref in revision.metadata.owner_references or []):
                self.apps.delete_namespaced_controller_revision(revision.metadata.name, self.namespace)
        if wait:
            for name in names:
                wait_for("VMI %s/%s gone" % (self.namespace, name), lambda name=name: self.vmi(name) is None,
                         STOP_SECONDS, interval=1.0)

    # --- the compute container, where QEMU runs ------------------------------

    def compute_status(self, name):
        pod = self.running_pod(name)
        assert pod is not None, "VM %s/%s has no running launcher pod" % (self.namespace, name)
        return pod, compute_of(pod)[1]

    def compute_spec(self, name):
        """The compute container as the VM's running launcher pod's spec says."""
        return compute_of(self.compute_status(name)[0])[0]

    def compute_limits(self, name):
        """The compute container's limits as its running launcher pod's spec says."""
        return dict(self.compute_spec(name).resources.limits or {})

    def cpu_limits(self, name):
        """The compute container's CPU limit as its launcher pod's spec says
        and as the node runs it (its status: a resize shows there on the
        kubelet's next sync of the pod), from one read of the pod; None
        while no launcher pod runs."""
        pod = self.running_pod(name)
        if pod is None:
            return None
        spec, status = compute_of(pod)
        return ((spec.resources.limits or {}).get("cpu"),
                ((status and status.resources and status.resources.limits) or {}).get("cpu"))

    def cgroup(self, name, controller):
        return pod_cgroup.compute_cgroup(*self.compute_status(name), controller=controller)

    def qemu_pid(self, pod):
        """The pid of the QEMU process in the pod's compute container, or None."""
        status = compute_of(pod)[1]
        if status is None or not status.container_id:
            return None
        folder = pod_cgroup.container_cgroup(pod.metadata.uid, status.container_id, "cpuacct")
        if folder is None:
            return None
        with open(os.path.join(folder, "cgroup.procs")) as handle:
            pids = handle.read().split()
        for pid in pids:
            try:
                with open("/proc/%s/comm" % pid) as handle:
                    if handle.read().startswith("qemu-system"):
                        return int(pid)
            except OSError:
                continue
        return None

    def cpu_rate(self, name, seconds=RATE_SECONDS):
        """CPUs the VM's compute container (QEMU and KubeVirt's launcher) used over `seconds`."""
        return pod_cgroup.cpu_rate(self.cgroup(name, "cpuacct"), seconds)

    def cfs_quota(self, name):
        """The compute container's CFS quota in CPUs (None: none), as the kernel enforces it."""
        return pod_cgroup.cfs_quota(self.cgroup(name, "cpu"))
