"""The lab demo's KubeVirt VM, on the lab's real KubeVirt (`lab up` starts
it): a VirtualMachine of 2 vCPUs whose guest spins both (boot_sectors'
until_stopped, never stopped), for which virt-controller renders a
virt-launcher pod and in which virt-handler has QEMU (KVM or TCG, as the lab decided) started.
`restart` stops and starts it, as `virtctl restart` would: a new VMI and a
new launcher pod. `measure` prints the CPU the compute container, which
holds QEMU, used over a few seconds, from its cgroup, once the node runs it
with the limit of the pod's spec.

usage: demo_kubevirt.py up|restart|measure|down KUBECONFIG [NAME]
"""

import os
import sys

from kubernetes import config

from lab_kubevirt import LabKubeVirt, RATE_SECONDS
from polling import wait_for

NODE = os.environ.get("OVERCOMMIT_LAB_NODE", "oc-lab-node")
VCPUS = 2
# From a resize of the launcher pod to the node running its compute container with it.
RESIZE_SECONDS = 60


def say_running(lab, name, pod):
    print("VM %s/%s runs as VMI uid %s in launcher pod %s on %s"
          % (lab.namespace, name, lab.vmi(name)["metadata"]["uid"], pod.metadata.name, NODE))


def up(lab, name):
    lab.delete([name], wait=True)
    lab.create(name, "until_stopped", labels={"app": "demo"}, cores=VCPUS)
    say_running(lab, name, lab.wait_running(name))


def restart(lab, name):
    say_running(lab, name, lab.restart(name))


def measure(lab, name):
    """Prints the CPU the VM's compute container uses, once its node runs it
    with the limit of the pod's spec (a resize is applied on the kubelet's
    next sync of the pod)."""
    def applied():
        limits = lab.cpu_limits(name)
        if limits is None or limits[0] != limits[1]:
            return None
        return limits[1] or "none"

    running = wait_for("the node running %s/%s with the CPU limit of its launcher's spec" % (lab.namespace, name),
                       applied, RESIZE_SECONDS, interval=1.0)
    print("VM %s/%s (%d vCPUs) used %.2f CPU over %g s, measured in its compute container's cgroup (QEMU) on %s; "
          "the node runs it with a CPU limit of %s"
          % (lab.namespace, name, VCPUS, lab.cpu_rate(name), RATE_SECONDS, NODE, running))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    action, kubeconfig = sys.argv[1], sys.argv[2]
    name = sys.argv[3] if len(sys.argv) > 3 else "demo-vm"
    actions = {"up": up, "restart": restart, "measure": measure,
               "down": lambda lab, name: lab.delete([name], wait=True)}
    if action not in actions:
        sys.exit(__doc__)
    lab = LabKubeVirt(config.new_client_from_config(config_file=kubeconfig),
                      os.environ.get("OVERCOMMIT_KUBEVIRT_NAMESPACE", "kubevirt-lab"),
                      os.environ.get("OVERCOMMIT_KUBEVIRT_DISKS", ""),
                      os.environ.get("OVERCOMMIT_LAB_NODE_TAINT", "overcommit.test/lab-node"))
    try:
        actions[action](lab, name)
    except AssertionError as exc:
        # What did not happen in time (polling.wait_for), said in one line.
        sys.exit(str(exc).splitlines()[0])


if __name__ == "__main__":
    main()
