"""The privileges docs/privileges.md gives a libvirt host, tested as it says:
the incident playbooks and a closed-loop cycle run over SSH as `ocadmin`, a
user of the hypervisor VM's `libvirt` group that is not root and never
becomes root, and a user outside that group is refused before anything
changes, told the right it lacks. Judged on the host's own state, read as
root over SSH: libvirtd's live schedinfo and the lock folder's owner."""

import shlex

from cycle_summary import summary_in
from fleet_hosts import FleetHost
from run_module import run_module, run_playbook

HOST = "oc-lab-hv-1"
GUEST = "oc-hv1-idle-1"
OUTSIDER = "ocnolibvirt"
# The lock folder: the default, or the fallback in the temp folder where /run/lock is not the user's to write.
LOCK_DIRS = ("/run/lock/overcommit-control", "/tmp/overcommit-control-locks")


def playbook(lab, name, extra_vars):
    return run_playbook(name, extra_vars, inventory=lab["OVERCOMMIT_FLEET_INVENTORY"])


def test_the_libvirt_group_is_enough_for_throttle_restore_and_a_cycle_and_without_it_the_user_is_told_why(
        lab, tmp_path):
    host = FleetHost(lab, HOST)
    assert host.ssh("id -un ocadmin; id -Gn ocadmin").split() == ["ocadmin", "ocadmin", "libvirt"]
    before = host.virsh("schedinfo", GUEST)

    throttled = playbook(lab, "throttle.yml", {"domains": [GUEST], "cpus": 0.5, "reason": "non-root test"})
    assert throttled.returncode == 0, throttled.stdout[-3000:]
    assert "global_quota   : 50000" in host.virsh("schedinfo", GUEST)
    restored = playbook(lab, "restore.yml", {"domains": [GUEST]})
    assert restored.returncode == 0, restored.stdout[-3000:]
    assert host.virsh("schedinfo", GUEST) == before

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
    assert host.virsh("schedinfo", GUEST) == before

    cycle = playbook(lab, "closed_loop.yml", {"samples": 2, "interval": 1, "cycle_dir": str(tmp_path / "cycle")})
    assert cycle.returncode == 0, cycle.stdout[-3000:]
    summary = summary_in(tmp_path / "cycle")
    # Everything the cycle reads it could read as ocadmin: no host or VM left unmeasured.
    assert summary["unmeasured"]["count"] == 0, summary["unmeasured"]

    # A user outside the libvirt group: refused at the connection, naming the right it lacks.
    keys = "/home/%s/.ssh" % OUTSIDER
    host.ssh("id {user} >/dev/null 2>&1 || useradd -m {user}; install -d -m 700 -o {user} -g {user} {keys}; "
             "install -m 600 -o {user} -g {user} /home/ocadmin/.ssh/authorized_keys {keys}/authorized_keys"
             .format(user=OUTSIDER, keys=keys))
    try:
        refused = playbook(lab, "throttle.yml", {"domains": [GUEST], "cpus": 0.5, "reason": "non-root test",
                                                 "ansible_user": OUTSIDER})
    finally:
        host.ssh("userdel -r %s" % shlex.quote(OUTSIDER), check=False)
    assert refused.returncode != 0
    assert "user %s has no access to libvirt here: add it to the libvirt group" % OUTSIDER in refused.stdout, \
        refused.stdout[-3000:]
    assert host.virsh("schedinfo", GUEST) == before
