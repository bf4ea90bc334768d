"""VirtualMachines on the lab's real KubeVirt (`tests/testbed/lab up
kubevirt`): virt-controller renders each VMI's virt-launcher pod, the lab
node's kubelet runs it, and virt-handler has the launcher start QEMU (TCG)
on a guest whose disk is one of boot_sectors' programs. Nothing here
stands in for a KubeVirt component: the tests create VirtualMachines and
read what KubeVirt and the kernel report. CPU is measured where the
kubelet puts it, the compute container's cgroup, which holds QEMU."""

import os
import uuid

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
# From a VirtualMachine's creation to its QEMU running: the launcher pod's
# start, virt-handler's sync and QEMU's, on two busy cores.
START_SECONDS = 180


# An inventory whose one hypervisor host stands for the lab node as a
# KubeVirt node (overcommit_libvirt false: its modules run by a Python
# without libvirt-python), as on a KubeVirt cluster.
NODE_INVENTORY = """
all:
  children:
    hypervisors:
      hosts:
        kubevirt-node:
          ansible_connection: local
          ansible_python_interpreter: /usr/bin/python3
          kubernetes_node: {node}
          overcommit_libvirt: false
    controllers:
      hosts:
        localhost:
          ansible_connection: local
          ansible_python_interpreter: "{{{{ ansible_playbook_python }}}}"
"""


def node_inventory(folder, node):
    """The path of NODE_INVENTORY for `node`, written in `folder`."""
    path = folder / "kubevirt-node.yml"
    path.write_text(NODE_INVENTORY.format(node=node))
    return str(path)


class RealKubeVirt(object):
    """The VirtualMachines a test makes on the lab's KubeVirt, deleted by
    cleanup()."""

    def __init__(self, api_client, lab):
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.namespace = lab["OVERCOMMIT_KUBEVIRT_NAMESPACE"]
        self.disks = lab["OVERCOMMIT_KUBEVIRT_DISKS"]
        self.node = lab["OVERCOMMIT_LAB_NODE"]
        self.taint = lab["OVERCOMMIT_LAB_NODE_TAINT"]
        self.made = []

    # --- VirtualMachines ---------------------------------------------------

    def vm(self, program="busy", labels=None, start=True, cores=1, cpu_request=None, wait=True):
        """A VirtualMachine of `cores` vCPUs booting `program` (the lab's own
        VM shape), sold `cpu_request` when given (else what KubeVirt derives
        from its vCPUs); started, and with `wait` returns once its VMI runs
        QEMU (wait_running waits for VMs created side by side)."""
        name = "oc-kv-" + uuid.uuid4().hex[:8]
        disk = os.path.join(self.disks, name, "disk.img")
        boot_sectors.write_disk(disk, program, DISK_BYTES)
        body = seed_kubevirt.vm_manifest(name, disk, self.taint, namespace=self.namespace, labels=labels,
                                         run_strategy="Always" if start else "Halted", cores=cores,
                                         cpu_request=cpu_request)
        made = self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, "virtualmachines", body)
        self.made.append((name, made["metadata"]["uid"]))
        if start and wait:
            self.wait_running(name)
        return name

    def noisy_pair(self, labels):
        """A noisy neighbour and its victim, started side by side: "noisy",
        three vCPUs all busy until stop_guest (sold 0.3 CPU, KubeVirt's
        default cpuAllocationRatio of 10), and one busy vCPU sold 0.2 CPU.
        The kubelet makes what each was sold its pod's CPU weight: the kernel
        shares the machine's two cores out 3:2, the victim waits for a fifth
        of what it wants. Returns (noisy, victim) once both run QEMU."""
        noisy = self.vm("until_stopped", labels=labels, cores=3, wait=False)
        victim = self.vm("busy", labels=labels, cpu_request="200m", wait=False)
        for name in (noisy, victim):
            self.wait_running(name)
        return noisy, victim

    def stop_guest(self, name):
        """Ends the work of an "until_stopped" guest: it halts at its next read of the flag."""
        boot_sectors.stop(os.path.join(self.disks, name, "disk.img"))

    def read(self, plural, name):
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, name)

    def vmi(self, name):
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

        return wait_for("VM %s running QEMU in a new launcher pod" % name if other_than else
                        "VM %s running QEMU" % name, ready, START_SECONDS, interval=1.0)

    def annotations(self, name):
        """The VMI's annotations, where the brake keeps its record."""
        return self.read("virtualmachineinstances", name)["metadata"].get("annotations") or {}

    def events(self, name, kind="VirtualMachineInstance"):
        """[(type, reason, message, reporting component)] of the Events about
        the object, oldest first, through core v1: KubeVirt's own Events have
        no eventTime, which the typed events.k8s.io client refuses."""
        found = self.core.list_namespaced_event(
            self.namespace, field_selector="involvedObject.name=%s,involvedObject.kind=%s" % (name, kind)).items
        found.sort(key=lambda e: e.event_time or e.first_timestamp or e.metadata.creation_timestamp)
        return [(e.type, e.reason, e.message, e.reporting_component) for e in found]

    def set_run_strategy(self, name, strategy):
        self.custom.patch_namespaced_custom_object(GROUP, VERSION, self.namespace, "virtualmachines", name,
                                                   {"spec": {"runStrategy": strategy}})

    def restart(self, name):
        """Stops the VM and starts it again, as `virtctl restart` without
        virt-api: its VMI and launcher pod are new; returns the new pod."""
        old = self.running_pod(name)
        self.set_run_strategy(name, "Halted")
        wait_for("VM %s stopped" % name, lambda: self.vmi(name) is None, 120, interval=1.0)
        self.set_run_strategy(name, "Always")
        return self.wait_running(name, other_than=old.metadata.name if old else None)

    def cleanup(self):
        """Deletes the VMs, and the ControllerRevisions KubeVirt kept of their
        starts (no garbage collector runs in the lab to follow their owner)."""
        uids = set(uid for _name, uid in self.made)
        for name, _uid in self.made:
            try:
                self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, "virtualmachines", name)
            except ApiException as exc:
                if exc.status != 404:
                    raise
        apps = client.AppsV1Api(self.core.api_client)
        for revision in apps.list_namespaced_controller_revision(self.namespace).items:
            if any(ref.uid in uids for ref in revision.metadata.owner_references or []):
                apps.delete_namespaced_controller_revision(revision.metadata.name, self.namespace)
        self.made = []

    # --- the compute container, where QEMU runs --------------------------------

    def compute_status(self, name):
        pod = self.running_pod(name)
        assert pod is not None, "VM %s has no running launcher pod" % name
        return pod, next(s for s in pod.status.container_statuses if s.name == COMPUTE)

    def compute_limits(self, name):
        """The compute container's limits as its running launcher pod's spec says."""
        pod, _status = self.compute_status(name)
        container = next(c for c in pod.spec.containers if c.name == COMPUTE)
        return container.resources.limits or {}

    def cgroup(self, name, controller):
        return pod_cgroup.compute_cgroup(*self.compute_status(name), controller=controller)

    def qemu_pid(self, pod):
        """The pid of the QEMU process in the pod's compute container, or None."""
        status = next((s for s in pod.status.container_statuses or [] if s.name == COMPUTE), None)
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
