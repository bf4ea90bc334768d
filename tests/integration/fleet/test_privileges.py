"""The privileges docs/privileges.md gives a libvirt host, tested as it says:
everything the fleet tests run on the hypervisor VMs runs over SSH as
`ocadmin`, a user of the VM's `libvirt` group that is not root and never
becomes root (throttle.yml and restore.yml, with the locks in a folder of
the operator's own, in test_fleet_incident.py; closed-loop cycles, whose
writes are compare-and-swap under each domain's lock, and undo_all.yml in
test_fleet_loop.py; a move in test_fleet_migrate.py); here, a user outside
that group is refused before anything changes, told the right it lacks.
Judged on the host's own state, read as root over SSH: libvirtd's live
schedinfo and stored definition."""

import shlex

from fleet_hosts import FleetHost
from run_module import run_playbook

HOST = "oc-lab-hv-1"
GUEST = "oc-hv1-idle-1"
OUTSIDER = "ocnolibvirt"


def test_a_user_outside_the_libvirt_group_is_told_why_and_nothing_changes(lab):
    host = FleetHost(lab, HOST)
    assert host.ssh("id -un ocadmin; id -Gn ocadmin").split() == ["ocadmin", "ocadmin", "libvirt"]
    before = host.definitions(GUEST)

    # A user outside the libvirt group: refused at the connection, naming the right it lacks.
    keys = "/home/%s/.ssh" % OUTSIDER
    host.ssh("id {user} >/dev/null 2>&1 || useradd -m {user}; install -d -m 700 -o {user} -g {user} {keys}; "
             "install -m 600 -o {user} -g {user} /home/ocadmin/.ssh/authorized_keys {keys}/authorized_keys"
             .format(user=OUTSIDER, keys=keys))
    try:
        incident = {"domains": [GUEST], "cpus": 0.5, "reason": "non-root test", "target_hosts": HOST,
                    "ansible_user": OUTSIDER}
        refused = run_playbook("throttle.yml", incident, inventory=lab["OVERCOMMIT_FLEET_INVENTORY"])
    finally:
        host.ssh("userdel -r %s" % shlex.quote(OUTSIDER), check=False)
    assert refused.returncode != 0
    assert "user %s has no access to libvirt here: add it to the libvirt group" % OUTSIDER in refused.stdout, \
        refused.stdout[-3000:]
    assert host.definitions(GUEST) == before
