"""The incident playbooks across the lab's fleet of three hypervisors: this
machine (lab-hypervisor, cgroup v1, a local connection) and the two Debian 12
VMs oc-lab-hv-1 and oc-lab-hv-2 (cgroup v2, over SSH as `ocadmin`), one
inventory made of the lab's and the fleet's (-i both), as an operator names
VMs during an incident without saying which host has them. Judged by reading
each libvirtd directly: virsh on this machine, virsh over SSH on the VMs."""

from fleet_hosts import FleetHost, LocalHost, on_each
from run_module import INVENTORY, run_playbook

# One idle guest on each host, each name on one host only.
GUESTS = {"lab-hypervisor": "oc-lab-idle-1", "oc-lab-hv-1": "oc-hv1-idle-1", "oc-lab-hv-2": "oc-hv2-idle-1"}
NOWHERE = "oc-nowhere-17"
THROTTLE_NAMESPACE = "https://overcommit.control/xmlns/throttle/1"


def playbook(lab, name, extra_vars, *options):
    return run_playbook(name, extra_vars, inventory=[INVENTORY, lab["OVERCOMMIT_FLEET_INVENTORY"]], options=options)


def read_all(hosts):
    """{host: (its guest's state, live schedinfo, inactive definition)}, one
    SSH login per host, all hosts at once."""
    return on_each(hosts, lambda host: tuple(host.virsh_each(("domstate", GUESTS[host.name]),
                                                             ("schedinfo", GUESTS[host.name]),
                                                             ("dumpxml", "--inactive", GUESTS[host.name]))))


def test_a_throttle_by_name_caps_each_vm_on_the_host_that_has_it_and_restore_is_exact_on_every_host(lab):
    hosts = [LocalHost(), FleetHost(lab, "oc-lab-hv-1"), FleetHost(lab, "oc-lab-hv-2")]
    before = read_all(hosts)
    for host in hosts:
        assert before[host.name][0].strip() == "running", host.name
    incident = {"domains": sorted(GUESTS.values()), "cpus": 0.5, "reason": "INC-fleet"}

    # --check --diff: each host shows the change to its own guest, and nothing changes anywhere.
    checked = playbook(lab, "throttle.yml", incident, "--check", "--diff")
    assert checked.returncode == 0, checked.stdout[-4000:]
    for host, guest in GUESTS.items():
        assert "+++ after: domain %s" % guest in checked.stdout
        assert '"%s: would be 0.5 CPU, was unlimited",' % guest in checked.stdout, checked.stdout[-4000:]
    assert read_all(hosts) == before

    # A name on no host fails the run, named, after every other VM was capped on its own host; each host
    # says per domain (without -v) what cap is in force and what it replaced.
    throttled = playbook(lab, "throttle.yml", dict(incident, domains=incident["domains"] + [NOWHERE]))
    try:
        assert throttled.returncode != 0
        assert "found on no host of hypervisors: %s" % NOWHERE in throttled.stdout, throttled.stdout[-4000:]
        assert throttled.stdout.count('"3 skipped (not defined on this host)"') == 3, throttled.stdout[-4000:]
        for host in hosts:
            guest = GUESTS[host.name]
            assert '"%s: 0.5 CPU, was unlimited"' % guest in throttled.stdout, throttled.stdout[-4000:]
            schedinfo, record, defined = host.virsh_each(
                ("schedinfo", guest), ("metadata", guest, "--live", "--uri", THROTTLE_NAMESPACE),
                ("list", "--all", "--name"))
            assert "global_quota   : 50000" in schedinfo, host.name
            # The collection's record, on the host's own domain: what restore gives back.
            assert "INC-fleet" in record, (host.name, record)
            # No other host has this host's guest: each host capped its own guest only.
            assert not set(defined.split()) & (set(GUESTS.values()) - {guest}), (host.name, defined)
        again = playbook(lab, "throttle.yml", dict(incident, cpus=0.25))
        assert again.returncode == 0, again.stdout[-4000:]
        for guest in GUESTS.values():
            assert '"%s: 0.25 CPU, was 0.5 CPU"' % guest in again.stdout, again.stdout[-4000:]
    finally:
        restored = playbook(lab, "restore.yml", {"domains": sorted(GUESTS.values()) + [NOWHERE]})
    for guest in GUESTS.values():
        assert '"%s: restored to unlimited (was 0.25 CPU)"' % guest in restored.stdout, restored.stdout[-4000:]
    assert restored.returncode != 0 and NOWHERE in restored.stdout, restored.stdout[-4000:]
    # Exact on every host: the live tuning and the stored definition as they were.
    assert read_all(hosts) == before
