"""The lab demo's KubeVirt VM, on the lab's real KubeVirt (`lab up` starts
it): a VirtualMachine of 2 vCPUs whose guest spins both (boot_sectors'
until_stopped, never stopped), for which virt-controller renders a
virt-launcher pod and in which virt-handler has QEMU (TCG) started.
`restart` stops and starts it, as `virtctl restart` would (virt-api, which
serves that, does not run in the lab): a new VMI and a new launcher pod.
`measure` prints the CPU the compute container, which holds QEMU, used over
a few seconds, from its cgroup, once the node runs it with the limit of the
pod's spec.

usage: demo_kubevirt.py up|restart|measure|down KUBECONFIG [NAME]
"""

import os
import sys
import time

from kubernetes import client, config
from kubernetes.client.rest import ApiException

import boot_sectors
import pod_cgroup
import seed_kubevirt

GROUP, VERSION = "kubevirt.io", "v1"
NAMESPACE = os.environ.get("OVERCOMMIT_KUBEVIRT_NAMESPACE", "kubevirt-lab")
NODE = os.environ.get("OVERCOMMIT_LAB_NODE", "oc-lab-node")
TAINT = os.environ.get("OVERCOMMIT_LAB_NODE_TAINT", "overcommit.test/lab-node")
DISKS = os.environ.get("OVERCOMMIT_KUBEVIRT_DISKS", "")
VCPUS = 2
SECONDS = 3.0
# From a VirtualMachine's start to QEMU running in its launcher, on two busy cores.
START_SECONDS = 180


def vmi(custom, name):
    try:
        return custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "virtualmachineinstances", name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def running_launcher(core, custom, name):
    """The VMI's running launcher pod, or None."""
    found = vmi(custom, name)
    if not found or found.get("status", {}).get("phase") != "Running":
        return None
    active = found["status"].get("activePods") or {}
    pods = core.list_namespaced_pod(NAMESPACE, label_selector="vm.kubevirt.io/name=%s" % name).items
    return next((p for p in pods if p.metadata.uid in active and p.status.phase == "Running"), None)


def wait(what, check, seconds):
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            sys.exit("%s: not after %d s" % (what, seconds))
        time.sleep(1)


def wait_running(api_client, name, other_than=None):
    core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)

    def started():
        pod = running_launcher(core, custom, name)
        return pod if pod is not None and pod.metadata.name != other_than else None

    pod = wait("VM %s/%s running in a launcher pod" % (NAMESPACE, name), started, START_SECONDS)
    print("VM %s/%s runs as VMI uid %s in launcher pod %s on %s"
          % (NAMESPACE, name, vmi(custom, name)["metadata"]["uid"], pod.metadata.name, NODE))
    return pod


def up(api_client, name):
    disk = os.path.join(DISKS, name, "disk.img")
    boot_sectors.write_disk(disk, "until_stopped", 1 << 20)
    client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, "virtualmachines",
        seed_kubevirt.vm_manifest(name, disk, TAINT, namespace=NAMESPACE, labels={"app": "demo"}, cores=VCPUS))
    wait_running(api_client, name)


def set_run_strategy(api_client, name, strategy):
    client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, "virtualmachines", name, {"spec": {"runStrategy": strategy}})


def restart(api_client, name):
    core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
    old = running_launcher(core, custom, name)
    set_run_strategy(api_client, name, "Halted")
    wait("VM %s/%s stopped" % (NAMESPACE, name), lambda: vmi(custom, name) is None, 120)
    set_run_strategy(api_client, name, "Always")
    wait_running(api_client, name, other_than=old.metadata.name if old else None)


def measure(api_client, name):
    """Prints the CPU the VM's compute container uses, once its node runs it
    with the limit of the pod's spec (a resize is applied on the kubelet's
    next sync of the pod)."""
    core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)

    def applied():
        pod = running_launcher(core, custom, name)
        if pod is None:
            return None
        spec = next(c for c in pod.spec.containers if c.name == "compute")
        status = next(s for s in pod.status.container_statuses or [] if s.name == "compute")
        running = ((status.resources and status.resources.limits) or {}).get("cpu")
        return (pod, status, running) if running == (spec.resources.limits or {}).get("cpu") else None

    pod, status, running = wait("the node running %s/%s with the CPU limit of its launcher's spec"
                                % (NAMESPACE, name), applied, 60)
    folder = pod_cgroup.container_cgroup(pod.metadata.uid, status.container_id, "cpuacct")
    if folder is None:
        sys.exit("no cgroup of container %s of pod %s" % (status.container_id, pod.metadata.name))
    rate = pod_cgroup.cpu_rate(folder, SECONDS)
    print("VM %s/%s (%d vCPUs) used %.2f CPU over %g s, measured in its compute container's cgroup (QEMU) on %s; "
          "the node runs it with a CPU limit of %s" % (NAMESPACE, name, VCPUS, rate, SECONDS, NODE, running or "none"))


def down(api_client, name):
    """Deletes the VM (virt-controller stops its VMI, the kubelet its launcher)
    and waits until its VMI is gone."""
    custom = client.CustomObjectsApi(api_client)
    try:
        uid = custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "virtualmachines", name)["metadata"]["uid"]
        custom.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "virtualmachines", name)
    except ApiException as exc:
        if exc.status != 404:
            raise
        return
    wait("VMI %s/%s gone" % (NAMESPACE, name), lambda: vmi(custom, name) is None, 120)
    # KubeVirt keeps a ControllerRevision of each start, which no garbage collector removes in the lab.
    apps = client.AppsV1Api(api_client)
    for revision in apps.list_namespaced_controller_revision(NAMESPACE).items:
        if any(ref.uid == uid for ref in revision.metadata.owner_references or []):
            apps.delete_namespaced_controller_revision(revision.metadata.name, NAMESPACE)


def main():
    action, kubeconfig = sys.argv[1], sys.argv[2]
    name = sys.argv[3] if len(sys.argv) > 3 else "demo-vm"
    api_client = config.new_client_from_config(config_file=kubeconfig)
    if action == "restart":
        restart(api_client, name)
    elif action == "measure":
        measure(api_client, name)
    else:
        down(api_client, name)
        if action == "up":
            up(api_client, name)


if __name__ == "__main__":
    main()
