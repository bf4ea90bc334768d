"""esxi_guard against the lab's kube-apiserver and vcsim: node_overcommit_info
sums, vsphere_overcommit_info's BIOS UUIDs, and the role run through
playbooks/esxi_guard.yml, gating the node of the hot host and opening it
again, with labels, reservations and the report checked independently."""

import json
import os
import sys
import uuid

import pytest
from kubernetes import client
from pyVmomi import vim

import lab_fixture
import playbook_forkserver
from run_module import INVENTORY, ROOT, run_module

pytestmark = pytest.mark.xdist_group("vcsim")

GIB = 2 ** 30
HOST_LABEL = "overcommit.control/esxi-host"
TAINT = "overcommit.control/esxi-pressure"


@pytest.fixture
def guarded(lab, tmp_path):
    """Throwaway node VMs on a hot and a cool host and the nodes on them;
    deleted afterwards, whatever the test did."""
    for key in ("VMWARE_HOST", "VMWARE_PORT", "VMWARE_USER", "VMWARE_PASSWORD", "OVERCOMMIT_KUBECONFIG_ADMIN"):
        os.environ.setdefault(key, lab[key])
    run = "t" + uuid.uuid4().hex[:6]
    try:
        yield lab_fixture.up(run, str(tmp_path / "fixture.json"))
    finally:
        lab_fixture.down(run)


def run_playbook(lab, extra_vars):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1",
               K8S_AUTH_KUBECONFIG=lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])
    for key in ("VMWARE_HOST", "VMWARE_PORT", "VMWARE_USER", "VMWARE_PASSWORD", "VMWARE_VALIDATE_CERTS"):
        env[key] = lab[key]
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY,
               os.path.join(ROOT, "playbooks", "esxi_guard.yml"), "-e", json.dumps(extra_vars)]
    completed = playbook_forkserver.run(command, env=env)
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    return completed.stdout


def nodes_by_name(kube_admin, selector):
    return dict((node.metadata.name, node) for node in client.CoreV1Api(kube_admin).list_node(label_selector=selector).items)


def vm_allocation(vsphere, name):
    content = vsphere.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
    try:
        vm = [v for v in view.view if v.name == name][0]
    finally:
        view.Destroy()
    return vm.config.cpuAllocation.reservation, vm.config.memoryAllocation.reservation


def test_node_overcommit_info_sums_running_pods_as_the_scheduler(guarded, lab):
    nodes = guarded["nodes"]
    result = run_module("node_overcommit_info", {"names": [nodes["hot"], "oc-esxi-no-such-node"],
                                                 "kubeconfig": lab["OVERCOMMIT_KUBECONFIG_OPERATOR"]})
    assert not result.get("failed"), result
    assert result["nodes_not_found"] == ["oc-esxi-no-such-node"]
    hot = result["nodes"][0]
    assert hot["system_uuid"] == guarded["uuids"]["hot"]
    # Two pending pods count (app 1.5 + sidecar 0.5, and 0.5 CPU); the finished pod does not.
    assert hot["pods"] == 2
    assert hot["cpu"] == {"allocatable": 8.0, "requests": 2.5, "limits": 4.0, "requests_ratio": 0.312,
                          "limits_ratio": 0.5, "pods_without_limit": 1}
    assert hot["memory"]["requests"] == 1536 * 2 ** 20 and hot["memory"]["limits"] == 2 * GIB
    assert hot["memory"]["limits_ratio"] == 0.125

    by_selector = run_module("node_overcommit_info", {"label_selector": guarded["selector"]})
    assert sorted(node["name"] for node in by_selector["nodes"]) == sorted(nodes.values())
    provider = [node for node in by_selector["nodes"] if node["name"] == nodes["provider"]][0]
    assert provider["provider_id"] == "vsphere://" + guarded["uuids"]["provider"] and provider["pods"] == 0


def test_vsphere_overcommit_info_gives_each_vm_its_bios_uuid(guarded):
    result = run_module("vsphere_overcommit_info", {"vms": [guarded["vms"]["hot"]], "vm_stats": False})
    assert [(vm["name"], vm["uuid"]) for vm in result["vms"]] == [(guarded["vms"]["hot"], guarded["uuids"]["hot"])]


def test_role_labels_reserves_gates_the_hot_host_and_opens_it_again(guarded, lab, kube_admin, vsphere, tmp_path):
    nodes = guarded["nodes"]
    report_path = str(tmp_path / "two-layer.json")
    common = {"node_selector": guarded["selector"], "max_cpu_ready_pct": None, "max_balloon_mb": None}
    output = run_playbook(lab, dict(common, max_vcpu_per_core=guarded["watermark"], report_path=report_path,
                                    reservation={"cpu": {"reservation": 200}, "memory": {"reservation": 64}}))
    assert "gated (vcpu_per_core %g > %g)" % (guarded["hot_ratio"], guarded["watermark"]) in output

    state = nodes_by_name(kube_admin, guarded["selector"])
    hot = state[nodes["hot"]]
    assert hot.metadata.labels[HOST_LABEL] == guarded["hot_host"]
    assert [(t.key, t.value, t.effect) for t in hot.spec.taints] == [(TAINT, guarded["hot_host"], "NoSchedule")]
    record = json.loads(hot.metadata.annotations["overcommit.control/gate"])
    assert record["reason"] == "ESXi host %s over its watermark: vcpu_per_core %g > %g" % (
        guarded["hot_host"], guarded["hot_ratio"], guarded["watermark"])
    for role in ("cool", "provider", "named"):
        node = state[nodes[role]]
        assert node.metadata.labels[HOST_LABEL] == guarded["cool_host"] and not node.spec.taints
    orphan = state[nodes["orphan"]]
    assert HOST_LABEL not in orphan.metadata.labels and not orphan.spec.taints
    for role in ("hot", "cool", "provider", "named"):
        assert vm_allocation(vsphere, guarded["vms"][role]) == (200, 64)

    with open(report_path) as handle:
        report = json.load(handle)
    rows = dict((row["node"], row) for row in report["nodes"])
    assert rows[nodes["cool"]]["matched_by"] == "system_uuid"  # byte-swapped, upper case
    assert rows[nodes["provider"]]["matched_by"] == "provider_id"
    assert rows[nodes["named"]]["matched_by"] == "name"
    assert report["unmatched"] == [nodes["orphan"]]
    hot_row = rows[nodes["hot"]]
    assert hot_row["kubernetes"]["cpu"]["limits_ratio"] == 0.5
    assert hot_row["esxi"]["vcpu_per_core"] == guarded["hot_ratio"]
    assert hot_row["compound"]["cpu"] == round(0.5 * guarded["hot_ratio"], 3)
    assert set(hot_row["esxi"]) >= {"memory_ratio", "cpu_ready_pct", "balloon_mb", "swapped_mb"}

    run_playbook(lab, dict(common, max_vcpu_per_core=guarded["hot_ratio"] + 1))
    hot = nodes_by_name(kube_admin, guarded["selector"])[nodes["hot"]]
    assert not hot.spec.taints
    assert "overcommit.control/gate" not in (hot.metadata.annotations or {})
    assert hot.metadata.labels[HOST_LABEL] == guarded["hot_host"]


def test_role_leaves_a_gate_of_another_owner_closed(guarded, lab, kube_admin):
    """A node gated for another reason too keeps that gate when its host is back under."""
    nodes = guarded["nodes"]
    other = run_module("node_admission", {"names": [nodes["hot"]], "taints": [{"key": "pressure", "value": "psi"}],
                                          "reason": "PSI", "max_gated_share": 1.0})
    assert other["changed"], other
    common = {"node_selector": guarded["selector"], "max_cpu_ready_pct": None, "max_balloon_mb": None}
    run_playbook(lab, dict(common, max_vcpu_per_core=guarded["watermark"]))
    hot = nodes_by_name(kube_admin, guarded["selector"])[nodes["hot"]]
    assert sorted(t.key for t in hot.spec.taints) == ["overcommit.control/esxi-pressure", "overcommit.control/pressure"]
    run_playbook(lab, dict(common, max_vcpu_per_core=guarded["hot_ratio"] + 1))
    hot = nodes_by_name(kube_admin, guarded["selector"])[nodes["hot"]]
    assert sorted(t.key for t in hot.spec.taints) == ["overcommit.control/esxi-pressure", "overcommit.control/pressure"]
    assert hot.metadata.labels[HOST_LABEL] == guarded["hot_host"]
