"""KubeVirt VMs as the lab has them: VMIs and virt-launcher Pods shaped as
KubeVirt creates them, in the lab namespace, made through the real
kube-apiserver with KubeVirt's own CRDs. No kubelet runs in the lab, so a
pod's spec is what tests read: the server accepted the resize there."""

import time
import uuid

from kubernetes import client
from kubernetes.client.rest import ApiException

NAMESPACE = "lab"
GROUP, VERSION = "kubevirt.io", "v1"
RUN_LABEL = "overcommit.test/run"
PREFIX = "overcommit.control/"
# The rate window the tests read KubeVirt's VMI metrics over (5 of the lab
# Prometheus' 2 s scrapes, enough when the host is busy).
WINDOW_SECONDS = 10


def cpus(quantity):
    """A CPU quantity as the API server stores it (1, 500m) in CPUs."""
    return int(quantity[:-1]) / 1000.0 if quantity.endswith("m") else float(quantity)


def settle():
    """Wait until Prometheus' rate window holds only what the metrics say now."""
    time.sleep(WINDOW_SECONDS + 3)


class Fleet(object):
    """Running VMIs with launcher pods, all labelled with one run id."""

    def __init__(self, api_client):
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.events_api = client.EventsV1Api(api_client)
        self.run = uuid.uuid4().hex[:8]
        self.selector = "%s=%s" % (RUN_LABEL, self.run)
        self.vmis, self.pods, self.vms = [], [], []
        # name -> the compute resources KubeVirt derives from the VM (a new pod gets them again).
        self.template = {}

    def vmi(self, cores=4, limits=None, requests=None, labels=None, dedicated=False, node="lab-node-a",
            running=True, vm=False):
        """A Running VMI and its Running launcher pod (compute container with
        the given CPU requests/limits); returns the VMI name. vm: the VMI is
        one a VirtualMachine of the same name started, and is owned by it."""
        name = "oc-it-cpu-%s-%d" % (self.run, len(self.vmis))
        cpu = {"cores": cores}
        if dedicated:
            cpu["dedicatedCpuPlacement"] = True
        domain = {"cpu": cpu, "memory": {"guest": "1Gi"}, "devices": {}}
        self.template[name] = {"limits": limits, "requests": requests, "domain": domain, "labels": labels,
                               "node": node, "owner": None}
        if vm:
            created = self.custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "virtualmachines", {
                "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
                "metadata": {"name": name, "labels": {RUN_LABEL: self.run}},
                "spec": {"runStrategy": "Always", "template": {"spec": {"domain": domain}}}})
            self.vms.append(name)
            self.template[name]["owner"] = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": name,
                                            "uid": created["metadata"]["uid"], "controller": True,
                                            "blockOwnerDeletion": True}
        self.vmis.append(name)
        self.start(name, running=running)
        return name

    def start(self, name, running=True):
        """What starting a VM makes: a new VMI (its VM's owner reference, a new
        uid, no annotations) and a launcher pod with the template's resources."""
        template = self.template[name]
        metadata = {"name": name, "labels": dict(template["labels"] or {}, **{RUN_LABEL: self.run})}
        if template["owner"]:
            metadata["ownerReferences"] = [template["owner"]]
        vmi = self.custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "virtualmachineinstances", {
            "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance", "metadata": metadata,
            "spec": {"domain": template["domain"]}})
        self.launcher(name, vmi["metadata"]["uid"], limits=template["limits"], requests=template["requests"],
                      node=template["node"], running=running)

    def stop(self, name):
        """What stopping a VM leaves: the VirtualMachine, without VMI or pod."""
        self.delete_pod(self.pod_of(name).metadata.name)
        self.custom.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "virtualmachineinstances", name)

    def restart(self, name):
        self.stop(name)
        self.start(name)

    def read_vm(self, name):
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "virtualmachines", name)

    def vm_annotations(self, name):
        return self.read_vm(name)["metadata"].get("annotations") or {}

    def launcher(self, name, vmi_uid, limits=None, requests=None, node="lab-node-a", running=True):
        """A virt-launcher pod for the VMI, which then reports it as its one
        active pod on `node` (as after a migration when one existed)."""
        resources = {"requests": dict({"cpu": "400m", "memory": "1300Mi"}, **(requests or {}))}
        if limits:
            resources["limits"] = limits
        console = {"requests": {"cpu": "5m", "memory": "35M"}, "limits": {"cpu": "15m", "memory": "60M"}}
        if resources.get("limits") == resources["requests"]:
            # A Guaranteed VM's launcher is Guaranteed as a whole, its console log container included.
            console["requests"] = console["limits"]
        pod = self.core.create_namespaced_pod(NAMESPACE, {
            "metadata": self.launcher_metadata(name, vmi_uid),
            "spec": {"nodeName": node, "containers": [
                {"name": "compute", "image": "quay.io/kubevirt/virt-launcher:v1.6.0", "resources": resources},
                {"name": "guest-console-log", "image": "quay.io/kubevirt/virt-launcher:v1.6.0", "resources": console},
            ]}})
        pod_name = pod.metadata.name
        self.pods.append(pod_name)
        if running:
            self.core.patch_namespaced_pod_status(pod_name, NAMESPACE, {"status": {"phase": "Running"}})
        self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, NAMESPACE, "virtualmachineinstances", name,
            {"status": {"phase": "Running", "nodeName": node, "activePods": {pod.metadata.uid: node}}})
        return pod_name

    def launcher_metadata(self, name, vmi_uid):
        """A virt-launcher pod's metadata as KubeVirt writes it: labels, and the VMI as its owner."""
        return {"generateName": "virt-launcher-%s-" % name,
                "labels": {"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": vmi_uid,
                           "vm.kubevirt.io/name": name, "kubevirt.io/domain": name, RUN_LABEL: self.run},
                "annotations": {"kubevirt.io/domain": name},
                "ownerReferences": [{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance", "name": name,
                                     "uid": vmi_uid, "controller": True, "blockOwnerDeletion": True}]}

    def migrate(self, name, node="lab-node-b"):
        """What a live migration leaves: a new launcher pod on another node
        (limits from the template, so without the cap), the old one gone."""
        old = self.pod_of(name).metadata.name
        new = self.launcher(name, self.read(name)["metadata"]["uid"], limits=self.template[name]["limits"],
                            requests=self.template[name]["requests"], node=node)
        self.delete_pod(old)
        return new

    def read(self, name):
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "virtualmachineinstances", name)

    def annotations(self, name):
        return self.read(name)["metadata"].get("annotations") or {}

    def pod_of(self, name):
        uid = self.read(name)["metadata"]["uid"]
        pods = self.core.list_namespaced_pod(NAMESPACE, label_selector="kubevirt.io/created-by=" + uid).items
        assert len(pods) == 1, [p.metadata.name for p in pods]
        return pods[0]

    def compute_limits(self, name):
        return self.pod_of(name).spec.containers[0].resources.limits

    def events(self, name, kind="VirtualMachineInstance"):
        found = self.events_api.list_namespaced_event(
            NAMESPACE, field_selector="regarding.name=%s,regarding.kind=%s" % (name, kind)).items
        return [(e.type, e.reason, e.note) for e in sorted(found, key=lambda e: e.event_time)]

    def delete_pod(self, pod_name):
        # No kubelet in the lab finishes a graceful deletion.
        self.core.delete_namespaced_pod(pod_name, NAMESPACE, grace_period_seconds=0)
        self.pods.remove(pod_name)

    def cleanup(self):
        for pod_name in list(self.pods):
            try:
                self.delete_pod(pod_name)
            except ApiException as exc:
                if exc.status != 404:
                    raise
        for name in self.vmis:
            for plural in ("virtualmachineinstances",) + (("virtualmachines",) if name in self.vms else ()):
                try:
                    self.custom.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, plural, name)
                except ApiException as exc:
                    if exc.status != 404:
                        raise
            for event in self.events_api.list_namespaced_event(NAMESPACE, field_selector="regarding.name=" + name).items:
                self.events_api.delete_namespaced_event(event.metadata.name, NAMESPACE)
