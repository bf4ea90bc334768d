# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Baseline (b) of bench/vsphere_reservation.py: a plain pyVmomi script that
sets the CPU and memory reservation of the named VMs, with the same lookup as
the module (one RetrievePropertiesEx over a container view) and one
ReconfigVM_Task per VM that differs, all tasks waited for together with
pyVim's WaitForTasks. No record, no validation, no per-VM report.

    python vsphere_reservation_pyvmomi.py NAMES_JSON_FILE CPU_MHZ MEMORY_MB

Connection details come from the VMWARE_* environment variables."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import ssl
import sys

from pyVim.connect import Disconnect, SmartConnect
from pyVim.task import WaitForTasks
from pyVmomi import vim, vmodl


def main():
    names_file, cpu_mhz, memory_mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open(names_file) as handle:
        names = set(json.load(handle))
    si = SmartConnect(host=os.environ["VMWARE_HOST"], port=int(os.environ["VMWARE_PORT"]),
                      user=os.environ["VMWARE_USER"], pwd=os.environ["VMWARE_PASSWORD"],
                      sslContext=ssl._create_unverified_context())
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
    collector = vmodl.query.PropertyCollector
    spec = collector.FilterSpec(
        objectSet=[collector.ObjectSpec(obj=view, skip=True, selectSet=[
            collector.TraversalSpec(name="view", path="view", skip=False, type=vim.view.ContainerView)])],
        propSet=[collector.PropertySpec(type=vim.VirtualMachine, pathSet=[
            "name", "config.cpuAllocation", "config.memoryAllocation"])])
    result = content.propertyCollector.RetrievePropertiesEx([spec], collector.RetrieveOptions())
    objects = list(result.objects)
    while result.token:
        result = content.propertyCollector.ContinueRetrievePropertiesEx(result.token)
        objects.extend(result.objects)
    view.Destroy()
    tasks = []
    for obj in objects:
        props = dict((prop.name, prop.val) for prop in obj.propSet)
        if props["name"] not in names:
            continue
        config = vim.vm.ConfigSpec()
        if props["config.cpuAllocation"].reservation != cpu_mhz:
            config.cpuAllocation = vim.ResourceAllocationInfo(reservation=cpu_mhz)
        if props["config.memoryAllocation"].reservation != memory_mb:
            config.memoryAllocation = vim.ResourceAllocationInfo(reservation=memory_mb)
        if config.cpuAllocation or config.memoryAllocation:
            tasks.append(obj.obj.ReconfigVM_Task(spec=config))
    if tasks:
        WaitForTasks(tasks, si=si)
    Disconnect(si)
    print(json.dumps({"changed": len(tasks)}))


if __name__ == "__main__":
    main()
