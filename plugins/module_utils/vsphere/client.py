# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The only code that talks to vSphere: one login, bulk property-collector
reads, reconfigure tasks waited for together, performance queries. Returns
plain data (managed objects are named by their id); vSphere faults become
VsphereClientError with the server's message. Transient faults (a dropped
or refused connection, vCenter's SystemError, HostCommunication, Timedout)
are retried with jittered back-off within a bounded time, on the login and
on reads; a reconfigure only when vCenter refused to start its task; what
was retried is kept in `retry_log`."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import random
import socket
import ssl
import time

from ansible.module_utils.basic import env_fallback
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal, ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.common.retry import (
    Transient, RetryLog, jittered_backoff, retry_note)
from ansible_collections.overcommit.control.plugins.module_utils.common.tls import certificate_hint

try:
    from pyVim.connect import Disconnect, SmartConnect
    from pyVmomi import vim, vmodl
    from pyVmomi.VmomiSupport import DataObject, ManagedObject
except ImportError:  # reported by the modules through HAS_PYVMOMI
    vim = vmodl = DataObject = ManagedObject = None

try:
    from http.client import HTTPException
except ImportError:  # Python 2 has no http.client; the collection needs Python 3
    HTTPException = IOError

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
# Transient faults: tries, back-off (full jitter up to min(RETRY_MAX_DELAY,
# RETRY_DELAY * 2**n)) and the total time a call is retried.
RETRY_TRIES = 6
RETRY_DELAY = 0.5
RETRY_MAX_DELAY = 8.0
RETRY_SECONDS = 30.0
# Seconds one request may take (connect, or an answer to come): a server or
# proxy that stops answering fails the request, retried as a timed-out one.
REQUEST_TIMEOUT = 30.0


def _server_fault(exc):
    """The label of a fault vCenter answered with that may pass, or None."""
    if vmodl is None or not isinstance(exc, vmodl.MethodFault):
        return None
    if isinstance(exc, (vmodl.fault.SystemError, vmodl.fault.HostCommunication, vim.fault.Timedout)):
        return fault_message(exc)[1]
    return None


def transport_fault(exc):
    """The label of a connection fault that may pass (dropped, reset,
    refused, timed out, an HTTP error status from a proxy), or None:
    certificate errors and unknown host names are not retried."""
    if isinstance(exc, (ssl.SSLCertVerificationError, socket.gaierror)):
        return None
    if isinstance(exc, (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionError, HTTPException)):
        return "connection refused" if isinstance(exc, ConnectionRefusedError) else "connection dropped"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "timed out"
    return None


def transient_fault(exc):
    """Whether a read (or the login) may be tried again after `exc`: a
    transport fault or a transient fault of vCenter."""
    label = transport_fault(exc) or _server_fault(exc)
    return Transient(label) if label else None


def unstarted_fault(exc):
    """Whether a call that starts a task may be sent again after `exc`: only
    when vCenter answered with a transient fault (or TaskInProgress: the VM
    is busy) instead of a task, so none was started. After a dropped
    connection a task may have started: the call is not sent again."""
    if vim is not None and isinstance(exc, vim.fault.TaskInProgress):
        return Transient("TaskInProgress")
    label = _server_fault(exc)
    return Transient(label) if label else None


def _failed(what, exc, log=None, request_timeout=None):
    """A VsphereClientError for a call that failed: vCenter's own words, or
    the connection fault (a timeout naming request_timeout), and how long it
    was retried."""
    if vmodl is not None and isinstance(exc, vmodl.MethodFault):
        msg, name = fault_message(exc)
        return VsphereClientError("%s: %s (%s)%s" % (what, msg, name, retry_note(exc, log)), name)
    return VsphereClientError("%s: %s%s" % (what, _connection_fault(exc, request_timeout), retry_note(exc, log)))


def _connection_fault(exc, request_timeout=None):
    fault = transport_fault(exc)
    if fault == "timed out" and request_timeout:
        return "no answer within request_timeout=%g s" % request_timeout
    return "%s: %s" % (fault or type(exc).__name__, exc or type(exc).__name__)


def fails_as(what):
    """A client method whose fault becomes one VsphereClientError saying
    `what` failed (a text, or a function of the method's arguments), with
    vCenter's own words and how long it was retried. vCenter's faults and
    connection errors share no base class, hence Exception; the client's own
    errors pass as they are."""
    def decorate(method):
        @functools.wraps(method)
        def failing_as_what(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except VsphereClientError:
                raise
            except Exception as exc:
                raise _failed(what(*args, **kwargs) if callable(what) else what, exc, self.retry_log,
                              self.request_timeout)
        return failing_as_what
    return decorate


def connection_argument_spec():
    """Connection options as community.vmware names them, with the same
    environment fallbacks."""
    return dict(
        hostname=dict(type="str", fallback=(env_fallback, ["VMWARE_HOST"])),
        username=dict(type="str", aliases=["user", "admin"], fallback=(env_fallback, ["VMWARE_USER"])),
        password=dict(type="str", aliases=["pass", "pwd"], no_log=True, fallback=(env_fallback, ["VMWARE_PASSWORD"])),
        port=dict(type="int", default=443, fallback=(env_fallback, ["VMWARE_PORT"])),
        validate_certs=dict(type="bool", default=True, fallback=(env_fallback, ["VMWARE_VALIDATE_CERTS"])),
        retry_seconds=dict(type="float", default=RETRY_SECONDS),
        request_timeout=dict(type="float", default=REQUEST_TIMEOUT),
    )


def check_connection_options(params):
    """Connection options that cannot work, refused naming the option before
    any connection."""
    timeout = params.get("request_timeout")
    if timeout is not None and not timeout > 0:
        raise ValueRangeError("request_timeout", timeout, "more than 0 seconds")


# The fault of a reconfigure whose task was started but not seen to end.
UNKNOWN_END = "TaskEndUnknown"


class VsphereClientError(ObjectRefusal):
    """A call vCenter refused or could not answer; fault: the vSphere fault."""

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
    def __init__(self, hostname, username, password, port=443, validate_certs=True, retry_seconds=RETRY_SECONDS,
                 request_timeout=REQUEST_TIMEOUT, sleep=time.sleep, clock=time.monotonic, rand=random.random):
        if not hostname:
            raise VsphereClientError("hostname is missing: set it in the task or in the environment variable VMWARE_HOST")
        if not username:
            raise VsphereClientError("username is missing: set it in the task or in the environment variable VMWARE_USER")
        if password is None:
            raise VsphereClientError("password is missing: set it in the task or in the environment variable VMWARE_PASSWORD")
        self.retry_log = RetryLog()
        self.request_timeout = request_timeout
        self.clock = clock
        retry_seconds = RETRY_SECONDS if retry_seconds is None else max(0.0, retry_seconds)
        retrying = dict(retries=RETRY_TRIES if retry_seconds else 0, delay=RETRY_DELAY, max_delay=RETRY_MAX_DELAY,
                        total_seconds=retry_seconds, log=self.retry_log, sleep=sleep, clock=clock, random=rand)
        self._read_retry = jittered_backoff(is_transient=transient_fault, **retrying)
        self._start_retry = jittered_backoff(is_transient=unstarted_fault, **retrying)
        context = ssl.create_default_context()
        if not validate_certs:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        try:
            # A login lost with its connection leaves a session that expires on its own.
            self.si = self.read(self._login, host=hostname, user=username, pwd=password, port=port, sslContext=context,
                                httpConnectionTimeout=request_timeout)
        except vim.fault.InvalidLogin as exc:
            raise VsphereClientError("login to %s:%s as %s refused: %s" % ((hostname, port, username) + fault_message(exc)[:1]))
        except Exception as exc:  # socket, TLS and SOAP errors share no base class
            fault = ("no answer within request_timeout=%g s" % request_timeout
                     if transport_fault(exc) == "timed out" and request_timeout else exc or type(exc).__name__)
            raise VsphereClientError("cannot connect to %s:%s: %s%s%s" % (
                hostname, port, fault, certificate_hint(exc, None, "validate_certs"),
                retry_note(exc, self.retry_log)))
        try:
            self.content = self.read(self.si.RetrieveContent)
        except Exception as exc:  # as above
            self.close()
            raise _failed("cannot read the service content of %s:%s" % (hostname, port), exc, self.retry_log,
                          request_timeout)
        self.stub = self.si._stub

    def _login(self, **kwargs):
        """SmartConnect within request_timeout: its first request (which API
        versions the server speaks) takes no timeout of its own, so the
        process's default one bounds it, for the login only."""
        previous = socket.getdefaulttimeout()
        socket.setdefaulttimeout(self.request_timeout)
        try:
            return SmartConnect(**kwargs)
        finally:
            socket.setdefaulttimeout(previous)

    # The connection fault a call gave up on after its retries: vCenter is
    # gone for this task, so later calls fail at once with it instead of each
    # retrying for retry_seconds again (a batch of N VMs would take N times).
    lost = None

    def _call(self, retrying, function, args, kwargs):
        if self.lost is not None:
            raise self.lost
        try:
            return retrying(function)(*args, **kwargs)
        except Exception as exc:  # only noted here; the caller converts it
            if transport_fault(exc):
                self.lost = exc
            raise

    def read(self, function, *args, **kwargs):
        """function(*args, **kwargs), tried again after a transient fault."""
        return self._call(self._read_retry, function, args, kwargs)

    def start_task(self, function, *args, **kwargs):
        """A call that starts a task, tried again only when none was started."""
        return self._call(self._start_retry, function, args, kwargs)

    def close(self):
        try:
            Disconnect(self.si)
        except Exception:  # the session may already be gone; nothing to release then
            pass

    # --- reads -------------------------------------------------------------

    def _retrieve(self, filter_spec):
        collector = self.content.propertyCollector
        options = vmodl.query.PropertyCollector.RetrieveOptions()
        objects = []

        def retrieve():
            # Tried again as a whole: a token may not outlive a lost connection.
            del objects[:]
            result = collector.RetrievePropertiesEx([filter_spec], options)
            while result is not None:
                objects.extend(result.objects)
                if not result.token:
                    break
                result = collector.ContinueRetrievePropertiesEx(result.token)
            return objects

        return self.read(retrieve)

    @fails_as("inventory query failed")
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
        view = self.read(self.content.viewManager.CreateContainerView, self.content.rootFolder,
                         [k[1] for k in kinds], True)
        try:
            traversal = vmodl.query.PropertyCollector.TraversalSpec(
                name="view", path="view", skip=False, type=vim.view.ContainerView)
            spec = vmodl.query.PropertyCollector.FilterSpec(
                objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=view, skip=True, selectSet=[traversal])],
                propSet=[vmodl.query.PropertyCollector.PropertySpec(type=k[1], pathSet=list(k[2])) for k in kinds])
            objects = self._retrieve(spec)
        finally:
            try:
                self.read(view.Destroy)
            except Exception:  # the view goes with the session anyway
                pass
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

    @fails_as("changeVersion query failed")
    def change_versions(self, vm_ids):
        """The current changeVersion of each VM, in one query."""
        if not vm_ids:
            return {}
        spec = vmodl.query.PropertyCollector.FilterSpec(
            objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=vim.VirtualMachine(moid, self.stub)) for moid in vm_ids],
            propSet=[vmodl.query.PropertyCollector.PropertySpec(type=vim.VirtualMachine, pathSet=["config.changeVersion"])])
        objects = self._retrieve(spec)
        versions = dict((moid, None) for moid in vm_ids)
        for obj in objects:
            for prop in obj.propSet:
                versions[obj.obj._moId] = prop.val
        return versions

    # --- custom attributes ---------------------------------------------------

    @fails_as("cannot read the custom attributes")
    def custom_field_key(self, name):
        """Key of the VirtualMachine (or global) custom attribute `name`, or None."""
        fields = self.read(lambda: self.content.customFieldsManager.field)
        for field in fields or []:
            if field.name == name and field.managedObjectType in (None, vim.VirtualMachine):
                return field.key
        return None

    @fails_as(lambda name: "cannot create the custom attribute %s" % name)
    def ensure_custom_field(self, name):
        key = self.custom_field_key(name)
        if key is not None:
            return key
        try:
            # Sent again after a lost answer, it meets DuplicateName below.
            return self.read(self.content.customFieldsManager.AddCustomFieldDef, name=name, moType=vim.VirtualMachine).key
        except vim.fault.DuplicateName:
            # Created by a concurrent task since we looked.
            return self.custom_field_key(name)

    @fails_as("cannot write the custom attribute")
    def set_custom_value(self, vm_id, key, value):
        """Sets (or with "" clears) one custom attribute of one VM."""
        # Setting a value twice sets it once: safe to send again.
        self.read(self.content.customFieldsManager.SetField, entity=vim.VirtualMachine(vm_id, self.stub), key=key,
                  value=value)

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
                    tasks[moid] = self.start_task(vm.ReconfigVM_Task, spec=config_spec(fields, change_version))
                except vmodl.MethodFault as exc:
                    msg, name = fault_message(exc)
                    outcome[moid] = VsphereClientError("%s (%s)%s" % (msg, name, retry_note(exc, self.retry_log)), name)
                except Exception as exc:  # connection errors share no base class
                    outcome[moid] = _failed("cannot start the reconfigure", exc, self.retry_log)
            try:
                outcome.update(self._wait_for_tasks(tasks))
            except VsphereClientError as exc:
                # Started, and perhaps applied: each VM says so; the others go on.
                for moid in tasks:
                    outcome[moid] = VsphereClientError("the reconfigure task was started but how it ended is unknown "
                                                       "(%s): read the VM before acting again" % exc, UNKNOWN_END)
        return outcome

    @fails_as("cannot wait for the reconfigure tasks")
    def _wait_for_tasks(self, tasks):
        if not tasks:
            return {}
        by_task = dict((task._moId, moid) for moid, task in tasks.items())
        spec = vmodl.query.PropertyCollector.FilterSpec(
            objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=task) for task in tasks.values()],
            propSet=[vmodl.query.PropertyCollector.PropertySpec(type=vim.Task, pathSet=["info.state", "info.error"])])
        collector = self.read(self.content.propertyCollector.CreatePropertyCollector)
        state = dict((task_id, {}) for task_id in by_task)
        done = {}
        version = ""
        # Each wait for updates ends well within request_timeout (the server
        # answers "no update" when its time is up); the tasks get TASK_WAIT_SECONDS in all.
        wait = TASK_WAIT_SECONDS if not self.request_timeout else max(1, min(TASK_WAIT_SECONDS,
                                                                             int(self.request_timeout / 2)))
        options = vmodl.query.PropertyCollector.WaitOptions(maxWaitSeconds=wait)
        deadline = self.clock() + TASK_WAIT_SECONDS
        try:
            self.read(collector.CreateFilter, spec, True)
            while len(done) < len(by_task):
                update = self.read(collector.WaitForUpdatesEx, version, options)
                if update is None:
                    if self.clock() < deadline:
                        continue
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
            try:
                self.read(collector.Destroy)
            except Exception:  # the collector goes with the session anyway
                pass
        return dict((by_task[task_id], result) for task_id, result in done.items())

    # --- performance ---------------------------------------------------------

    @fails_as("cannot read the performance counters")
    def perf_counters(self):
        """Counter ids by their full name group.name.rollup (e.g.
        cpu.ready.summation); ids differ between servers, names do not."""
        counters = self.read(lambda: self.content.perfManager.perfCounter)
        return dict(("%s.%s.%s" % (c.groupInfo.key, c.nameInfo.key, c.rollupType), c.key) for c in counters)

    @fails_as("performance query failed")
    def query_perf(self, entity_ids, counter_ids, instance="", interval_id=20, max_samples=15):
        """Samples of the given counters for many VMs in one QueryPerf call:
        {moid: {"intervals": [s, ...], "timestamps": [...], "series": {counter_id: [v, ...]}}}."""
        if not entity_ids or not counter_ids:
            return {}
        metric_ids = [vim.PerformanceManager.MetricId(counterId=cid, instance=instance) for cid in counter_ids]
        specs = [vim.PerformanceManager.QuerySpec(entity=vim.VirtualMachine(moid, self.stub), metricId=metric_ids,
                                                  intervalId=interval_id, maxSample=max_samples)
                 for moid in entity_ids]
        metrics = self.read(self.content.perfManager.QueryPerf, querySpec=specs) or []
        samples = {}
        for metric in metrics:
            samples[metric.entity._moId] = {
                "intervals": [info.interval for info in metric.sampleInfo or []],
                "timestamps": [info.timestamp.isoformat() for info in metric.sampleInfo or []],
                "series": dict((series.id.counterId, list(series.value or [])) for series in metric.value or []),
            }
        return samples
