"""The 3 a.m. runbook on every platform of the lab at once: stop every loop
(kill_switch.yml), give back everything the collection changed
(undo_all.yml), start the loops again (kill_switch.yml paused=false).

The objects are real: a running libvirt domain on the lab's libvirtd,
Kubernetes nodes and a KubeVirt VMI with its launcher pod on the lab's
kube-apiserver (the stand-in: no kubelet, so "the node applied it" is not
part of this test), a VM in vcsim. Each one is read before, throttled,
gated or reserved by the collection's own modules, and read again after
each step straight from its server. One KubeVirt VM's throttle record is
then made unreadable (as a hand edit would), so that the undo has an object
it cannot give back: it must name it with why, give back every other
object, and fail.

Serial: the kill switch and the undo act on every object of every platform
the lab has, which the tests running beside it read."""

import pytest
import yaml
from kubernetes import client

from run_module import run_module, run_playbook
from vsphere_checks import allocation, record_of

pytestmark = [pytest.mark.serial]

PREFIX = "overcommit.control/"
VCSIM_FOLDER = "/DC0/vm"


def tune(domain):
    import libvirt

    params = domain.schedulerParametersFlags(libvirt.VIR_DOMAIN_AFFECT_LIVE)
    return dict((key, params.get(key)) for key in ("vcpu_quota", "global_quota", "cpu_shares"))


def policy_element(domain):
    return "overcommit.control/xmlns/policy" in domain.XMLDesc(0)


def node_state(core, name):
    node = core.read_node(name)
    return {"labels": dict((k, v) for k, v in (node.metadata.labels or {}).items() if k.startswith(PREFIX)),
            "annotations": sorted(k for k in (node.metadata.annotations or {}) if k.startswith(PREFIX)),
            "taints": sorted(t.key for t in node.spec.taints or []), "unschedulable": bool(node.spec.unschedulable)}


@pytest.fixture
def lab_env(lab):
    return dict((key, lab[key]) for key in lab if key.startswith(("VMWARE_", "K8S_AUTH_")))


def test_stop_every_loop_give_everything_back_and_start_again(lab_env, spare_domain, libvirt_conn, kube_admin,
                                                              make_nodes, fleet, vsphere_vm, vsphere):
    core = client.CoreV1Api(kube_admin)
    domain = spare_domain.name()
    untouched_node, gated_node = make_nodes(2)
    healthy, lost = fleet.vmi(cores=2, limits={"cpu": "3"}), fleet.vmi(cores=2, limits={"cpu": "3"})
    before = {"domain": tune(spare_domain), "node": node_state(core, gated_node),
              "untouched": node_state(core, untouched_node), "vm": fleet.compute_limits(healthy),
              "vsphere": allocation(vsphere_vm)}
    vsphere_env = dict((k, v) for k, v in lab_env.items() if k.startswith("VMWARE_"))
    try:
        # What an incident and the loop leave behind, made by the collection's own modules.
        assert not run_module("libvirt_cputune", {"domains": [domain], "cpus": 0.5, "reason": "INC-9"}).get("failed")
        assert not run_module("libvirt_policy_state", {"states": {domain: {"cap": 0.5, "rule": "contain"}}}).get("failed")
        assert not run_module("node_admission", {"names": [gated_node], "state": "gated", "reason": "INC-9",
                                                 "policy_state": {"gated_at": 1}}).get("failed")
        for name in (healthy, lost):
            result = run_module("kubevirt_vm_cpu_limit", {"namespace": "lab", "names": [name], "cpus": "1",
                                                          "reason": "INC-9"})
            assert not result.get("failed"), result
        assert not run_module("kubevirt_policy_state", {"states": {"lab/" + healthy: {"cap": 1}}}).get("failed")
        reserved = run_module("vsphere_vm_reservation",
                              {"vms": [vsphere_vm.name], "cpu": {"reservation": 500}, "reason": "INC-9"}, env=vsphere_env)
        assert not reserved.get("failed"), reserved
        fleet.custom.patch_namespaced_custom_object(
            "kubevirt.io", "v1", "lab", "virtualmachineinstances", lost,
            {"metadata": {"annotations": {PREFIX + "cpu-limit-throttle": "{not json"}}})
        assert tune(spare_domain) != before["domain"] and node_state(core, gated_node)["taints"]
        assert allocation(vsphere_vm) != before["vsphere"]

        # 1. Stop every loop: the kill switch on every domain, node and VM, nothing else changed.
        stopped = run_playbook("kill_switch.yml", {"paused": True, "reason": "INC-9 loop distrusted",
                                                   "kubernetes": True, "kubevirt": True}, env=lab_env)
        assert stopped.returncode == 0, stopped.stdout
        info = run_module("libvirt_cputune_info", {"domains": [domain], "sample_seconds": 0})["domains"][0]
        assert info["paused"] is True and info["pause"]["reason"] == "INC-9 loop distrusted", info
        assert node_state(core, untouched_node)["labels"] == {PREFIX + "paused": "true"}
        assert fleet.read(healthy)["metadata"]["labels"].get(PREFIX + "paused") == "true"
        assert tune(spare_domain) != before["domain"] and node_state(core, gated_node)["taints"]

        # 2. Give back everything: every object but the one whose record cannot be read, named with why.
        undone = run_playbook("undo_all.yml", {"reason": "INC-9 undo", "kubernetes": True, "kubevirt": True,
                                               "vsphere_folders": [VCSIM_FOLDER]}, env=lab_env)
        assert undone.returncode != 0, undone.stdout
        failed_lines = [line for line in undone.stdout.splitlines() if "kubevirt caps: lab/" in line]
        assert any(lost in line for line in failed_lines) and not any(healthy in line for line in failed_lines), \
            undone.stdout
        assert tune(spare_domain) == before["domain"]
        info = run_module("libvirt_cputune_info", {"domains": [domain], "sample_seconds": 0})["domains"][0]
        assert info["throttle"] is None and not info["policy"] and info["paused"] is True, info
        gated_after = node_state(core, gated_node)
        assert gated_after["taints"] == before["node"]["taints"] and not gated_after["unschedulable"], gated_after
        assert gated_after["annotations"] == [] and gated_after["labels"] == {PREFIX + "paused": "true"}
        assert fleet.compute_limits(healthy) == before["vm"]
        kept = fleet.annotations(healthy)
        assert PREFIX + "cpu-limit-throttle" not in kept and PREFIX + "policy" not in kept, kept
        assert allocation(vsphere_vm) == before["vsphere"] and record_of(vsphere, vsphere_vm) == ""
        again = run_playbook("undo_all.yml", {"kubernetes": True, "vsphere_folders": [VCSIM_FOLDER]}, env=lab_env)
        recap = [line for line in again.stdout.split("PLAY RECAP")[-1].splitlines() if "ok=" in line]
        assert again.returncode == 0 and recap and all("changed=0" in line for line in recap), again.stdout

        # 3. Start the loops again.
        resumed = run_playbook("kill_switch.yml", {"paused": False, "kubernetes": True, "kubevirt": True},
                               env=lab_env)
        assert resumed.returncode == 0, resumed.stdout
        info = run_module("libvirt_cputune_info", {"domains": [domain], "sample_seconds": 0})["domains"][0]
        assert info["paused"] is False and not policy_element(spare_domain), spare_domain.XMLDesc(0)
        assert node_state(core, untouched_node) == before["untouched"]
        assert PREFIX + "paused" not in (fleet.read(healthy)["metadata"].get("labels") or {})
    finally:
        run_playbook("kill_switch.yml", {"paused": False, "kubernetes": True, "kubevirt": True}, env=lab_env)
        run_module("libvirt_cputune", {"domains": [domain], "state": "restored"})
        run_module("libvirt_policy_state", {"states": {domain: None}})
        run_module("vsphere_vm_reservation", {"vms": [vsphere_vm.name], "state": "restored"}, env=vsphere_env)


def test_a_hypervisor_whose_libvirtd_is_away_is_named_and_fails_the_run_after_the_others(tmp_path, spare_domain):
    """The other host (the lab's) is still switched and given back; the
    host whose libvirtd cannot be reached (a socket no daemon listens on) is
    named with libvirt's own error, and both runs fail at the end."""
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"},
        "children": {"hypervisors": {"hosts": {
            "lab-hypervisor": {"libvirt_uri": "qemu:///system"},
            "hv-away": {"libvirt_uri": "qemu+unix:///system?socket=%s" % (tmp_path / "no-libvirtd.sock")}}},
            "controllers": {"hosts": {"localhost": None}}}}}))
    domain = spare_domain.name()
    try:
        stopped = run_playbook("kill_switch.yml", {"paused": True, "reason": "INC-10"}, inventory=str(hosts))
        assert stopped.returncode != 0, stopped.stdout[-3000:]
        assert "hv-away: libvirt read:" in stopped.stdout and "no-libvirtd.sock" in stopped.stdout, \
            stopped.stdout[-3000:]
        assert run_module("libvirt_cputune_info", {"domains": [domain], "sample_seconds": 0})["domains"][0]["paused"]
        assert not run_module("libvirt_cputune", {"domains": [domain], "cpus": 0.5, "reason": "INC-10"}).get("failed")
        undone = run_playbook("undo_all.yml", {}, inventory=str(hosts))
        assert undone.returncode != 0 and "hv-away: libvirt read:" in undone.stdout, undone.stdout[-3000:]
        info = run_module("libvirt_cputune_info", {"domains": [domain], "sample_seconds": 0})["domains"][0]
        assert info["throttle"] is None and info["paused"] is True, info
    finally:
        run_playbook("kill_switch.yml", {"paused": False}, inventory=str(hosts))
        run_module("libvirt_cputune", {"domains": [domain], "state": "restored"})
        run_module("libvirt_policy_state", {"domains": [domain], "paused": False})
