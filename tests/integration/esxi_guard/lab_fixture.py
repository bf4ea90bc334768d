"""Throwaway ESXi node VMs and Kubernetes nodes for the esxi_guard tests and
molecule scenario: VMs created in the lab's vcsim on two hosts, one "hot"
(a 16-vCPU VM pushes its vCPU:core far above the others) and one "cool", and
Node objects that map to them the three ways the role knows (system UUID,
byte-swapped system UUID, vsphere:// provider ID, name), one that maps to
nothing, and pods bound to the hot node. The lab's own VMs and nodes are
never touched.

    python lab_fixture.py up RUN STATE.json     create, write what was made
    python lab_fixture.py down RUN              delete what RUN made (if anything)
"""

import json
import os
import ssl
import sys

from kubernetes import client, config
from kubernetes.client.rest import ApiException
from pyVim.connect import Disconnect, SmartConnect
from pyVmomi import vim

# Run as a script from its own folder too: the helper is one folder up.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from vsphere_task import wait_for_task  # noqa: E402

FIXTURE_LABEL = "overcommit.test/esxi-guard"
NAMESPACE = "lab"
HOT_VCPUS = 16
VM_MEMORY_MB = 128
NODE_INFO = {"machineID": "lab", "bootID": "lab", "kernelVersion": "6.1.0", "osImage": "lab",
             "containerRuntimeVersion": "containerd://2.0.0", "kubeletVersion": "v1.35.4", "kubeProxyVersion": "",
             "operatingSystem": "linux", "architecture": "amd64"}


def swapped(uuid):
    def swap(field):
        return "".join(reversed([field[i:i + 2] for i in range(0, len(field), 2)]))
    fields = uuid.split("-")
    return "-".join([swap(fields[0]), swap(fields[1]), swap(fields[2]), fields[3], fields[4]])


def vsphere():
    return SmartConnect(host=os.environ["VMWARE_HOST"], port=int(os.environ["VMWARE_PORT"]),
                        user=os.environ["VMWARE_USER"], pwd=os.environ["VMWARE_PASSWORD"],
                        sslContext=ssl._create_unverified_context())


def kube():
    return client.CoreV1Api(config.new_client_from_config(config_file=os.environ["OVERCOMMIT_KUBECONFIG_ADMIN"]))


def objects(si, kind):
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [kind], True)
    try:
        return list(view.view)
    finally:
        view.Destroy()


def vm_names(run):
    return dict((role, "oc-esxi-%s-%s" % (run, role)) for role in ("hot", "cool", "provider", "named"))


def create_vm(si, name, host, vcpus):
    cluster = host.parent
    datacenter = cluster.parent
    while not isinstance(datacenter, vim.Datacenter):
        datacenter = datacenter.parent
    spec = vim.vm.ConfigSpec(name=name, numCPUs=vcpus, memoryMB=VM_MEMORY_MB, guestId="otherGuest64",
                             files=vim.vm.FileInfo(vmPathName="[%s]" % host.datastore[0].name))
    wait_for_task(datacenter.vmFolder.CreateVM_Task(config=spec, pool=cluster.resourcePool, host=host))
    vm = [v for v in objects(si, vim.VirtualMachine) if v.name == name][0]
    if vm.runtime.powerState != "poweredOn":
        wait_for_task(vm.PowerOnVM_Task())
    return vm


def host_ratio(si, host):
    vcpus = sum(vm.config.hardware.numCPU for vm in host.vm if vm.runtime.powerState == "poweredOn"
                and not vm.config.template)
    return float(vcpus) / host.summary.hardware.numCpuCores


def make_node(core, name, run, system_uuid=None, provider_id=None):
    spec = {"providerID": provider_id} if provider_id else {}
    core.create_node({"metadata": {"name": name, "labels": {FIXTURE_LABEL: run, "kubernetes.io/hostname": name}},
                      "spec": spec})
    status = {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
              "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
              "nodeInfo": dict(NODE_INFO, systemUUID=system_uuid or ""),
              "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test node"}]}
    core.patch_node_status(name, {"status": status})


def make_pod(core, name, node, run, containers, init_containers=None, phase=None):
    body = {"metadata": {"name": name, "namespace": NAMESPACE, "labels": {FIXTURE_LABEL: run}},
            "spec": {"nodeName": node, "automountServiceAccountToken": False, "containers": containers,
                     "initContainers": init_containers or None}}
    core.create_namespaced_pod(NAMESPACE, body)
    if phase:
        core.patch_namespaced_pod_status(name, NAMESPACE, {"status": {"phase": phase}})


def container(name, requests=None, limits=None, restart_policy=None):
    entry = {"name": name, "image": "registry.invalid/none", "resources": {}}
    if requests:
        entry["resources"]["requests"] = requests
    if limits:
        entry["resources"]["limits"] = limits
    if restart_policy:
        entry["restartPolicy"] = restart_policy
    return entry


def up(run, state_path):
    si = vsphere()
    core = kube()
    try:
        hosts = sorted((h for h in objects(si, vim.HostSystem) if isinstance(h.parent, vim.ClusterComputeResource)),
                       key=lambda h: h.name)
        hot_host, cool_host = hosts[0], hosts[1]
        names = vm_names(run)
        vms = {"hot": create_vm(si, names["hot"], hot_host, HOT_VCPUS)}
        for role in ("cool", "provider", "named"):
            vms[role] = create_vm(si, names[role], cool_host, 1)
        uuids = dict((role, vm.config.uuid) for role, vm in vms.items())
        nodes = dict((role, "oc-esxi-%s-node-%s" % (run, role)) for role in ("hot", "cool", "provider", "orphan"))
        nodes["named"] = names["named"]
        make_node(core, nodes["hot"], run, system_uuid=uuids["hot"])
        make_node(core, nodes["cool"], run, system_uuid=swapped(uuids["cool"]).upper())
        make_node(core, nodes["provider"], run, provider_id="vsphere://" + uuids["provider"])
        make_node(core, nodes["named"], run)
        make_node(core, nodes["orphan"], run)
        pods = "oc-esxi-%s" % run
        # hot node: 2 + 0.5 CPU and 1 Gi + 512 Mi requested; 4 CPU and 2 Gi limits
        # (the second pod sets no limit); a finished pod that must not count.
        make_pod(core, pods + "-a", nodes["hot"], run,
                 [container("app", {"cpu": "1500m", "memory": "768Mi"}, {"cpu": "3", "memory": "1536Mi"})],
                 [container("sidecar", {"cpu": "500m", "memory": "256Mi"}, {"cpu": "1", "memory": "512Mi"},
                            restart_policy="Always"),
                  container("init", {"cpu": "1", "memory": "64Mi"}, {"cpu": "1", "memory": "64Mi"})])
        make_pod(core, pods + "-b", nodes["hot"], run, [container("app", {"cpu": "500m", "memory": "512Mi"})])
        make_pod(core, pods + "-done", nodes["hot"], run,
                 [container("app", {"cpu": "4", "memory": "4Gi"}, {"cpu": "4", "memory": "4Gi"})], phase="Succeeded")
        hot_ratio, cool_ratio = host_ratio(si, hot_host), host_ratio(si, cool_host)
        state = {"run": run, "nodes": nodes, "vms": names, "uuids": uuids, "hot_host": hot_host.name,
                 "cool_host": cool_host.name, "hot_ratio": hot_ratio, "cool_ratio": cool_ratio,
                 "watermark": round((hot_ratio + cool_ratio) / 2, 3), "selector": "%s=%s" % (FIXTURE_LABEL, run)}
    finally:
        Disconnect(si)
    with open(state_path, "w") as handle:
        json.dump(state, handle, indent=2)
    return state


def down(run):
    core = kube()
    selector = "%s=%s" % (FIXTURE_LABEL, run)
    for pod in core.list_namespaced_pod(NAMESPACE, label_selector=selector).items:
        core.delete_namespaced_pod(pod.metadata.name, NAMESPACE, grace_period_seconds=0)
    for node in core.list_node(label_selector=selector).items:
        try:
            core.delete_node(node.metadata.name)
        except ApiException as exc:
            if exc.status != 404:
                raise
    si = vsphere()
    try:
        wanted = set(vm_names(run).values())
        for vm in objects(si, vim.VirtualMachine):
            if vm.name in wanted:
                if vm.runtime.powerState == "poweredOn":
                    wait_for_task(vm.PowerOffVM_Task())
                wait_for_task(vm.Destroy_Task())
    finally:
        Disconnect(si)


if __name__ == "__main__":
    if sys.argv[1] == "up":
        down(sys.argv[2])
        print(json.dumps(up(sys.argv[2], sys.argv[3])))
    elif sys.argv[1] == "down":
        down(sys.argv[2])
    else:
        sys.exit(__doc__)
