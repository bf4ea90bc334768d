"""Independent pyVmomi checks of what the vSphere modules did to the lab VMs."""

from pyVmomi import vim

LAB_VMS = ["DC0_C0_RP0_VM0", "DC0_C0_RP0_VM1", "DC0_C0_RP0_VM2", "DC0_C0_RP0_VM3"]
ATTRIBUTE = "overcommit.control.reservation"


def find_vms(si, names):
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
    try:
        by_name = dict((vm.name, vm) for vm in view.view)
    finally:
        view.Destroy()
    return [by_name[name] for name in names]


def allocation(vm):
    """What the module manages on a VM, as vSphere reports it."""
    config = vm.config
    out = {"locked": bool(config.memoryReservationLockedToMax)}
    for resource, info in (("cpu", config.cpuAllocation), ("memory", config.memoryAllocation)):
        out[resource] = {"reservation": info.reservation, "limit": info.limit,
                         "level": info.shares.level if info.shares else None,
                         "shares": info.shares.shares if info.shares and info.shares.level == "custom" else None}
    return out


def record_of(si, vm):
    content = si.RetrieveContent()
    keys = [f.key for f in content.customFieldsManager.field or [] if f.name == ATTRIBUTE]
    values = [v.value for v in vm.customValue or [] if v.key in keys]
    return values[0] if values else ""
