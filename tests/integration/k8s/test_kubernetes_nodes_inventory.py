"""The kubernetes_nodes inventory plugin against the lab's real
kube-apiserver, as `ansible-inventory` and `ansible-playbook -i` read it:
throwaway Nodes labelled with zones, roles, a pool and an ESXi host, one of
them gated by node_admission, read as the least-privilege operator."""

import json
import os
import subprocess
import sys
import uuid

import pytest
import yaml
from kubernetes import client

from run_module import ROOT, run_module

pytestmark = [pytest.mark.isolated]

RUN_LABEL = "overcommit.test/inventory"
BIN = os.path.dirname(sys.executable)


@pytest.fixture
def nodes(kube_admin):
    """Three nodes of one run: (run id, {name: labels})."""
    core = client.CoreV1Api(kube_admin)
    run = uuid.uuid4().hex[:8]
    made = {
        "oc-inv-%s-a" % run: {"topology.kubernetes.io/zone": "zone-a", "node-role.kubernetes.io/kubevirt": "",
                              "overcommit.control/class-pool": "shared", "overcommit.control/esxi-host": "esx-1"},
        "oc-inv-%s-b" % run: {"topology.kubernetes.io/zone": "zone-a", "overcommit.control/paused": "true"},
        "oc-inv-%s-c" % run: {"topology.kubernetes.io/zone": "zone-b", "node-role.kubernetes.io/kubevirt": ""},
    }
    for index, (name, labels) in enumerate(sorted(made.items())):
        core.create_node({"metadata": {"name": name, "labels": dict(labels, **{RUN_LABEL: run})}})
        core.patch_node_status(name, {"status": {"addresses": [
            {"type": "InternalIP", "address": "192.0.2.%d" % (index + 10)}, {"type": "Hostname", "address": name}]}})
    yield run, made
    for name in made:
        core.delete_node(name)


def inventory_file(folder, run, **options):
    path = os.path.join(str(folder), "lab.kubernetes_nodes.yml")
    with open(path, "w") as handle:
        yaml.safe_dump(dict({"plugin": "overcommit.control.kubernetes_nodes",
                             "label_selector": "%s=%s" % (RUN_LABEL, run)}, **options), handle)
    return path


def ansible_inventory(lab, path, tmp_path, *extra):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1",
               K8S_AUTH_KUBECONFIG=lab["OVERCOMMIT_KUBECONFIG_OPERATOR"], ANSIBLE_INVENTORY_ENABLED="auto",
               ANSIBLE_INVENTORY_UNPARSED_FAILED="1", ANSIBLE_HOME=str(tmp_path / "ansible-home"))
    return subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", path, "--list"] + list(extra),
                          capture_output=True, text=True, env=env, timeout=120, check=False)


def plain(value):
    """ansible-inventory's JSON with the marks of untrusted values taken off
    (what the plugin reads from the API server is not trusted as templates)."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return dict((key, plain(item)) for key, item in value.items())
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def listed(completed):
    assert completed.returncode == 0, completed.stdout[-2000:] + completed.stderr[-3000:]
    return plain(json.loads(completed.stdout))


def members(inventory, group):
    return sorted((inventory.get(group) or {}).get("hosts") or [])


def test_nodes_become_the_hypervisors_with_groups_by_zone_role_pool_esxi_host_and_gate(lab, nodes, tmp_path):
    run, made = nodes
    a, b, c = sorted(made)
    gated = run_module("node_admission", {"names": [a], "state": "gated", "reason": "inventory test",
                                          "kubeconfig": lab["OVERCOMMIT_KUBECONFIG_OPERATOR"]})
    assert not gated.get("failed"), gated
    path = inventory_file(tmp_path, run, keyed_groups=[{"key": "overcommit_node.zone", "prefix": "wave"}],
                          compose={"overcommit_paused": "overcommit_node.paused"},
                          groups={"kubevirt_nodes": "'kubevirt' in overcommit_node.roles"})
    inventory = listed(ansible_inventory(lab, path, tmp_path))
    hostvars = inventory["_meta"]["hostvars"]
    assert members(inventory, "hypervisors") == [a, b, c]
    assert members(inventory, "controllers") == ["localhost"] and hostvars["localhost"]["ansible_connection"] == "local"
    assert (members(inventory, "gated"), members(inventory, "open")) == ([a], [b, c])
    assert (members(inventory, "zone_zone_a"), members(inventory, "zone_zone_b")) == ([a, b], [c])
    assert members(inventory, "role_kubevirt") == [a, c] and members(inventory, "pool_shared") == [a]
    assert members(inventory, "esxi_esx_1") == [a]
    # constructed's keyed_groups, compose and groups, as kubernetes.core's and community.vmware's inventories take them.
    assert (members(inventory, "wave_zone_a"), members(inventory, "wave_zone_b")) == ([a, b], [c])
    assert members(inventory, "kubevirt_nodes") == [a, c]
    assert hostvars[b]["overcommit_paused"] is True and hostvars[a]["overcommit_paused"] is False
    assert hostvars[a]["kubernetes_node"] == a and hostvars[a]["ansible_host"] == "192.0.2.10"
    assert hostvars[a]["overcommit_node"]["gate"]["reason"] == "inventory test"

    # filters leave out the nodes a condition refuses.
    path = inventory_file(tmp_path, run, filters=["not overcommit_node.paused", "overcommit_node.zone == 'zone-a'"])
    assert members(listed(ansible_inventory(lab, path, tmp_path)), "hypervisors") == [a]


def test_the_cache_answers_until_flushed(lab, nodes, tmp_path):
    run, made = nodes
    a = sorted(made)[0]
    cache = tmp_path / "cache"
    path = inventory_file(tmp_path, run, cache=True, cache_plugin="ansible.builtin.jsonfile",
                          cache_connection=str(cache), cache_timeout=600)
    assert members(listed(ansible_inventory(lab, path, tmp_path)), "open") == sorted(made)
    assert os.listdir(str(cache)), "nothing was cached"
    gated = run_module("node_admission", {"names": [a], "state": "gated", "reason": "cache test",
                                          "kubeconfig": lab["OVERCOMMIT_KUBECONFIG_OPERATOR"]})
    assert not gated.get("failed"), gated
    # Read from the cache: the gate set meanwhile is not seen, until the cache is flushed.
    assert members(listed(ansible_inventory(lab, path, tmp_path)), "gated") == []
    assert members(listed(ansible_inventory(lab, path, tmp_path, "--flush-cache")), "gated") == [a]


@pytest.mark.parametrize("options, field", [
    ({"address_type": "PublicIP"}, "address_type"),
    ({"hypervisors_group": "hyper-visors"}, "hypervisors_group"),
    ({"kubeconfig": "/nonexistent/kubeconfig"}, "kubeconfig"),
    ({"request_timeout": 0}, "request_timeout"),
])
def test_options_that_cannot_work_fail_the_inventory_naming_them(lab, tmp_path, options, field):
    path = inventory_file(tmp_path, "none", **options)
    completed = ansible_inventory(lab, path, tmp_path)
    assert completed.returncode != 0
    assert field in completed.stderr and "Traceback" not in completed.stderr, completed.stderr[-3000:]
