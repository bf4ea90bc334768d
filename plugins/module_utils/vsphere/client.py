# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The only code that talks to vSphere: one login, bulk property-collector
reads, reconfigure tasks waited for together, performance queries. Returns
plain data (managed objects are named by their id); vSphere faults become
VsphereClientError with the server's message."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ssl

from ansible.module_utils.basic import env_fallback

try:
    from pyVim.connect import Disconnect, SmartConnect
    from pyVmomi import vim, vmodl
    from pyVmomi.VmomiSupport import DataObject, ManagedObject
except ImportError:  # reported by the modules through HAS_PYVMOMI
    vim = vmodl = DataObject = ManagedObject = None

HAS_PYVMOMI = vim is not None

# Properties read for every VM in one query; `config` sub-properties rather
# than `config` itself, which would carry every device of every VM.
VM_PROPERTIES = (
    "name", "parent", "customValue", "runtime.powerState", "runtime.host",
    "config.uuid", "config.instanceUuid", "config.template", "config.changeVersion",
    "config.hardware.numCPU", "config.hardware.memoryMB",
    "config.cpuAllocation", "config.memoryAllocation", "config.memoryReservationLockedToMax",
)
HOST_PROPERTIES = ("name", "parent", "summary.hardware", "runtime.connectionState", "runtime.inMaintenanceMode")
CONTAINER_PROPERTIES = ("name", "parent")
TASK_WAIT_SECONDS = 600


def connection_argument_spec():
    """Connection options as community.vmware names them, with the same
    environment fallbacks."""
    return dict(
        hostname=dict(type="str", fallback=(env_fallback, ["VMWARE_HOST"])),
        username=dict(type="str", aliases=["user", "admin"], fallback=(env_fallback, ["VMWARE_USER"])),
        password=dict(type="str", aliases=["pass", "pwd"], no_log=True, fallback=(env_fallback, ["VMWARE_PASSWORD"])),
        port=dict(type="int", default=443, fallback=(env_fallback, ["VMWARE_PORT"])),
        validate_certs=dict(type="bool", default=True, fallback=(env_fallback, ["VMWARE_VALIDATE_CERTS"])),
    )


class VsphereClientError(Exception):
    def __init__(self, message, fault=None):
        super(VsphereClientError, self).__init__(message)
        self.fault = fault


def fault_message(exc):
    """The server's own words for a fault, and the fault's type name."""
    # pyVmomi names fault classes by their full type, e.g. vim.fault.ConcurrentAccess.
    name = type(exc).__name__.split(".")[-1]
    msg = getattr(exc, "msg", None) or getattr(exc, "localizedMessage", None) or str(exc)
    return msg, name


def _plain(value):
    """pyVmomi data objects as dicts of their set properties, recursively."""
    if isinstance(value, DataObject):
        return dict((prop.name, _plain(getattr(value, prop.name))) for prop in value._GetPropertyList()
                    if prop.name not in ("dynamicType", "dynamicProperty") and getattr(value, prop.name) is not None)
    if isinstance(value, ManagedObject):
        return value._moId
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _allocation(info):
    """A ResourceAllocationInfo as the flat fields the planner compares."""
    if info is None:
        return {"reservation": None, "limit": None, "shares_level": None, "shares": None}
    shares = info.shares
    return {
        "reservation": info.reservation,
        "limit": info.limit,
        "shares_level": str(shares.level) if shares is not None and shares.level is not None else None,
        "shares": shares.shares if shares is not None else None,
    }


def _allocation_spec(fields):
    info = vim.ResourceAllocationInfo()
    if "reservation" in fields:
        info.reservation = fields["reservation"]
    if "limit" in fields:
        info.limit = fields["limit"]
    if "shares_level" in fields:
        # SharesInfo needs both members; the number only counts for `custom`.
        info.shares = vim.SharesInfo(level=fields["shares_level"], shares=fields.get("shares") or 0)
    return info


def config_spec(changes, change_version):
    """A ConfigSpec carrying only the given fields: {"cpu": {...}, "memory":
    {...}, "memory_reservation_locked_to_max": bool}; guarded by the
    changeVersion the change was planned against."""
    spec = vim.vm.ConfigSpec(changeVersion=change_version)
    if changes.get("cpu"):
        spec.cpuAllocation = _allocation_spec(changes["cpu"])
    if changes.get("memory"):
        spec.memoryAllocation = _allocation_spec(changes["memory"])
    if "memory_reservation_locked_to_max" in changes:
        spec.memoryReservationLockedToMax = changes["memory_reservation_locked_to_max"]
    return spec


class VsphereClient(object):
    def __init__(self, hostname, username, password, port=443, validate_certs=True):
        if not hostname:
            raise VsphereClientError("hostname is missing: set it in the task or in the environment variable VMWARE_HOST")
        if not username:
            raise VsphereClientError("username is missing: set it in the task or in the environment variable VMWARE_USER")
        if password is None:
            raise VsphereClientError("password is missing: set it in the task or in the environment variable VMWARE_PASSWORD")
        context = ssl.create_default_context()
        if not validate_certs:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        try:
            self.si = SmartConnect(host=hostname, user=username, pwd=password, port=port, sslContext=context)
        except vim.fault.InvalidLogin as exc:
            raise VsphereClientError("login to %s:%s as %s refused: %s" % ((hostname, port, username) + fault_message(exc)[:1]))
        except Exception as exc:  # socket, TLS and SOAP errors share no base class
            raise VsphereClientError("cannot connect to %s:%s: %s" % (hostname, port, exc))
        self.content = self.si.RetrieveContent()
        self.stub = self.si._stub

    def close(self):
        try:
            Disconnect(self.si)
        except Exception:  # the session may already be gone; nothing to release then
            pass

    # --- reads -------------------------------------------------------------

    def _retrieve(self, filter_spec):
        collector = self.content.propertyCollector
        options = vmodl.query.PropertyCollector.RetrieveOptions()
        result = collector.RetrievePropertiesEx([filter_spec], options)
        objects = []
        while result is not None:
            objects.extend(result.objects)
            if not result.token:
                break
            result = collector.ContinueRetrievePropertiesEx(result.token)
        return objects

    def inventory(self, vm_properties=VM_PROPERTIES, host_properties=HOST_PROPERTIES):
        """VMs, hosts, clusters, folders and datacenters of the whole
        inventory with the properties asked for, in ONE property-collector
        query over a container view: {"vms": {moid: {...}}, "hosts": ...}."""
        kinds = (
            ("vms", vim.VirtualMachine, vm_properties),
            ("hosts", vim.HostSystem, host_properties),
            ("clusters", vim.ComputeResource, CONTAINER_PROPERTIES),
            ("folders", vim.Folder, CONTAINER_PROPERTIES),
            ("datacenters", vim.Datacenter, CONTAINER_PROPERTIES),
        )
        view = self.content.viewManager.CreateContainerView(self.content.rootFolder, [k[1] for k in kinds], True)
        try:
            traversal = vmodl.query.PropertyCollector.TraversalSpec(
                name="view", path="view", skip=False, type=vim.view.ContainerView)
            spec = vmodl.query.PropertyCollector.FilterSpec(
                objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=view, skip=True, selectSet=[traversal])],
                propSet=[vmodl.query.PropertyCollector.PropertySpec(type=k[1], pathSet=list(k[2])) for k in kinds])
            objects = self._retrieve(spec)
        except vmodl.MethodFault as exc:
            raise VsphereClientError("inventory query failed: %s (%s)" % fault_message(exc), fault_message(exc)[1])
        finally:
            view.Destroy()
        inventory = dict((k[0], {}) for k in kinds)
        for obj in objects:
            props = dict((prop.name, prop.val) for prop in obj.propSet)
            record = {"moid": obj.obj._moId, "kind": type(obj.obj).__name__.split(".")[-1]}
            for key, value in props.items():
                if key in ("config.cpuAllocation", "config.memoryAllocation"):
                    record[key] = _allocation(value)
                elif key == "customValue":
                    record[key] = dict((item.key, item.value) for item in value or [])
                else:
                    record[key] = _plain(value)
            for name, vim_type, _props in kinds:
                if isinstance(obj.obj, vim_type):
                    inventory[name][record["moid"]] = record
                    break
        inventory["root_folder"] = self.content.rootFolder._moId
        return inventory

    def change_versions(self, vm_ids):
        """The current changeVersion of each VM, in one query."""
        if not vm_ids:
            return {}
        spec = vmodl.query.PropertyCollector.FilterSpec(
            objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=vim.VirtualMachine(moid, self.stub)) for moid in vm_ids],
            propSet=[vmodl.query.PropertyCollector.PropertySpec(type=vim.VirtualMachine, pathSet=["config.changeVersion"])])
        try:
            objects = self._retrieve(spec)
        except vmodl.MethodFault as exc:
            raise VsphereClientError("changeVersion query failed: %s (%s)" % fault_message(exc), fault_message(exc)[1])
        versions = dict((moid, None) for moid in vm_ids)
        for obj in objects:
            for prop in obj.propSet:
                versions[obj.obj._moId] = prop.val
        return versions

    # --- custom attributes ---------------------------------------------------

    def custom_field_key(self, name):
        """Key of the VirtualMachine (or global) custom attribute `name`, or None."""
        for field in self.content.customFieldsManager.field or []:
            if field.name == name and field.managedObjectType in (None, vim.VirtualMachine):
                return field.key
        return None

    def ensure_custom_field(self, name):
        key = self.custom_field_key(name)
        if key is not None:
            return key
        try:
            return self.content.customFieldsManager.AddCustomFieldDef(name=name, moType=vim.VirtualMachine).key
        except vim.fault.DuplicateName:
            # Created by a concurrent task since we looked.
            return self.custom_field_key(name)
        except vmodl.MethodFault as exc:
            raise VsphereClientError("cannot create the custom attribute %s: %s (%s)" % ((name,) + fault_message(exc)),
                                     fault_message(exc)[1])

    def set_custom_value(self, vm_id, key, value):
        """Sets (or with "" clears) one custom attribute of one VM."""
        try:
            self.content.customFieldsManager.SetField(entity=vim.VirtualMachine(vm_id, self.stub), key=key, value=value)
        except vmodl.MethodFault as exc:
            raise VsphereClientError("cannot write the custom attribute: %s (%s)" % fault_message(exc), fault_message(exc)[1])

    # --- reconfigure ---------------------------------------------------------

    def reconfigure_many(self, changes, window=16):
        """Reconfigures many VMs: {moid: (changes, change_version)} ->
        {moid: None on success, or VsphereClientError}. Up to `window` tasks
        run at once and are waited for together (one property-collector
        filter), not one poll loop per VM."""
        outcome = {}
        pending = list(changes.items())
        while pending:
            batch, pending = pending[:window], pending[window:]
            tasks = {}
            for moid, (fields, change_version) in batch:
                vm = vim.VirtualMachine(moid, self.stub)
                try:
                    tasks[moid] = vm.ReconfigVM_Task(spec=config_spec(fields, change_version))
                except vmodl.MethodFault as exc:
                    outcome[moid] = VsphereClientError("%s (%s)" % fault_message(exc), fault_message(exc)[1])
            outcome.update(self._wait_for_tasks(tasks))
        return outcome

    def _wait_for_tasks(self, tasks):
        if not tasks:
            return {}
        by_task = dict((task._moId, moid) for moid, task in tasks.items())
        collector = self.content.propertyCollector.CreatePropertyCollector()
        spec = vmodl.query.PropertyCollector.FilterSpec(
            objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=task) for task in tasks.values()],
            propSet=[vmodl.query.PropertyCollector.PropertySpec(type=vim.Task, pathSet=["info.state", "info.error"])])
        collector.CreateFilter(spec, True)
        state = dict((task_id, {}) for task_id in by_task)
        done = {}
        version = ""
        options = vmodl.query.PropertyCollector.WaitOptions(maxWaitSeconds=TASK_WAIT_SECONDS)
        try:
            while len(done) < len(by_task):
                update = collector.WaitForUpdatesEx(version, options)
                if update is None:
                    raise VsphereClientError("tasks did not finish within %d s" % TASK_WAIT_SECONDS)
                version = update.version
                for filter_set in update.filterSet:
                    for obj_update in filter_set.objectSet:
                        task_id = obj_update.obj._moId
                        for change in obj_update.changeSet:
                            state[task_id][change.name] = change.val
                        task_state = state[task_id].get("info.state")
                        if task_state == vim.TaskInfo.State.success:
                            done[task_id] = None
                        elif task_state == vim.TaskInfo.State.error:
                            error = state[task_id].get("info.error")
                            msg, name = fault_message(error) if error is not None else ("the task failed", None)
                            done[task_id] = VsphereClientError(msg, name)
        finally:
            collector.Destroy()
        return dict((by_task[task_id], result) for task_id, result in done.items())

    # --- performance ---------------------------------------------------------

    def perf_counters(self):
        """Counter ids by their full name group.name.rollup (e.g.
        cpu.ready.summation); ids differ between servers, names do not."""
        return dict(("%s.%s.%s" % (c.groupInfo.key, c.nameInfo.key, c.rollupType), c.key)
                    for c in self.content.perfManager.perfCounter)

    def query_perf(self, entity_ids, counter_ids, instance="", interval_id=20, max_samples=15):
        """Samples of the given counters for many VMs in one QueryPerf call:
        {moid: {"intervals": [s, ...], "timestamps": [...], "series": {counter_id: [v, ...]}}}."""
        if not entity_ids or not counter_ids:
            return {}
        metric_ids = [vim.PerformanceManager.MetricId(counterId=cid, instance=instance) for cid in counter_ids]
        specs = [vim.PerformanceManager.QuerySpec(entity=vim.VirtualMachine(moid, self.stub), metricId=metric_ids,
                                                  intervalId=interval_id, maxSample=max_samples)
                 for moid in entity_ids]
        try:
            metrics = self.content.perfManager.QueryPerf(querySpec=specs) or []
        except vmodl.MethodFault as exc:
            raise VsphereClientError("performance query failed: %s (%s)" % fault_message(exc), fault_message(exc)[1])
        samples = {}
        for metric in metrics:
            samples[metric.entity._moId] = {
                "intervals": [info.interval for info in metric.sampleInfo or []],
                "timestamps": [info.timestamp.isoformat() for info in metric.sampleInfo or []],
                "series": dict((series.id.counterId, list(series.value or [])) for series in metric.value or []),
            }
        return samples
