"""The closed loop's lab scenario, shared by its tests: the noisy
neighbour and its two victims."""

import pytest

from domain_records import policy_states_removed
from run_module import run_module

HOST = "lab-hypervisor"
CULPRIT = "oc-lab-busy-1"
VICTIMS = ("oc-lab-busy-2", "oc-lab-busy-3")


@pytest.fixture
def guests(libvirt_conn):
    """The victims running, the culprit defined but off; afterwards all three
    shut off, their tuning and the loop's state removed."""
    domains = dict((name, libvirt_conn.lookupByName(name)) for name in (CULPRIT,) + VICTIMS)
    for name in VICTIMS:
        if not domains[name].isActive():
            domains[name].create()
    if domains[CULPRIT].isActive():
        domains[CULPRIT].destroy()
    with policy_states_removed(libvirt_conn):
        yield domains
    names = sorted(domains)
    run_module("libvirt_cputune", {"domains": names, "state": "restored", "missing": "ignore"}, host=HOST)
    run_module("libvirt_policy_state", {"states": dict((name, None) for name in names), "domains": names,
                                        "paused": False, "missing": "ignore"}, host=HOST)
    for domain in domains.values():
        if domain.isActive():
            domain.destroy()
