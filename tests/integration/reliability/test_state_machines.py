"""Stateful property-based tests against the lab's real servers: random
sequences of the collection's throttle/restore, gate/open and
reserve/restore, run in-process through the same runners the modules build,
mixed with foreign writes through the servers' own APIs, a guest restart and
concurrent writers (state_machines.py says what each machine does and
models, and checks after every step).

Real: libvirtd with the running guest oc-lab-idle-1 (its tuning and metadata
put back afterwards, left running), kube-apiserver with Node objects made for
the test (deleted afterwards), vcsim with a VM made for the test (destroyed
afterwards). Not real: the AnsibleModule around each runner (argument
parsing is the modules' own tests' business) and the nodes' kubelets (there
are none: the nodes are API objects).

A few dozen sequences each, derandomized, no example database and no
shrinking (a failing sequence is printed as it ran, with the blob that
replays it); scripts/soak runs the same machines a thousand times per
platform."""

import pytest

from state_machines import MACHINES, platform_env, run_machine

pytestmark = pytest.mark.e2e

EXAMPLES = 25
STEPS = 10


# The libvirt machine writes and restarts a lab guest, the vSphere one powers
# a VM on in the lab's cluster; the Kubernetes one makes its own nodes.
SHARING = {"libvirt": pytest.mark.xdist_group("libvirt"), "vsphere": pytest.mark.xdist_group("vcsim")}


@pytest.mark.parametrize("platform", [pytest.param(name, marks=SHARING.get(name, pytest.mark.isolated))
                                      for name in sorted(MACHINES)])
def test_random_sequences_keep_every_invariant(lab, platform):
    machine = MACHINES[platform]
    with platform_env(platform, lab):
        before = machine.sequences
        run_machine(machine, EXAMPLES, STEPS)
    # One machine instance per sequence: the run explored that many.
    assert machine.sequences - before >= EXAMPLES
