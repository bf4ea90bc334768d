"""The lab's KubeVirt leaves nothing behind: `lab down kubevirt`, with a VM
running, ends its launcher pod and QEMU, stops virt-controller and
virt-handler, unmounts /pods, removes what it put outside the lab's folder
(virt-chroot, KubeVirt's runtime folders, the node labeller's files), the
launcher's CNI and the records of the VMs' starts, and puts back the schema-only CRDs the other tests use;
`lab up kubevirt` brings it back with the lab's VM running."""

import glob
import os

from kubernetes import client

from lab_logs import LAB_HOME, lab_command, lab_processes

BINARIES = ("virt-controller", "virt-handler")
# What lab up kubevirt puts outside the lab's folder.
OUTSIDE = ("/usr/bin/virt-chroot", "/pods", "/var/run/kubevirt", "/var/run/kubevirt-private",
           "/var/lib/kubevirt-node-labeller")


def processes():
    """(pid, name) of KubeVirt's processes: its components, and the launchers and QEMUs of KubeVirt's domains."""
    found = lab_processes(BINARIES)
    for proc in glob.glob("/proc/[0-9]*"):
        try:
            with open(os.path.join(proc, "cmdline"), "rb") as handle:
                args = handle.read().split(b"\0")
        except OSError:
            continue
        if args[0].endswith((b"virt-launcher", b"virt-launcher-monitor")):
            found.append((int(os.path.basename(proc)), args[0].decode()))
        elif any(arg.startswith(b"guest=kubevirt-lab_") for arg in args):
            found.append((int(os.path.basename(proc)), "qemu"))
    return found


def vmi_has_status_subresource(kube_admin):
    crd = client.ApiextensionsV1Api(kube_admin).read_custom_resource_definition("virtualmachineinstances.kubevirt.io")
    # The status subresource is an empty object when present.
    return [version.subresources is not None and version.subresources.status is not None
            for version in crd.spec.versions if version.storage][0]


def test_down_leaves_nothing_of_kubevirt_behind_and_up_brings_it_back(lab, kube_admin, kubevirt):
    vm = lab["OVERCOMMIT_KUBEVIRT_VM"]
    assert kubevirt.running_pod(vm) is not None
    assert {name for _pid, name in processes()} >= {"virt-controller", "virt-handler", "qemu"}
    # KubeVirt v1.8.4's VMIs have no status subresource; the schema-only CRDs of the other tests do.
    assert not vmi_has_status_subresource(kube_admin)
    cni = os.path.join(LAB_HOME, "state", "node", "cni", "net.d", "10-lab.conflist")
    assert os.path.exists(cni)

    lab_down = lab_command("down", "kubevirt")
    assert processes() == [], lab_down
    assert [path for path in OUTSIDE if os.path.exists(path)] == []
    assert not os.path.exists(cni)
    core = client.CoreV1Api(kube_admin)
    assert core.list_pod_for_all_namespaces(label_selector="kubevirt.io=virt-launcher").items == []
    # Nothing garbage-collects in the lab: the records of the VMs' starts go with them.
    assert client.AppsV1Api(kube_admin).list_namespaced_controller_revision(kubevirt.namespace).items == []
    assert vmi_has_status_subresource(kube_admin)

    lab_up = lab_command("up", "kubevirt")
    assert "KubeVirt is up" in lab_up
    assert kubevirt.running_pod(vm) is not None and kubevirt.qemu_pid(kubevirt.running_pod(vm))
    assert not vmi_has_status_subresource(kube_admin)


def test_node_overcommit_info_reads_the_cpu_manager_label_virt_handler_writes(lab, kube_admin, run_as, kubevirt):
    """virt-handler's node labeller marks whether the kubelet's static CPU
    manager can give VMs dedicated CPUs; KubeVirt v1.8 names the label
    kubevirt.io/cpumanager and still writes the older cpumanager. The lab's
    kubelet runs without the static policy: both say false."""
    node = lab["OVERCOMMIT_LAB_NODE"]
    labels = client.CoreV1Api(kube_admin).read_node(node).metadata.labels
    assert labels.get("kubevirt.io/cpumanager") == "false" and labels.get("cpumanager") == "false", labels
    result = run_as("admin", "node_overcommit_info", {"names": [node]})
    assert not result.get("failed"), result
    assert result["nodes"][0]["dedicated_cpus"] is False
