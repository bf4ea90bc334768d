"""Throwaway rollout units on the lab's one kube-apiserver, libvirtd and
vcsim, for the rollout tests and the rollout_wave molecule scenario. A unit
("cluster") is a namespace with a KubeVirt VM, a shut-off libvirt domain
(never started) and a vcsim VM; the run also has a KubeVirt CR of its own.
Every value a wave may change is set explicitly, so that what a restore puts
back can be compared in full. The lab's own guests, VMs and CR are never
touched; namespaces are kept (without a controller-manager they never finish
terminating), everything in them is deleted.

    python rollout_fixture.py up RUN STATE.json UNIT...   create, write what was made
    python rollout_fixture.py read STATE.json             print every object's state as JSON
    python rollout_fixture.py down RUN                    delete what RUN made (if anything)
    python rollout_fixture.py down --every-run            delete what any run made and left behind
"""

import json
import os
import ssl
import sys
import xml.etree.ElementTree as ET

import libvirt
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from pyVim.connect import Disconnect, SmartConnect
from pyVmomi import vim

# Run as a script from its own folder too: the helper is one folder up.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from vsphere_task import wait_for_task  # noqa: E402

RUN_LABEL = "overcommit.test/rollout"
CR_NAMESPACE = "lab"
GROUP, VERSION = "kubevirt.io", "v1"
CLASS_LABEL = "overcommit.control/class"
ATTRIBUTE = "overcommit.control.reservation"
VM_MEMORY_MB = 128
CR_CONFIGURATION = {"developerConfiguration": {"featureGates": ["Snapshot"], "memoryOvercommit": 110},
                    "vmRolloutStrategy": "Stage"}
# The class element as the collection writes it (record schema 1): put back by
# a restore, it is written in the current schema and compares equal.
DOMAIN_XML = """<domain type='qemu'>
  <name>{name}</name>
  <metadata>
    <oc:vm xmlns:oc="https://overcommit.control/xmlns/vm/1" schema="1"><oc:class>shared</oc:class></oc:vm>
  </metadata>
  <memory unit='MiB'>32</memory>
  <vcpu>2</vcpu>
  <os><type arch='x86_64'>hvm</type></os>
</domain>"""


def namespace_of(unit):
    return "oc-rollout-" + unit


def name_of(run, unit):
    return "oc-ro-%s-%s" % (run, unit)


def kube():
    return config.new_client_from_config(config_file=os.environ["OVERCOMMIT_KUBECONFIG_ADMIN"])


def vsphere():
    return SmartConnect(host=os.environ["VMWARE_HOST"], port=int(os.environ["VMWARE_PORT"]),
                        user=os.environ["VMWARE_USER"], pwd=os.environ["VMWARE_PASSWORD"],
                        sslContext=ssl._create_unverified_context())


def hypervisor():
    libvirt.registerErrorHandler(lambda *args: None, None)
    return libvirt.open(os.environ.get("OVERCOMMIT_LIBVIRT_URI", "qemu:///system"))


def vsphere_vms(si):
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
    try:
        return list(view.view)
    finally:
        view.Destroy()


def kubevirt_vm(run, unit):
    domain = {"cpu": {"cores": 2}, "memory": {"guest": "1Gi"},
              "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}},
              "devices": {"autoattachMemBalloon": True}}
    return {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
            "metadata": {"name": name_of(run, unit), "labels": {RUN_LABEL: run, CLASS_LABEL: "shared"}},
            "spec": {"runStrategy": "Halted", "template": {"spec": {"domain": domain}}}}


def create_vsphere_vm(si, name):
    host = sorted((h for h in si.RetrieveContent().viewManager.CreateContainerView(
        si.RetrieveContent().rootFolder, [vim.HostSystem], True).view), key=lambda h: h.name)[0]
    cluster = host.parent
    datacenter = cluster.parent
    while not isinstance(datacenter, vim.Datacenter):
        datacenter = datacenter.parent
    spec = vim.vm.ConfigSpec(name=name, numCPUs=2, memoryMB=VM_MEMORY_MB, guestId="otherGuest64",
                             files=vim.vm.FileInfo(vmPathName="[%s]" % host.datastore[0].name))
    wait_for_task(datacenter.vmFolder.CreateVM_Task(config=spec, pool=cluster.resourcePool, host=host))


def up(run, state_path, units):
    api = kube()
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    cr = "oc-ro-" + run
    custom.create_namespaced_custom_object(GROUP, VERSION, CR_NAMESPACE, "kubevirts", {
        "apiVersion": "kubevirt.io/v1", "kind": "KubeVirt", "metadata": {"name": cr, "labels": {RUN_LABEL: run}},
        "spec": {"configuration": CR_CONFIGURATION}})
    conn, si = hypervisor(), vsphere()
    try:
        for unit in units:
            try:
                core.create_namespace({"metadata": {"name": namespace_of(unit)}})
            except ApiException as exc:
                if exc.status != 409:
                    raise
            custom.create_namespaced_custom_object(GROUP, VERSION, namespace_of(unit), "virtualmachines",
                                                   kubevirt_vm(run, unit))
            conn.defineXML(DOMAIN_XML.format(name=name_of(run, unit)))
            create_vsphere_vm(si, name_of(run, unit))
    finally:
        conn.close()
        Disconnect(si)
    state = {"run": run, "cr": {"namespace": CR_NAMESPACE, "name": cr}, "units": dict(
        (unit, {"namespace": namespace_of(unit), "vm": name_of(run, unit), "domain": name_of(run, unit),
                "vsphere_vm": name_of(run, unit)}) for unit in units)}
    with open(state_path, "w") as handle:
        json.dump(state, handle)
    return state


def read(state):
    """Every object's full state that a wave may change: the CR's and the
    VMs' spec, labels and annotations, the domains' persistent definition,
    the vcsim VMs' allocations and reservation record."""
    api = kube()
    custom = client.CustomObjectsApi(api)
    kubevirt = custom.get_namespaced_custom_object(GROUP, VERSION, state["cr"]["namespace"], "kubevirts",
                                                   state["cr"]["name"])
    out = {"cr": kubevirt["spec"], "units": {}}
    conn, si = hypervisor(), vsphere()
    try:
        by_name = dict((vm.name, vm) for vm in vsphere_vms(si))
        keys = [f.key for f in si.RetrieveContent().customFieldsManager.field or [] if f.name == ATTRIBUTE]
        for unit, names in sorted(state["units"].items()):
            vm = custom.get_namespaced_custom_object(GROUP, VERSION, names["namespace"], "virtualmachines", names["vm"])
            domain = conn.lookupByName(names["domain"])
            root = ET.fromstring(domain.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))
            metadata = root.find("metadata")
            esx = by_name[names["vsphere_vm"]]
            allocation = {}
            for resource, info in (("cpu", esx.config.cpuAllocation), ("memory", esx.config.memoryAllocation)):
                allocation[resource] = {"reservation": info.reservation, "limit": info.limit,
                                        "level": info.shares.level, "shares": info.shares.shares}
            out["units"][unit] = {
                "vm": {"labels": vm["metadata"].get("labels"), "annotations": vm["metadata"].get("annotations"),
                       "spec": vm["spec"]},
                "domain_metadata": ET.tostring(metadata, encoding="unicode") if metadata is not None else None,
                "domain_xml": ET.tostring(root, encoding="unicode"),
                "vsphere": allocation,
                # Clearing a record writes an empty value, which is how vSphere removes a custom value.
                "record": [v.value for v in esx.customValue or [] if v.key in keys and v.value],
            }
    finally:
        conn.close()
        Disconnect(si)
    return out


def down(run=None):
    """Delete what RUN made, or with RUN None what every run made: a run
    stopped before its own `down` (a killed test, a timed-out CI job) leaves
    domains and VMs that host-wide selections, such as every domain of a
    class, would otherwise find."""
    api = kube()
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    selector = RUN_LABEL if run is None else "%s=%s" % (RUN_LABEL, run)
    for kubevirt in custom.list_namespaced_custom_object(GROUP, VERSION, CR_NAMESPACE, "kubevirts",
                                                         label_selector=selector)["items"]:
        custom.delete_namespaced_custom_object(GROUP, VERSION, CR_NAMESPACE, "kubevirts", kubevirt["metadata"]["name"])
    for namespace in core.list_namespace().items:
        if not namespace.metadata.name.startswith("oc-rollout-"):
            continue
        for vm in custom.list_namespaced_custom_object(GROUP, VERSION, namespace.metadata.name, "virtualmachines",
                                                       label_selector=selector)["items"]:
            custom.delete_namespaced_custom_object(GROUP, VERSION, namespace.metadata.name, "virtualmachines",
                                                   vm["metadata"]["name"])
    prefix = "oc-ro-" if run is None else "oc-ro-%s-" % run
    conn = hypervisor()
    try:
        for domain in conn.listAllDomains():
            if domain.name().startswith(prefix):
                domain.undefine()
    finally:
        conn.close()
    si = vsphere()
    try:
        for vm in vsphere_vms(si):
            if vm.name.startswith(prefix):
                if vm.runtime.powerState == "poweredOn":
                    wait_for_task(vm.PowerOffVM_Task())
                wait_for_task(vm.Destroy_Task())
    finally:
        Disconnect(si)


def main(argv):
    if argv[1] == "up":
        up(argv[2], argv[3], argv[4:])
    elif argv[1] == "read":
        with open(argv[2]) as handle:
            print(json.dumps(read(json.load(handle)), sort_keys=True))
    elif argv[1] == "down":
        down(None if argv[2] == "--every-run" else argv[2])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
