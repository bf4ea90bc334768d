"""The privileges docs/privileges.md gives a libvirt host, tested as it says:
everything the fleet tests run on the hypervisor VMs runs over SSH as
`ocadmin`, a user of the VM's `libvirt` group that is not root and never
becomes root (throttle.yml and restore.yml in test_fleet_incident.py,
closed-loop cycles and undo_all.yml in test_fleet_loop.py); here, the
compare-and-swap write a plan or a cycle makes takes its lock in a folder of
the operator's own, and a user outside that group is refused before anything
changes, told the right it lacks. Judged on the host's own state, read as
root over SSH: libvirtd's live schedinfo and the lock folder's owner."""

import shlex

from fleet_hosts import FleetHost
from run_module import run_module, run_playbook

HOST = "oc-lab-hv-1"
GUEST = "oc-hv1-idle-1"
OUTSIDER = "ocnolibvirt"
# The lock folder: the default, or the fallback in the temp folder where /run/lock is not the user's to write.
LOCK_DIRS = ("/run/lock/overcommit-control", "/tmp/overcommit-control-locks")


def playbook(lab, name, extra_vars):
    return run_playbook(name, extra_vars, inventory=lab["OVERCOMMIT_FLEET_INVENTORY"])


def test_the_libvirt_group_is_enough_for_a_locked_write_and_without_it_the_user_is_told_why(lab):
    host = FleetHost(lab, HOST)
    assert host.ssh("id -un ocadmin; id -Gn ocadmin").split() == ["ocadmin", "ocadmin", "libvirt"]
    before = host.definitions(GUEST)

    # As a plan or a cycle writes (compare-and-swap, under the domain's lock): the locks are the
    # operator's own, in a folder no one else may write.
    planned = run_module("libvirt_cputune", {"domains": [GUEST], "cpus": 0.5, "reason": "non-root test",
                                             "expected": {GUEST: {"cap_cpus": None, "throttle_time": None}}},
                         host=HOST, inventory=lab["OVERCOMMIT_FLEET_INVENTORY"])
    try:
        assert planned.get("changed") and not planned.get("failed"), planned.get("msg")
        folders = host.ssh("stat -c '%%U %%a' %s 2>/dev/null; true" % " ".join(LOCK_DIRS)).split("\n")
        assert "ocadmin 700" in folders, folders
    finally:
        run_module("libvirt_cputune", {"domains": [GUEST], "state": "restored"}, host=HOST,
                   inventory=lab["OVERCOMMIT_FLEET_INVENTORY"])
    assert host.definitions(GUEST) == before

    # A user outside the libvirt group: refused at the connection, naming the right it lacks.
    keys = "/home/%s/.ssh" % OUTSIDER
    host.ssh("id {user} >/dev/null 2>&1 || useradd -m {user}; install -d -m 700 -o {user} -g {user} {keys}; "
             "install -m 600 -o {user} -g {user} /home/ocadmin/.ssh/authorized_keys {keys}/authorized_keys"
             .format(user=OUTSIDER, keys=keys))
    try:
        refused = playbook(lab, "throttle.yml", {"domains": [GUEST], "cpus": 0.5, "reason": "non-root test",
                                                 "target_hosts": HOST, "ansible_user": OUTSIDER})
    finally:
        host.ssh("userdel -r %s" % shlex.quote(OUTSIDER), check=False)
    assert refused.returncode != 0
    assert "user %s has no access to libvirt here: add it to the libvirt group" % OUTSIDER in refused.stdout, \
        refused.stdout[-3000:]
    assert host.definitions(GUEST) == before
