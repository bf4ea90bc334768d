"""Moving a VM as relief, between the lab's hypervisor VMs: a running,
throttled guest of oc-lab-hv-1 moves live to oc-lab-hv-2 (peer to peer,
tunnelled through SSH between the hosts, as fleet_migration_link in
tests/testbed/lab sets it up), over SSH as `ocadmin`. First libvirt_migrate
in check mode changes nothing; then apply_plan.yml carries out an approved
plan's `migrate` action with libvirt_migrate, the target's URI taken from
the inventory's libvirt_migration_uri, and a second apply finds the guest
on its target and calls the action already applied (both runs name, and
fail on, the plan's action on a hypervisor of the inventory that cannot be
reached, after the others); libvirt_cputune then
restores the guest exactly where it landed. Judged on each host's own
libvirtd, read as root over SSH: where the guest is defined and runs, its
live tuning, its stored definition and the collection's record in both.

The plan is made here with the collection's own plan code (domain/plan.py,
as the recommend role makes one), with the migrate action the recommend
role writes for a proposed move when moves are opted in (unit tests of
control/recommend.py): making the policy propose this move on the fleet
would take rounds of contention on hosts where a module run costs some 15 s.

The guests' disks are read-only boot sectors present on every host at the
same path (the lab writes them): what shared storage is to a VM's disks when
it moves; libvirt checks a writable disk's storage, not a read-only one's.
Of the refusals, the lab shows a shut-off VM's, beside a move judged
possible on the target's own state (its CPUs and running VMs, read from its
libvirtd); the others (no room by the collection's accounting, a dedicated
VM pinned to CPUs the target lacks, a name taken) are unit tests of
domain/migration.py: each module run on these hosts costs some 15 s."""

import json
import re
import socket
import time
import xml.etree.ElementTree as ET

from ansible_collections.overcommit.control.plugins.module_utils.domain import plan as plans
from fleet_hosts import FleetHost, on_each
from run_module import run_module, run_playbook

SOURCE, TARGET = "oc-lab-hv-1", "oc-lab-hv-2"
GUEST = "oc-hv1-idle-1"  # running: the lab starts it with its host
STOPPED = "oc-hv1-busy-1"  # shut off
THROTTLE_NAMESPACE = "https://overcommit.control/xmlns/throttle/1"


def migration_uri(lab, host):
    """How the other hosts reach `host`'s libvirtd (the fleet inventory's libvirt_migration_uri)."""
    return FleetHost(lab, host).variables["libvirt_migration_uri"]


def where(hosts):
    """{host: (names of its domains, names of those running)}."""
    return on_each(hosts, lambda host: tuple(output.split() for output in host.virsh_each(
        ("list", "--all", "--name"), ("list", "--name"))))


def state(host):
    """The guest as its host has it: live schedinfo, the collection's record
    in its running and stored definitions, its stored definition; the XML
    canonical (libvirt indents a definition it takes in from a move anew)."""
    schedinfo, *documents = host.virsh_each(
        ("schedinfo", GUEST), ("metadata", GUEST, "--live", "--uri", THROTTLE_NAMESPACE),
        ("metadata", GUEST, "--config", "--uri", THROTTLE_NAMESPACE), ("dumpxml", "--inactive", GUEST))
    return (schedinfo,) + tuple(ET.canonicalize(document, strip_text=True) for document in documents)


GONE = "oc-lab-hv-gone"  # a hypervisor of the inventory that cannot be reached


def move_plan(record):
    """An approved plan moving the guest, as it was seen throttled (its cap
    and its throttle record's time: what apply compares before it moves),
    and throttling a VM of a host the run cannot reach."""
    key, elsewhere = "%s/%s" % (SOURCE, GUEST), "%s/oc-gone-1" % GONE
    move = {"action": "migrate", "object": key, "vm": GUEST, "host": SOURCE, "to": TARGET, "rule": "placement",
            "reason": "victims still wait with every culprit at its floor, 3 cycles in a row"}
    throttle = {"action": "throttle", "object": elsewhere, "vm": "oc-gone-1", "host": GONE, "cpus": 0.5,
                "previous_cpus": None, "rule": "contain", "reason": "oc-gone-2 waits"}
    seen = {key: {"cap_cpus": 0.5, "throttle_time": re.search(r' time="([^"]+)"', record).group(1)},
            elsewhere: {"cap_cpus": None, "throttle_time": None}}
    return plans.make({"actions": [move, throttle]}, seen, time.time(), 600)


def gone_inventory(tmp_path, lab):
    """An inventory adding GONE to the fleet's hypervisors: SSH to a port of
    this machine nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = tmp_path / "gone.yml"
    path.write_text("hypervisors:\n  hosts:\n    %s:\n      ansible_host: 127.0.0.1\n      ansible_port: %d\n"
                    "      ansible_connection: ssh\n      ansible_user: ocadmin\n" % (GONE, port))
    return [lab["OVERCOMMIT_FLEET_INVENTORY"], str(path)]


def outcome_lines(completed):
    """The lines apply_plan.yml says at its end of what the whole plan did."""
    said = completed.stdout[completed.stdout.rindex("Say what the plan did"):]
    said = said[:said.find("TASK [", 1)]
    return re.findall(r'"((?:applied|already applied|refused|failed|left alone|not applied): [^"]*)"', said)


def test_a_throttled_vm_moves_live_by_an_approved_plan_with_its_records_and_restore_is_exact_where_it_landed(
        lab, tmp_path):
    source, target = FleetHost(lab, SOURCE), FleetHost(lab, TARGET)
    inventory = lab["OVERCOMMIT_FLEET_INVENTORY"]
    fleet = [source, target]
    original = source.definitions(GUEST)[GUEST]
    placed_before = where(fleet)
    assert GUEST in placed_before[SOURCE][1] and STOPPED not in placed_before[SOURCE][1], placed_before
    to_target = {"domains": [GUEST, STOPPED], "target_uri": migration_uri(lab, TARGET), "target_name": TARGET}
    try:
        throttled = run_module("libvirt_cputune", {"domains": [GUEST], "cpus": 0.5, "reason": "INC-move"},
                               host=SOURCE, inventory=inventory)
        assert throttled.get("changed") and not throttled.get("failed"), throttled.get("msg")
        before = state(source)
        assert 'reason="INC-move"' in before[1] and 'reason="INC-move"' in before[2], before

        # Check mode: the running guest would move; a shut-off one is refused, named; nothing moves.
        checked = run_module("libvirt_migrate", to_target, host=SOURCE, inventory=inventory, check=True)
        assert checked.get("failed") and checked.get("changed"), checked.get("msg")
        assert checked["summary"]["report"] == [
            "%s: would move from %s to %s, records carried" % (GUEST, SOURCE, TARGET),
            "%s: not moved: %s is shut off: a live move needs it running" % (STOPPED, STOPPED)], checked["summary"]
        assert where(fleet) == placed_before and state(source) == before

        # The approved plan's move, carried out by apply_plan.yml on the source; the action of a host
        # the run cannot reach is named, not applied, and fails the run after the others.
        plan_file = tmp_path / "plan.json"
        plan_file.write_text(json.dumps(move_plan(before[1])))
        with_gone = gone_inventory(tmp_path, lab)
        unreached = ("not applied: %s/oc-gone-1: throttle to 0.5 CPU, was unlimited: host %s was not reached "
                     "(unreachable, or its play failed)" % (GONE, GONE))
        moved = run_playbook("apply_plan.yml", {"plan_file": str(plan_file)}, inventory=with_gone)
        assert moved.returncode != 0, moved.stdout[-4000:]
        assert outcome_lines(moved) == ["applied: %s/%s: move live to %s, with its records (placement)"
                                        % (SOURCE, GUEST, TARGET), unreached], moved.stdout[-4000:]
        # On the target only, running, with the same tuning (the throttle in force), the same record in
        # its running and stored definitions, and the same stored definition.
        placed = where(fleet)
        assert GUEST not in placed[SOURCE][0] and GUEST in placed[TARGET][1], placed
        assert state(target) == before
        # Applied again: the guest is found on its target, the action already applied, nothing moves.
        again = run_playbook("apply_plan.yml", {"plan_file": str(plan_file)}, inventory=with_gone)
        assert again.returncode != 0, again.stdout[-4000:]
        assert outcome_lines(again) == ["already applied: %s/%s: move live to %s, with its records"
                                        % (SOURCE, GUEST, TARGET), unreached], again.stdout[-4000:]
        assert where(fleet) == placed

        # Restore where it landed gives back exactly what the throttle replaced, there.
        restored = run_module("libvirt_cputune", {"domains": [GUEST], "state": "restored"},
                              host=TARGET, inventory=inventory)
        assert restored.get("changed") and not restored.get("failed"), restored.get("msg")
        schedinfo, definition = target.definitions(GUEST)[GUEST]
        assert schedinfo == original[0]
        assert ET.canonicalize(definition, strip_text=True) == ET.canonicalize(original[1], strip_text=True)
    finally:
        # The lab as it was: the guest defined and running on its own host only.
        if GUEST in target.virsh("list", "--all", "--name").split():
            target.ssh("virsh -q -c qemu:///system destroy %s; virsh -q -c qemu:///system undefine %s"
                       % (GUEST, GUEST), check=False)
            source.ssh("virsh -q -c qemu:///system define /dev/stdin >/dev/null <<'XML'\n%sXML\n"
                       "virsh -q -c qemu:///system start %s >/dev/null" % (original[1], GUEST))
        else:
            run_module("libvirt_cputune", {"domains": [GUEST], "state": "restored"}, host=SOURCE, inventory=inventory)


def test_one_plan_over_the_fleet_measures_each_reachable_host_and_names_the_one_it_cannot_reach(lab, tmp_path):
    """recommend.yml over both hypervisor VMs and one that cannot be
    reached: the plan is written, each reachable host measured in its
    rounds, the other named as not measured, and the run fails on it after
    writing the plan (max_unmeasured_share 0, the default)."""
    plan_dir = tmp_path / "recommended"
    completed = run_playbook("recommend.yml", {"plan_dir": str(plan_dir), "samples": 1, "interval": 1},
                             inventory=gone_inventory(tmp_path, lab))
    assert completed.returncode != 0, completed.stdout[-4000:]
    made = json.loads((plan_dir / "plan.json").read_text())
    assert [entry["host"] for entry in made["skipped"]] == [GONE], made["skipped"]
    assert (made["unmeasured"]["count"], made["unmeasured"]["hosts"]) == (1, 3), made["unmeasured"]
    assert "not measured: %s: not measured (unreachable, or its play failed)" % GONE in made["summary"], made["summary"]
    assert "could not be measured" in completed.stdout and GONE in completed.stdout, completed.stdout[-4000:]
