"""VM classes as KubeVirt products on the lab's real KubeVirt: the cluster
instancetype and preference kubevirt_instancetype makes for a shared class,
and kubevirt_vm_resources moving a running VM onto them (audit, check mode,
apply). Judged against KubeVirt's own controllers: the VM controller
accepts the move, reports the restart the module said it needs, and starts
the next VMI from the instancetype, with the launcher pod's memory request
lowered by the class's memory overcommit as the module's plan said."""

import uuid

import pytest
from kubernetes import client

from ansible_collections.overcommit.control.plugins.module_utils.domain.memory import MI
from ansible_collections.overcommit.control.plugins.module_utils.k8s import quantity
from polling import wait_for
from test_vm_resources import restart_required

IT_GROUP, IT_VERSION = "instancetype.kubevirt.io", "v1beta1"
PLURALS = ("virtualmachineclusterinstancetypes", "virtualmachineclusterpreferences")


@pytest.fixture
def shared_class(kube_admin, run_as):
    """A shared class of one vCPU and 64 MiB, a quarter of it overcommitted;
    its instancetype and preference are deleted afterwards."""
    name = "oc-kv-shared-" + uuid.uuid4().hex[:8]
    made = run_as("admin", "kubevirt_instancetype", {"classes": [
        {"name": name, "class": "shared", "cpus": 1, "memory": "64Mi", "memory_overcommit_percent": 25}]})
    assert made["changed"] and not made.get("failed"), made
    yield name
    custom = client.CustomObjectsApi(kube_admin)
    for plural in PLURALS:
        custom.delete_cluster_custom_object(IT_GROUP, IT_VERSION, plural, name)


def launcher_memory_request(kubevirt, name):
    return kubevirt.compute_spec(name).resources.requests["memory"]


def test_a_running_vm_moved_onto_a_class_instancetype_restarts_into_it_as_planned(run_as, kubevirt, shared_class):
    name = kubevirt.vm("idle")
    before = kubevirt.read("virtualmachines", name)
    pod_before = kubevirt.running_pod(name).metadata.name
    move = {"namespace": kubevirt.namespace, "names": [name], "instancetype": shared_class,
            "preference": shared_class}

    audit = run_as("admin", "kubevirt_vm_resources", dict(move, mode="audit"))
    plan = audit["vms"][0]["move"]
    assert plan["restart_required"] and "spec.template.spec.domain.memory" in plan["removed_fields"], audit
    checked = run_as("admin", "kubevirt_vm_resources", move, check=True)
    assert checked["changed"], checked
    # Check mode wrote nothing: the VM has no instancetype or preference yet and the collection's own
    # labels and annotations are as they were. (Not its resourceVersion nor its whole spec: KubeVirt's
    # controller still completes a new VM's spec and status meanwhile.)

    def written(vm):
        meta = vm["metadata"]
        ours = dict((key, value) for key, value in list((meta.get("labels") or {}).items())
                    + list((meta.get("annotations") or {}).items()) if key.startswith("overcommit.control/"))
        return vm["spec"].get("instancetype"), vm["spec"].get("preference"), ours
    assert written(kubevirt.read("virtualmachines", name)) == written(before) == (None, None, {})

    moved = run_as("admin", "kubevirt_vm_resources", move)
    result = moved["vms"][0]
    assert result["changed"] and result["restart_required"] and "instancetype" in result["restart_reasons"], moved
    # KubeVirt's VM controller took the move (it keeps a revision of the instancetype for the VM) and
    # says what the module said: the running VMI keeps its old shape until a restart.
    wait_for("KubeVirt's RestartRequired condition on %s" % name, lambda: restart_required(kubevirt, name), 60)
    vm = kubevirt.read("virtualmachines", name)
    assert vm["spec"]["instancetype"]["name"] == shared_class, vm["spec"]
    assert (vm["status"].get("instancetypeRef") or {}).get("controllerRevisionRef"), vm["status"]
    assert kubevirt.running_pod(name).metadata.name == pod_before
    assert run_as("admin", "kubevirt_vm_resources", move)["changed"] is False

    kubevirt.restart(name)
    vmi = kubevirt.vmi(name)
    assert vmi["spec"]["domain"]["memory"]["guest"] == "64Mi", vmi["spec"]["domain"]
    assert vmi["metadata"]["annotations"].get("overcommit.control/class") == "shared", vmi["metadata"]
    # The new launcher requests what the plan said, the class's memory overcommit taken off the guest
    # memory, plus the overhead the module estimated, as virt-controller rendered it.
    assert plan["after"]["memory_request"] == "48Mi" == vmi["spec"]["domain"]["resources"]["requests"]["memory"], plan
    rendered = quantity.memory("request", launcher_memory_request(kubevirt, name))
    assert abs(rendered - 48 * MI - quantity.memory("overhead", result["launcher_overhead"])) <= 0.05 * MI, \
        (rendered, result["launcher_overhead"])
    wait_for("the RestartRequired condition of %s gone after the restart" % name,
             lambda: not restart_required(kubevirt, name), 60)
