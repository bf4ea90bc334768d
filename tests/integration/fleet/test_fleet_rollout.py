"""playbooks/rollout.yml across the lab's fleet of three hypervisors, each
host a unit of the rollout: oc-lab-hv-1 the canary, then lab-hypervisor,
then oc-lab-hv-2, one at a time (rollout_serial 1; the waves take the units
in inventory order, and lab-hypervisor comes first in the lab's), each
classifying its idle guest burstable with a baseline (libvirt_vm_class),
over SSH as `ocadmin` for the two VMs. lab-hypervisor's health thresholds
ask for a run queue no host has (the reader itself runs), so its wave is
unhealthy: it is put back exactly and the rollout stops there;
oc-lab-hv-2's wave never runs. Afterwards every guest is given back its
stored definition and running metadata as they were. Judged by
reading each libvirtd directly: the guest's metadata in its running
definition, its running scheduler parameters and its stored definition
(canonical XML), as root over SSH on the VMs and with virsh here."""

import difflib
import shlex
import subprocess
import xml.etree.ElementTree as ET

import yaml

from fleet_hosts import FleetHost, LocalHost, on_each
from run_module import INVENTORY, run_playbook

GUESTS = {"lab-hypervisor": "oc-lab-idle-1", "oc-lab-hv-1": "oc-hv1-idle-1", "oc-lab-hv-2": "oc-hv2-idle-1"}
CANARY, UNHEALTHY, NEVER = "oc-lab-hv-1", "lab-hypervisor", "oc-lab-hv-2"
CLASS_NAMESPACE = "https://overcommit.control/xmlns/vm/1"


def definitions(hosts):
    """{host: (its guest's running metadata, its running schedinfo, its
    stored definition)}: what a wave changes, the XML canonical and its
    namespace prefixes ElementTree's."""
    def read(host):
        live, schedinfo, stored = host.virsh_each(("dumpxml", GUESTS[host.name]), ("schedinfo", GUESTS[host.name]),
                                                  ("dumpxml", "--inactive", GUESTS[host.name]))
        metadata = ET.fromstring(live).find("metadata")
        # Serialized again by ElementTree: a namespace prefix is a spelling (another
        # test's rewrite of a definition calls the collection's "oc" "ns0"), not a change.
        return (ET.canonicalize(ET.tostring(metadata, encoding="unicode") if metadata is not None else "<none/>",
                                strip_text=True), schedinfo,
                ET.canonicalize(ET.tostring(ET.fromstring(stored), encoding="unicode"), strip_text=True))
    return on_each(hosts, read)


def changes(before, after):
    """What differs between two readings of definitions(), line by line."""
    return ["".join(difflib.unified_diff(old.replace("><", ">\n<").splitlines(True),
                                         new.replace("><", ">\n<").splitlines(True), n=1))
            for old, new in zip(before, after)]


def originals(hosts):
    """{host: (its guest's stored definition, the collection's class record
    in its running definition)}, as virsh prints them: what put_back writes."""
    return on_each(hosts, lambda host: tuple(host.virsh_each(
        ("dumpxml", "--inactive", GUESTS[host.name]), ("metadata", GUESTS[host.name], "--uri", CLASS_NAMESPACE))))


def put_back(host, stored, running_record):
    """The guest's stored definition and running class record as they were."""
    guest = shlex.quote(GUESTS[host.name])
    script = ("virsh -q -c qemu:///system define /dev/stdin >/dev/null <<'XML'\n%sXML\n"
              "virsh -q -c qemu:///system metadata %s --live --uri %s --key oc --set %s >/dev/null\n"
              % (stored, guest, CLASS_NAMESPACE, shlex.quote(running_record.strip())))
    if isinstance(host, LocalHost):
        subprocess.run(["bash", "-c", script], check=True)
    else:
        host.ssh(script)


def rollout_inventory(tmp_path):
    """The group rollout (the three hosts, the canary first) with each unit's wave."""
    units = {}
    for host, guest in GUESTS.items():
        units[host] = {"rollout_wave_libvirt_classes": {guest: "burstable"},
                       "rollout_wave_libvirt_baselines": {guest: 0.5},
                       "rollout_wave_health": {"max_failed": 0}, "rollout_wave_health_sample_seconds": 0.5,
                       "rollout_wave_reason": "fleet rollout test"}
    units[UNHEALTHY]["rollout_wave_health"] = {"max_failed": 0, "max_run_queue_per_cpu": 0}
    path = tmp_path / "rollout.yml"
    path.write_text(yaml.safe_dump({"rollout": {"hosts": units, "children": {"canary": {"hosts": {CANARY: None}}}}}))
    return str(path)


def test_the_canary_host_then_an_unhealthy_host_put_back_exactly_and_the_rest_untouched(lab, tmp_path):
    hosts = [LocalHost(), FleetHost(lab, CANARY), FleetHost(lab, NEVER)]
    kept = originals(hosts)
    before = definitions(hosts)
    inventory = [INVENTORY, lab["OVERCOMMIT_FLEET_INVENTORY"], rollout_inventory(tmp_path)]
    try:
        completed = run_playbook("rollout.yml", {"rollout_serial": 1}, inventory=inventory)
        output = completed.stdout
        assert completed.returncode != 0, output[-4000:]
        assert "unhealthy after its wave: " in output and "runnable tasks per CPU is above 0" in output, output[-4000:]
        assert "the wave was put back and the rollout stops here" in output, output[-4000:]
        after = definitions(hosts)
        # The canary classified, running and stored; the unhealthy host back exactly; the last never reached.
        for definition in (after[CANARY][0], after[CANARY][2]):
            assert ">burstable</" in definition and ">0.5</" in definition, definition
        for host in (UNHEALTHY, NEVER):
            assert after[host] == before[host], changes(before[host], after[host])
        (recap,) = [line for line in output.split("PLAY RECAP")[-1].splitlines() if line.startswith(NEVER)]
        assert " changed=0 " in recap and " failed=0 " in recap, recap
    finally:
        for host in hosts:
            put_back(host, *kept[host.name])
    assert definitions(hosts) == before
