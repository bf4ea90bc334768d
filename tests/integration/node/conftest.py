"""Fixtures of the tests on the lab's real node: VMs whose virt-launcher
stand-ins its kubelet runs, and a way to run a module as a lab identity."""

import pytest

from run_module import run_module
from standin import NodeFleet


@pytest.fixture
def fleet(lab, kube_admin):
    made = NodeFleet(kube_admin, lab)
    yield made
    made.cleanup()


@pytest.fixture
def run_as(lab):
    """run_as(identity, module, args, check=False): the module's result, run
    with ansible-playbook as one of the lab's identities."""
    def run(identity, module, args, **options):
        args = dict(args, kubeconfig=lab["OVERCOMMIT_KUBECONFIG_" + identity.upper()])
        return run_module(module, args, **options)

    return run
