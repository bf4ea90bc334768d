"""The playbook vm_classes.yml (role vm_classes) on the lab's real libvirtd:
a small fleet of the lab's guests classified in one run from a domain to
class map, a second run changing nothing, the brake honouring the classes,
and the guests' classes put back as the lab defined them afterwards."""

import pytest

import test_vm_class
from run_module import run_module, run_playbook
from test_vm_class import HOST, classes_of

pytestmark = pytest.mark.xdist_group("libvirt")

# The guests' classes as the lab defined them, put back after the test.
lab_classes = test_vm_class.lab_classes

FLEET = {"oc-lab-idle-4": "dedicated", "oc-lab-busy-2": "burstable", "oc-lab-idle-1": "shared",
         "oc-lab-on-no-host": "shared"}


def test_the_playbook_classifies_a_fleet_and_the_brake_honours_it(lab_classes):
    extra = {"domains": FLEET, "baselines": {"oc-lab-busy-2": 0.5}, "kubevirt_hosts": "none"}
    done = run_playbook("vm_classes.yml", extra)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "oc-lab-busy-2: burstable (baseline 0.5 CPU), was" in done.stdout
    # A name defined on no host is skipped there, as a fleet run names every domain on every host.
    assert "1 skipped (not defined on this host)" in done.stdout
    assert classes_of(lab_classes) == {"oc-lab-idle-4": ("dedicated", None), "oc-lab-busy-2": ("burstable", 0.5),
                                       "oc-lab-idle-1": ("shared", None)}
    again = run_playbook("vm_classes.yml", extra)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout[-3000:]

    refused = run_module("libvirt_cputune", {"domains": ["oc-lab-idle-4"], "cpus": 1, "reason": "test"}, host=HOST)
    assert refused["failed"] and "its class is dedicated" in refused["domains"][0]["msg"], refused
    # The burstable guest (shut off: its config only) is not capped under the floor of its class.
    under = run_module("libvirt_cputune", {"domains": ["oc-lab-busy-2"], "cpus": 0.1, "reason": "test"}, host=HOST)
    assert under["failed"] and "floor" in under["domains"][0]["msg"], under
    assert run_module("libvirt_cputune_info", {"domains": ["oc-lab-idle-4", "oc-lab-busy-2"]},
                      host=HOST)["domains"][0]["cap_cpus"] is None
