"""KubeVirt VMs on the lab's real node: the VMIs and VirtualMachines of
kubevirt_fleet, and a virt-launcher stand-in that the node's kubelet really
runs - a pod shaped as KubeVirt makes it (labels, owner, `compute` and
`guest-console-log` containers) whose `compute` container burns one thread
per vCPU, as a busy guest's vCPU threads do in virt-launcher. KubeVirt's
controllers do not run in the lab, so the tests stand in for them: they mark
the VMI Running on the node with its one active pod, as virt-handler does.
CPU is measured where the kubelet puts it: the container's cgroup."""

import pod_cgroup
from polling import wait_for
from kubevirt_fleet import GROUP, NAMESPACE, VERSION, Fleet

# Seconds a CPU rate is measured over.
RATE_SECONDS = 3.0


def lab_node(lab):
    return lab["OVERCOMMIT_LAB_NODE"]


def tolerate_lab_node(lab):
    """The toleration of the taint that keeps other pods off the lab node."""
    return {"key": lab["OVERCOMMIT_LAB_NODE_TAINT"], "operator": "Exists", "effect": "NoSchedule"}


class NodeFleet(Fleet):
    """VMIs whose launcher stand-ins run on the lab node."""

    def __init__(self, api_client, lab, node_selector=None):
        super(NodeFleet, self).__init__(api_client)
        self.node = lab_node(lab)
        self.image = lab["OVERCOMMIT_LAB_NODE_IMAGE"]
        self.toleration = tolerate_lab_node(lab)
        # Node labels the stand-ins require (a VM's nodeSelector).
        self.node_selector = node_selector

    def vmi(self, cores=1, limits=None, requests=None, labels=None, vm=False, **_ignored):
        return super(NodeFleet, self).vmi(cores=cores, limits=limits, requests=dict({"cpu": "100m"}, **(requests or {})),
                                          labels=labels, node=self.node, vm=vm)

    def launcher(self, name, vmi_uid, limits=None, requests=None, node=None, running=True):
        """A virt-launcher stand-in on the lab node; returns when its
        containers run, after marking the VMI Running with it."""
        vcpus = self.template[name]["domain"]["cpu"]["cores"]
        resources = {"requests": dict({"cpu": "100m", "memory": "64Mi"}, **(requests or {}))}
        if limits:
            resources["limits"] = limits
        spec = {
            "nodeName": self.node, "hostNetwork": True, "tolerations": [self.toleration],
            "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
            "containers": [
                {"name": "compute", "image": self.image, "imagePullPolicy": "Never",
                 "command": ["/spinner", "spin", str(vcpus)], "resources": resources},
                {"name": "guest-console-log", "image": self.image, "imagePullPolicy": "Never",
                 "command": ["/spinner", "pause"],
                 "resources": {"requests": {"cpu": "5m", "memory": "35M"}, "limits": {"cpu": "15m", "memory": "60M"}}},
            ]}
        if self.node_selector:
            spec["nodeSelector"] = dict(self.node_selector)
        pod = self.core.create_namespaced_pod(NAMESPACE, {"metadata": self.launcher_metadata(name, vmi_uid), "spec": spec})
        pod_name = pod.metadata.name
        self.pods.append(pod_name)
        wait_for("pod %s running on %s" % (pod_name, self.node), lambda: self.running(pod_name))
        self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, NAMESPACE, "virtualmachineinstances", name,
            {"status": {"phase": "Running", "nodeName": self.node, "activePods": {pod.metadata.uid: self.node}}})
        return pod_name

    def running(self, pod_name):
        pod = self.core.read_namespaced_pod(pod_name, NAMESPACE)
        statuses = pod.status.container_statuses or []
        return pod.status.phase == "Running" and len(statuses) == 2 and all(s.state.running for s in statuses)

    def compute_status(self, name):
        pod = self.pod_of(name)
        return pod, next(s for s in pod.status.container_statuses if s.name == "compute")

    def node_limit(self, name):
        """The compute CPU limit the node reports the container runs with."""
        _pod, status = self.compute_status(name)
        return ((status.resources and status.resources.limits) or {}).get("cpu")

    def cgroup(self, name, controller):
        """The compute container's cgroup folder in `controller` (cgroup v1),
        or in the unified hierarchy (v2)."""
        return pod_cgroup.compute_cgroup(*self.compute_status(name), controller=controller)

    def cpu_rate(self, name, seconds=RATE_SECONDS):
        """CPUs the VM's compute container used over `seconds`: the rate of its cgroup's CPU time."""
        return pod_cgroup.cpu_rate(self.cgroup(name, "cpuacct"), seconds)

    def cfs_quota(self, name):
        """The compute container's CFS quota in CPUs (None: none), as the kernel enforces it."""
        return pod_cgroup.cfs_quota(self.cgroup(name, "cpu"))

    def delete_pod(self, pod_name):
        # The kubelet stops the containers of a pod deleted at once.
        self.core.delete_namespaced_pod(pod_name, NAMESPACE, grace_period_seconds=0)
        self.pods.remove(pod_name)
