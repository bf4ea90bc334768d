"""Fixtures for the vSphere module tests: the lab's connection details as
the modules' environment, the lab VMs read independently with pyVmomi, and a
safety net that puts back every allocation and record a test leaves behind."""

import pytest
from pyVmomi import vim

from run_module import run_module
from vsphere_checks import ATTRIBUTE, LAB_VMS, allocation, find_vms, record_of
from vsphere_task import wait_for_task


def expandable(vm):
    return (vm.config.cpuAllocation.expandableReservation, vm.config.memoryAllocation.expandableReservation)


@pytest.fixture(scope="session")
def vmware_env(lab):
    return dict((key, lab[key]) for key in ("VMWARE_HOST", "VMWARE_PORT", "VMWARE_USER", "VMWARE_PASSWORD",
                                            "VMWARE_VALIDATE_CERTS"))


@pytest.fixture
def run(vmware_env):
    """Runs a module with the lab's VMWARE_* environment."""
    def runner(module, args, **kwargs):
        env = dict(vmware_env, **kwargs.pop("env", {}))
        return run_module(module, args, env=env, **kwargs)
    return runner


@pytest.fixture
def lab_vms(vsphere):
    """The four lab VMs; whatever a test leaves changed is put back after it."""
    vms = find_vms(vsphere, LAB_VMS)
    saved = [(vm, allocation(vm), expandable(vm), record_of(vsphere, vm)) for vm in vms]
    yield vms
    for vm, before, was_expandable, record in saved:
        # vcsim drops the fields a reconfigure leaves out (expandableReservation
        # too), so the whole allocation goes back whenever anything differs.
        if allocation(vm) != before or expandable(vm) != was_expandable:
            spec = vim.vm.ConfigSpec(memoryReservationLockedToMax=before["locked"])
            for index, resource in enumerate(("cpu", "memory")):
                values = before[resource]
                setattr(spec, resource + "Allocation", vim.ResourceAllocationInfo(
                    reservation=values["reservation"], limit=values["limit"],
                    expandableReservation=was_expandable[index],
                    shares=vim.SharesInfo(level=values["level"] or "normal", shares=values["shares"] or 0)))
            wait_for_task(vm.ReconfigVM_Task(spec))
        if record_of(vsphere, vm) != record:
            content = vsphere.RetrieveContent()
            key = [f.key for f in content.customFieldsManager.field if f.name == ATTRIBUTE][0]
            content.customFieldsManager.SetField(entity=vm, key=key, value=record)
