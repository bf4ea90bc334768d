"""The lab's vSphere simulator answers pyVmomi: a VM's CPU reservation is
reconfigured and read back."""

import pytest
from pyVmomi import vim

from vsphere_task import wait_for_task

pytestmark = pytest.mark.xdist_group("vcsim")


def first_vm(si):
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
    try:
        return view.view[0]
    finally:
        view.Destroy()


def test_cpu_reservation_is_reconfigured_and_read_back(vsphere):
    vm = first_vm(vsphere)
    before = vm.config.cpuAllocation
    wanted = 250 if before.reservation != 250 else 500
    spec = vim.vm.ConfigSpec(cpuAllocation=vim.ResourceAllocationInfo(
        reservation=wanted, limit=before.limit, shares=before.shares, expandableReservation=before.expandableReservation))
    wait_for_task(vm.ReconfigVM_Task(spec))
    assert vm.config.cpuAllocation.reservation == wanted

    spec.cpuAllocation.reservation = before.reservation
    wait_for_task(vm.ReconfigVM_Task(spec))
    assert vm.config.cpuAllocation.reservation == before.reservation
