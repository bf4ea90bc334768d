"""playbooks/rollout.yml on the lab's one kube-apiserver (KubeVirt's CRDs),
libvirtd and vcsim, over an inventory of four lab "clusters" made for the
test: each is a namespace with a KubeVirt VM, a shut-off libvirt domain and
a vcsim VM, and the run has a KubeVirt CR of its own (rollout_fixture). The
canary and the waves are read from the plays ansible-playbook ran; every
object's full state is read independently before and after."""

import json
import os
import sys
import uuid

import pytest
import yaml

import playbook_forkserver
import rollout_fixture
from run_module import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.serial]

UNITS = ("a", "b", "c", "d")
TARGET_TEMPLATE = {"vm_class": "burstable", "cpu_request": "250m", "cpu_limit": "1", "memory_limit": "auto"}


@pytest.fixture
def fleet(lab, tmp_path):
    """Four units and a KubeVirt CR, deleted afterwards whatever the test did."""
    for key in ("VMWARE_HOST", "VMWARE_PORT", "VMWARE_USER", "VMWARE_PASSWORD", "OVERCOMMIT_KUBECONFIG_ADMIN",
                "OVERCOMMIT_LIBVIRT_URI"):
        os.environ.setdefault(key, lab[key])
    run = "t" + uuid.uuid4().hex[:6]
    try:
        yield rollout_fixture.up(run, str(tmp_path / "fixture.json"), UNITS)
    finally:
        rollout_fixture.down(run)


def inventory(tmp_path, fleet, config_unit="a", host_vars=None):
    """An inventory of the fleet's units: unit-a is the canary; `config_unit`
    also sets the KubeVirt CR's ratio."""
    root = tmp_path / "inventory"
    (root / "group_vars").mkdir(parents=True)
    (root / "host_vars").mkdir()
    hosts = {"all": {"vars": {"ansible_connection": "local",
                              "ansible_python_interpreter": "{{ ansible_playbook_python }}"},
                     "children": {"rollout": {"children": {
                         "canary": {"hosts": {"unit-a": None}},
                         "kubevirt_clusters": {"hosts": dict(("unit-" + unit, None) for unit in UNITS)}}}}}}
    (root / "hosts.yml").write_text(yaml.safe_dump(hosts))
    (root / "group_vars" / "rollout.yml").write_text(yaml.safe_dump({
        "rollout_wave_health": {"max_failed": 0}, "rollout_wave_health_sample_seconds": 0.2,
        "rollout_wave_reason": "rollout test"}))
    for unit, names in fleet["units"].items():
        values = {
            "rollout_wave_kubevirt_templates": [dict(TARGET_TEMPLATE, namespace=names["namespace"], names=[names["vm"]])],
            "rollout_wave_libvirt_uri": os.environ["OVERCOMMIT_LIBVIRT_URI"],
            "rollout_wave_libvirt_classes": {names["domain"]: "burstable"},
            "rollout_wave_libvirt_baselines": {names["domain"]: 0.5},
            "rollout_wave_vsphere_reservation": {"vms": [names["vsphere_vm"]], "cpu": {"reservation": 100},
                                                 "memory": {"reservation": 32}},
        }
        if unit == config_unit:
            values["rollout_wave_kubevirt_config"] = dict(fleet["cr"], cpu_allocation_ratio=8)
        values.update((host_vars or {}).get(unit, {}))
        (root / "host_vars" / ("unit-%s.yml" % unit)).write_text(yaml.safe_dump(values))
    return str(root)


def rollout(lab, inventory_dir, *options, **extra_vars):
    """ansible-playbook's rc, its plays (json callback) or text output."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1",
               K8S_AUTH_KUBECONFIG=lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])
    for key in ("VMWARE_HOST", "VMWARE_PORT", "VMWARE_USER", "VMWARE_PASSWORD", "VMWARE_VALIDATE_CERTS"):
        env[key] = lab[key]
    if "--diff" not in options:
        env["ANSIBLE_STDOUT_CALLBACK"] = "ansible.builtin.json"
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory_dir,
               os.path.join(ROOT, "playbooks", "rollout.yml"), "-e", json.dumps(extra_vars)] + list(options)
    completed = playbook_forkserver.run(command, env=env)
    output = completed.stdout if "--diff" in options else json.loads(completed.stdout)
    return completed.returncode, output, completed.stderr


def batches(output):
    """(play name, hosts) of every batch the playbook ran, in order."""
    return [(play["play"]["name"].split(" - ")[0], sorted(set(
        host for task in play["tasks"] for host in task["hosts"]))) for play in output["plays"]]


def changed(output):
    return dict((host, stats["changed"]) for host, stats in output["stats"].items())


def assert_rolled_out(state, fleet, unit):
    vm = state["units"][unit]["vm"]
    resources = vm["spec"]["template"]["spec"]["domain"]["resources"]
    assert vm["labels"]["overcommit.control/class"] == "burstable", vm
    assert resources["requests"]["cpu"] == "250m" and resources["limits"]["cpu"] == "1", resources
    assert "<ns0:class>burstable</ns0:class>" in state["units"][unit]["domain_metadata"]
    assert "<ns0:baseline>0.5</ns0:baseline>" in state["units"][unit]["domain_metadata"]
    assert state["units"][unit]["vsphere"]["cpu"]["reservation"] == 100
    assert state["units"][unit]["vsphere"]["memory"]["reservation"] == 32
    assert json.loads(state["units"][unit]["record"][0])["reason"] == "rollout test"


def test_check_mode_then_canary_and_waves_converge_and_a_rerun_changes_nothing(lab, tmp_path, fleet):
    inventory_dir = inventory(tmp_path, fleet)
    before = rollout_fixture.read(fleet)

    rc, text, stderr = rollout(lab, inventory_dir, "--check", "--diff")
    assert rc == 0, text[-4000:] + stderr[-2000:]
    assert rollout_fixture.read(fleet) == before
    # The whole rollout as a diff: every unit's VM, domain and node VM, and the CR.
    for unit, names in fleet["units"].items():
        assert "KubeVirt VM %s/%s: " % (names["namespace"], names["vm"]) in text
        assert "--- before: vm %s" % names["vsphere_vm"] in text
    assert '-        "class": "shared"' in text and '+        "class": "burstable"' in text
    assert '"cpu_allocation_ratio": 8' in text

    rc, output, stderr = rollout(lab, inventory_dir, rollout_serial=[1, 2])
    assert rc == 0, json.dumps(output)[-4000:] + stderr[-2000:]
    # The playbook's variables checked first, then every unit's, the canary alone, then batches of 1 and 2.
    assert batches(output) == [("Check the playbook's variables before anything changes", ["localhost"]),
                               ("Check every unit's variables before any unit changes",
                                ["unit-a", "unit-b", "unit-c", "unit-d"]),
                               ("Canary", ["unit-a"]), ("Waves", ["unit-b"]), ("Waves", ["unit-c", "unit-d"])]
    after = rollout_fixture.read(fleet)
    for unit in UNITS:
        assert_rolled_out(after, fleet, unit)
    assert after["cr"]["configuration"]["developerConfiguration"] == {
        "featureGates": ["Snapshot"], "memoryOvercommit": 110, "cpuAllocationRatio": 8}

    rc, output, stderr = rollout(lab, inventory_dir)
    assert rc == 0, json.dumps(output)[-4000:] + stderr[-2000:]
    # The playbook's variables are checked on localhost, which changes nothing either.
    assert changed(output) == {"localhost": 0, "unit-a": 0, "unit-b": 0, "unit-c": 0, "unit-d": 0}
    assert rollout_fixture.read(fleet) == after


def test_an_unhealthy_wave_stops_the_rollout_and_is_put_back_exactly(lab, tmp_path, fleet):
    # unit-c sets the CR's ratio and asks for a run queue no host has (the reader itself runs).
    inventory_dir = inventory(tmp_path, fleet, config_unit="c",
                              host_vars={"c": {"rollout_wave_health": {"max_run_queue_per_cpu": 0}}})
    before = rollout_fixture.read(fleet)

    rc, output, stderr = rollout(lab, inventory_dir, rollout_serial=1)
    assert rc != 0, json.dumps(output)[-4000:]
    assert [name for name, _hosts in batches(output)][2:] == ["Canary", "Waves", "Waves"]
    assert batches(output)[-1][1] == ["unit-c"]
    after = rollout_fixture.read(fleet)
    for unit in ("a", "b"):
        assert_rolled_out(after, fleet, unit)
    # The unhealthy wave is back exactly as it was, the CR too; the next wave never ran.
    assert after["units"]["c"] == before["units"]["c"]
    assert after["cr"] == before["cr"]
    assert after["units"]["d"] == before["units"]["d"]
    stopped = [task["hosts"]["unit-c"] for play in output["plays"] for task in play["tasks"]
               if task["hosts"].get("unit-c", {}).get("failed")]
    assert "unhealthy after its wave: " in stopped[0]["msg"] and "runnable tasks per CPU is above 0" in stopped[0]["msg"]
    assert "the wave was put back and the rollout stops here" in stopped[-1]["msg"], stopped[-1]
    assert "cpu_allocation_ratio back to unset" in stopped[-1]["msg"]
    assert "vSphere VM %s: restored from its record" % fleet["units"]["c"]["vsphere_vm"] in stopped[-1]["msg"]
    assert "Not put back" not in stopped[-1]["msg"]
    assert output["stats"]["unit-d"]["changed"] == 0
