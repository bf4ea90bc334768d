"""Fixtures of the bad-input corpus: the objects its cases target, made by
the fixtures and helpers of the platform tests (folders k8s, vsphere,
esxi_guard), so that a case aims at a real object whose state it can read
before and after."""

import importlib
import importlib.util
import os
import sys
import uuid

import pytest

from lab_domain_type import lab_domain_type

HERE = os.path.dirname(os.path.abspath(__file__))
for _folder in ("k8s", "vsphere", "esxi_guard"):
    _path = os.path.normpath(os.path.join(HERE, os.pardir, _folder))
    if _path not in sys.path:
        sys.path.append(_path)


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The Kubernetes tests' own fixtures: throwaway nodes, a KubeVirt CR, VMs, VMIs with launcher pods.
_k8s = _load("k8s_test_fixtures", os.path.join(HERE, os.pardir, "k8s", "conftest.py"))
make_nodes = _k8s.make_nodes
kubevirt_cr = importlib.import_module("test_kubevirt_config").kubevirt_cr
fleet = importlib.import_module("test_kubevirt_vm_cpu_limit").fleet
vms = importlib.import_module("test_kubevirt_vm_resources").vms


@pytest.fixture(scope="module")
def vsphere_vm(vsphere):
    """A throwaway powered-on VM in vcsim (the lab's own VMs are left to their tests), destroyed afterwards."""
    from pyVmomi import vim

    from lab_fixture import create_vm, objects
    from vsphere_task import wait_for_task

    hosts = sorted((h for h in objects(vsphere, vim.HostSystem) if isinstance(h.parent, vim.ClusterComputeResource)),
                   key=lambda h: h.name)
    vm = create_vm(vsphere, "oc-corpus-%s" % uuid.uuid4().hex[:8], hosts[0], 2)
    yield vm
    if vm.runtime.powerState == "poweredOn":
        wait_for_task(vm.PowerOffVM_Task())
    wait_for_task(vm.Destroy_Task())


SPARE_DOMAIN = ("<domain type='%s'><name>%s</name><memory unit='MiB'>32</memory><vcpu>1</vcpu>"
                "<os><type arch='x86_64'>hvm</type></os></domain>")


@pytest.fixture(scope="module")
def spare_domain(libvirt_conn):
    """A throwaway persistent libvirt domain, running (one vCPU, class shared
    by default, no disk: its firmware idles), so that both its live tuning
    and its persistent config are read and could change: the corpus's
    libvirt target, so that what it plants never meets another test's run
    on the lab guests. Stopped and undefined afterwards."""
    domain = libvirt_conn.defineXML(SPARE_DOMAIN % (lab_domain_type(), "oc-corpus-%s" % uuid.uuid4().hex[:8]))
    domain.create()
    yield domain
    if domain.isActive():
        domain.destroy()
    domain.undefine()
