"""The VirtualMachines a test makes on the lab's real KubeVirt
(tests/testbed/lab_kubevirt.py makes, starts and reads them). Nothing here
stands in for a KubeVirt component: the tests create VirtualMachines and
read what KubeVirt and the kernel report."""

import os
import uuid

import boot_sectors
from lab_kubevirt import LabKubeVirt

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


class RealKubeVirt(LabKubeVirt):
    """The VirtualMachines a test makes, each named afresh, deleted by
    cleanup()."""

    def __init__(self, api_client, lab):
        super(RealKubeVirt, self).__init__(api_client, lab["OVERCOMMIT_KUBEVIRT_NAMESPACE"],
                                           lab["OVERCOMMIT_KUBEVIRT_DISKS"], lab["OVERCOMMIT_LAB_NODE_TAINT"])
        self.node = lab["OVERCOMMIT_LAB_NODE"]
        self.made = []

    def vm(self, program="busy", labels=None, start=True, cores=1, cpu_request=None, wait=True):
        """A new VirtualMachine (LabKubeVirt.create); started, and with `wait`
        returns once its VMI runs QEMU (wait_running waits for VMs created
        side by side)."""
        name = "oc-kv-" + uuid.uuid4().hex[:8]
        self.made.append((name, self.create(name, program, labels=labels, start=start, cores=cores,
                                            cpu_request=cpu_request)))
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

    def cleanup(self):
        """Deletes the VMs this made, and what KubeVirt kept of their starts."""
        self.delete([name for name, _uid in self.made], uids=[uid for _name, uid in self.made])
        self.made = []
