"""The KubeVirt runtime brake on real KubeVirt: a VirtualMachine whose guest
spins its vCPU runs in a virt-launcher pod that virt-controller rendered and
virt-handler started QEMU in, and kubevirt_vm_cpu_limit resizes that pod's
compute container in place. Judged by effect, against the same VM's own
unthrottled rate in the same test: the CPU time of the container that holds
QEMU falls to the cap; the VMI, its pod, its container and its QEMU process
stay the same; KubeVirt's controllers leave the resize alone while they sync
the VMI again; restore gives the CPU back; each leaves its Event on the VMI.

KubeVirt's informers resync every 12 to 24 hours, which no test can wait
for: the test makes both controllers sync the VMI (a label on it) and waits
out virt-handler's reaction to the kubelet's own pod updates instead."""

import os
import tempfile
import time
import uuid

import yaml

from measure import TOLERANCE_CPUS, check_braked, check_recovered
from polling import wait_for
from run_module import run_playbook

CAP, CAP_TEXT = 0.2, "200m"
# Long enough for virt-controller and virt-handler to act on the VMI update
# and on the pod updates the resize made.
SETTLE_SECONDS = 20


def brake(run_as, kubevirt, names, **args):
    return run_as("admin", "kubevirt_vm_cpu_limit", dict(args, namespace=kubevirt.namespace, names=names))


def snapshot(kubevirt, name):
    """What must not change while the VM is braked: VMI, pod, container, QEMU."""
    pod, status = kubevirt.compute_status(name)
    vmi = kubevirt.vmi(name)
    return {"vmi": vmi["metadata"]["uid"], "phase": vmi["status"]["phase"], "pod": pod.metadata.uid,
            "container": status.container_id, "restarts": status.restart_count, "qemu": kubevirt.qemu_pid(pod)}


def test_the_brake_holds_qemu_to_its_cap_in_place_and_restore_gives_the_cpu_back(run_as, kubevirt):
    name = kubevirt.vm("busy")
    before = snapshot(kubevirt, name)
    assert before["qemu"], "no QEMU process in the launcher's compute container"
    assert kubevirt.cfs_quota(name) is None  # virt-controller renders no CPU limit for this VM
    unthrottled = kubevirt.cpu_rate(name)

    result = brake(run_as, kubevirt, [name], cpus=CAP_TEXT, force=True, reason="INC-21 noisy neighbour",
                   wait=True, wait_timeout=60)
    assert not result.get("failed"), result
    vm = result["vms"][0]
    assert vm["node"] == {"status": "applied", "cpu_limit": CAP_TEXT, "reason": None, "message": None}, vm
    assert result["summary"]["report"] == ["%s/%s: 0.2 CPU, was unlimited (node: applied)" % (kubevirt.namespace, name)]
    assert kubevirt.cfs_quota(name) == CAP
    check_braked(unthrottled, kubevirt.cpu_rate(name), CAP)

    # Both controllers sync the VMI again; neither undoes the resize nor restarts anything.
    kubevirt.custom.patch_namespaced_custom_object(
        "kubevirt.io", "v1", kubevirt.namespace, "virtualmachineinstances", name,
        {"metadata": {"labels": {"overcommit.test/resync": str(int(time.time()))}}})
    time.sleep(SETTLE_SECONDS)
    assert snapshot(kubevirt, name) == before
    assert kubevirt.cfs_quota(name) == CAP
    throttled = kubevirt.cpu_rate(name)
    check_braked(unthrottled, throttled, CAP)

    restored_result = brake(run_as, kubevirt, [name], state="restored", wait=True, wait_timeout=60)
    assert not restored_result.get("failed"), restored_result
    assert restored_result["vms"][0]["node"]["status"] == "applied", restored_result
    # The pod had no limit, and none can be removed: restore raises it to the vCPU plus 1 CPU of headroom.
    assert kubevirt.cfs_quota(name) == 2.0
    # As documented: an Event on the VMI for the throttle and one for the restore, beside KubeVirt's own.
    ours = [e for e in kubevirt.events(name) if e[1].startswith("CPULimit")]
    assert [(e[0], e[1]) for e in ours] == [("Normal", "CPULimitApplied"), ("Normal", "CPULimitRestored")], ours
    pod = kubevirt.running_pod(name).metadata.name
    assert ours[0][2] == "compute CPU limit of pod %s set to 200m (was no limit)" % pod, ours
    assert ours[1][2] == "compute CPU limit of pod %s raised from 200m to 2; cap lifted" % pod, ours
    check_recovered(unthrottled, throttled, kubevirt.cpu_rate(name))
    assert snapshot(kubevirt, name) == before


def reconcile_playbook(namespace, selector):
    """A playbook that runs the reconcile role on the VMs of `selector`."""
    play = [{"name": "Reconcile", "hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "The reconcile role", "ansible.builtin.include_role": {"name": "overcommit.control.kubevirt_cpu_reconcile"},
         "vars": {"kubevirt_cpu_reconcile_namespace": namespace,
                  "kubevirt_cpu_reconcile_label_selector": selector}}]}]
    handle = tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False)
    with handle:
        yaml.safe_dump(play, handle)
    return handle.name


def test_a_restarted_vm_runs_unbraked_until_the_reconcile_role_brakes_its_new_launcher(lab, kubevirt):
    """KubeVirt renders a new launcher pod from the VM's template on every
    start, so a cap set on the old pod is gone; the VM keeps the cap it was
    given, and the reconcile role applies it to the new pod."""
    label = {"overcommit.test/run": uuid.uuid4().hex[:8]}
    name = kubevirt.vm("busy", labels=label)
    env = {"K8S_AUTH_KUBECONFIG": lab["OVERCOMMIT_KUBECONFIG_ADMIN"]}
    throttled = run_playbook("throttle.yml", {"kubevirt_vms": [name], "kubevirt_namespace": kubevirt.namespace,
                                              "cpus": CAP, "force": True, "reason": "INC-22 noisy neighbour",
                                              "kubevirt_wait": 60}, env=env)
    assert throttled.returncode == 0, throttled.stdout[-3000:]
    assert "%s/%s: 0.2 CPU, was unlimited (node: applied)" % (kubevirt.namespace, name) in throttled.stdout, \
        throttled.stdout[-3000:]
    braked = kubevirt.cpu_rate(name)
    first_pod = kubevirt.running_pod(name).metadata.name

    new_pod = kubevirt.restart(name).metadata.name
    assert new_pod != first_pod and kubevirt.cfs_quota(name) is None
    unthrottled = kubevirt.cpu_rate(name)
    assert unthrottled > braked + TOLERANCE_CPUS, (
        "the new launcher got %.2f CPU, the braked one %.2f: the restart did not lose the cap" % (unthrottled, braked))

    playbook = reconcile_playbook(kubevirt.namespace, "overcommit.test/run=" + label["overcommit.test/run"])
    try:
        reconciled = run_playbook(playbook, {}, env=env)
    finally:
        os.unlink(playbook)
    assert reconciled.returncode == 0, reconciled.stdout[-3000:]
    assert "%s/%s: 0.2 CPU, was unlimited" % (kubevirt.namespace, name) in reconciled.stdout, reconciled.stdout[-3000:]
    wait_for("the new launcher's compute container capped", lambda: kubevirt.cfs_quota(name) == CAP, 30)
    assert kubevirt.running_pod(name).metadata.name == new_pod
    check_braked(unthrottled, kubevirt.cpu_rate(name), CAP)
