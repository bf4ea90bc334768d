"""VirtualMachines on the lab's real KubeVirt (`tests/testbed/lab up
kubevirt`): virt-controller renders each VMI's virt-launcher pod, the lab
node's kubelet runs it, and virt-handler has the launcher start QEMU (TCG)
on a boot-sector guest that spins its one vCPU or halts. Nothing here stands
in for a KubeVirt component: the tests create VirtualMachines and read what
KubeVirt and the kernel report. CPU is measured where the kubelet puts it,
the compute container's cgroup, which holds QEMU."""

import os
import uuid

from kubernetes import client
from kubernetes.client.rest import ApiException

import pod_cgroup
import seed_kubevirt
from polling import wait_for

GROUP, VERSION = "kubevirt.io", "v1"
COMPUTE = "compute"
# Boot sectors: `jmp $` spins one vCPU; `cli; hlt` halts it for good;
# "until_stopped" (until_stopped.s) spins every vCPU until the disk's second
# sector starts with a byte other than 0 (stop_guest writes it), reading that
# sector through the BIOS after every 2^24 turns of its loop, then halts
# them all: a tenant's job that ends.
PROGRAMS = {"busy": b"\xeb\xfe", "idle": b"\xfa\xf4\xeb\xfd", "until_stopped": bytes.fromhex(
        "fa31c08ed88ec08ed0bc007c8816fd7dc606007e00be967cbf0080b90f00f3a40f0116b87c0f20c00c010f22c0bb0800"
        "8ee324fe0f22c031db8ee366bb0003e0fe646766c70300450c00e83e00646766c70308460c00e83200646766c7030846"
        "0c00fbb80102b9020030f68a16fd7dbb007ecd13803e007e00750c66b900000001664975fcebdcfaf4ebfc66b9000010"
        "00664975fcc331c08ed8803e007e0074f9faf4ebfc8d74000000000000000000ffff00000092cf000f00a87c0000")}
# "light" wakes at each tick of a 100 Hz timer and counts 1.2 million loops
# down before it halts again (the lab's duty guest, bench/lab_guests.py):
# about half a CPU on the lab's machine alone, the same work every tick
# whatever the host does, so it waits when the host's CPUs are busy.
#     cli; PIT channel 0 at 100 Hz; sti
#   tick: hlt; mov ecx,1200000; loop: dec ecx; jnz loop; jmp tick
PROGRAMS["light"] = bytes.fromhex("fab036e643b09ce640b02ee640fbf466b9") + (1200000).to_bytes(4, "little") + \
    bytes.fromhex("664975fcebf3")
STOP_FLAG_OFFSET = 512
DISK_BYTES = 1 << 20
# Seconds a CPU rate is measured over.
RATE_SECONDS = 3.0
# From a VirtualMachine's creation to its QEMU running: the launcher pod's
# start, virt-handler's sync and QEMU's, on two busy cores.
START_SECONDS = 180


def write_disk(path, program):
    """A raw disk whose boot sector runs `program`, padded to a MiB: KubeVirt
    gives QEMU its disks with O_DIRECT, whose reads must be whole blocks of
    the file system, and stops the VM on a read error."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    code = PROGRAMS[program]
    with open(path, "wb") as disk:
        disk.write(code + bytes(510 - len(code)) + b"\x55\xaa" + bytes(DISK_BYTES - 512))


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
        write_disk(disk, program)
        body = seed_kubevirt.vm_manifest(name, disk, self.taint, namespace=self.namespace, labels=labels,
                                         run_strategy="Always" if start else "Halted", cores=cores,
                                         cpu_request=cpu_request)
        made = self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, "virtualmachines", body)
        self.made.append((name, made["metadata"]["uid"]))
        if start and wait:
            self.wait_running(name)
        return name

    def stop_guest(self, name):
        """Ends the work of an "until_stopped" guest: it halts at its next read of the flag."""
        fd = os.open(os.path.join(self.disks, name, "disk.img"), os.O_WRONLY)
        try:
            os.pwrite(fd, b"\x01", STOP_FLAG_OFFSET)
            os.fsync(fd)
        finally:
            os.close(fd)

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
