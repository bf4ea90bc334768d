# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Set and then restore the CPU and memory reservation of N VMs (200 by
default) three ways, each phase an otherwise identical one-task playbook timed
end to end (ansible-playbook start to exit), and print the figures side by
side:

  module   overcommit.control.vsphere_vm_reservation, all VMs in one task;
           restore is state=restored from the record on each VM
  (a)      community.vmware.vmware_guest looped over the VMs
           (hardware.cpu_reservation / mem_reservation), one task
  (b)      a plain pyVmomi script making the same lookup and reconfigures
           (bench/vsphere_reservation_pyvmomi.py), run by one command task

Targets: module at least 10x faster than (a), at most 1.5x (b).

The benchmark starts its own vcsim (the lab's binary) on a free loopback
port with one cluster of 3 hosts and N VMs, and stops it at the end; the lab's
vcsim is not touched. After every phase the reservations are read back with
one pyVmomi query to check that the phase did what it claims.

    source scripts/lib.sh
    $VENV/bin/python bench/vsphere_reservation.py [--vms 200] [--skip-vmware-guest]
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

from pyVim.connect import Disconnect, SmartConnect
from pyVmomi import vim, vmodl

from timing import timed_playbook, write_play

HERE = os.path.dirname(os.path.abspath(__file__))
LAB_HOME = os.environ.get("OVERCOMMIT_LAB_HOME", os.path.expanduser("~/.cache/overcommit-lab"))
VCSIM = os.path.join(LAB_HOME, "bin", "vcsim")
USER, PASSWORD = "bench@vsphere.local", "bench-password"
CPU_MHZ, MEMORY_MB = 200, 16


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def start_vcsim(vms, workdir):
    port = free_port()
    log = open(os.path.join(workdir, "vcsim.log"), "w")
    process = subprocess.Popen([VCSIM, "-listen", "127.0.0.1:%d" % port, "-username", USER, "-password", PASSWORD,
                                "-cluster", "1", "-cluster-host", "3", "-host", "0", "-vm", str(vms)],
                               stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            si = connect(port)
            return process, port, si
        except Exception:  # not listening yet: connection refused, TLS or SOAP errors
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                sys.exit("vcsim did not start; see %s" % log.name)
            time.sleep(0.3)


def connect(port):
    return SmartConnect(host="127.0.0.1", port=port, user=USER, pwd=PASSWORD,
                        sslContext=ssl._create_unverified_context())


def reservations(si):
    """name -> (cpu reservation, memory reservation) of every VM, one query."""
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
    collector = vmodl.query.PropertyCollector
    spec = collector.FilterSpec(
        objectSet=[collector.ObjectSpec(obj=view, skip=True, selectSet=[
            collector.TraversalSpec(name="view", path="view", skip=False, type=vim.view.ContainerView)])],
        propSet=[collector.PropertySpec(type=vim.VirtualMachine, pathSet=[
            "name", "config.cpuAllocation.reservation", "config.memoryAllocation.reservation"])])
    result = content.propertyCollector.RetrievePropertiesEx([spec], collector.RetrieveOptions())
    objects = list(result.objects)
    while result.token:
        result = content.propertyCollector.ContinueRetrievePropertiesEx(result.token)
        objects.extend(result.objects)
    view.Destroy()
    out = {}
    for obj in objects:
        props = dict((prop.name, prop.val) for prop in obj.propSet)
        out[props["name"]] = (props.get("config.cpuAllocation.reservation"),
                              props.get("config.memoryAllocation.reservation"))
    return out


def task_for(variant, phase, names_file):
    cpu, memory = (CPU_MHZ, MEMORY_MB) if phase == "set" else (0, 0)
    if variant == "module":
        args = {"vms": "{{ lookup('file', '%s') | from_json }}" % names_file}
        if phase == "set":
            args.update(cpu={"reservation": cpu}, memory={"reservation": memory}, reason="bench")
        else:
            args["state"] = "restored"
        return {"name": "vsphere_vm_reservation", "overcommit.control.vsphere_vm_reservation": args}
    if variant == "vmware_guest":
        return {"name": "vmware_guest per VM", "loop": "{{ lookup('file', '%s') | from_json }}" % names_file,
                "community.vmware.vmware_guest": {"name": "{{ item }}", "datacenter": "DC0",
                                                  "hardware": {"cpu_reservation": cpu, "mem_reservation": memory}}}
    script = os.path.join(HERE, "vsphere_reservation_pyvmomi.py")
    return {"name": "plain pyVmomi script",
            "ansible.builtin.command": {"argv": ["{{ ansible_playbook_python }}", script, names_file, str(cpu),
                                                 str(memory)]}}


def vmware_env(port):
    return {"VMWARE_HOST": "127.0.0.1", "VMWARE_PORT": str(port), "VMWARE_USER": USER, "VMWARE_PASSWORD": PASSWORD,
            "VMWARE_VALIDATE_CERTS": "false"}


def check(si, names, phase, variant):
    wanted = (CPU_MHZ, MEMORY_MB) if phase == "set" else (0, 0)
    current = reservations(si)
    wrong = [name for name in names if current[name] != wanted]
    if wrong:
        sys.exit("%s %s left %d VMs without reservation %s (e.g. %s: %s)"
                 % (variant, phase, len(wrong), wanted, wrong[0], current[wrong[0]]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--vms", type=int, default=200, help="VMs to set and restore (default 200)")
    parser.add_argument("--skip-vmware-guest", action="store_true",
                        help="leave out baseline (a), which takes minutes for 200 VMs")
    options = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="oc-bench-vsphere-")
    process, port, si = start_vcsim(options.vms, workdir)
    try:
        names = sorted(reservations(si))
        if len(names) < options.vms:
            sys.exit("vcsim serves %d VMs, fewer than %d" % (len(names), options.vms))
        names = names[:options.vms]
        names_file = os.path.join(workdir, "names.json")
        with open(names_file, "w") as handle:
            json.dump(names, handle)
        print("vcsim on 127.0.0.1:%d with %d VMs; setting and restoring cpu %d MHz / memory %d MB reservations "
              "on %d VMs" % (port, len(reservations(si)), CPU_MHZ, MEMORY_MB, len(names)))
        variants = ["module", "pyvmomi"] + ([] if options.skip_vmware_guest else ["vmware_guest"])
        labels = {"module": "vsphere_vm_reservation (one task)", "pyvmomi": "(b) plain pyVmomi script (one task)",
                  "vmware_guest": "(a) vmware_guest looped per VM"}
        timings = {}
        for variant in variants:
            timings[variant] = {}
            for phase in ("set", "restore"):
                timings[variant][phase] = timed_playbook(write_play(workdir, task_for(variant, phase, names_file)),
                                                         env=vmware_env(port))
                check(si, names, phase, variant)
            print("  %-38s set %7.2f s  restore %7.2f s  total %7.2f s" % (
                labels[variant], timings[variant]["set"], timings[variant]["restore"],
                timings[variant]["set"] + timings[variant]["restore"]))
        total = dict((variant, sum(t.values())) for variant, t in timings.items())
        print("module vs (b) plain pyVmomi: %.2fx the time (target <= 1.5x)" % (total["module"] / total["pyvmomi"]))
        if "vmware_guest" in total:
            print("module vs (a) vmware_guest loop: %.1fx faster (target >= 10x)" % (total["vmware_guest"] / total["module"]))
    finally:
        Disconnect(si)
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
