"""The roles' molecule scenarios can run again and again.

Molecule keeps a scenario's state between runs (in ANSIBLE_HOME, per
checkout) and skips `prepare` (and `create`) while it remembers the scenario
as prepared (created); only `destroy` makes it forget. A scenario that
prepares or creates must therefore start with destroy (a state left by an
earlier run) and end with it, or a later `molecule test` runs converge and
verify on what was never made."""

import glob
import os

import pytest
import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir))
SCENARIOS = sorted(glob.glob(os.path.join(ROOT, "roles", "*", "molecule", "*", "molecule.yml")))


def scenario_id(path):
    return os.path.relpath(os.path.dirname(path), os.path.join(ROOT, "roles"))


def sequence_of(path):
    with open(path) as handle:
        return yaml.safe_load(handle)["scenario"]["test_sequence"]


# The scenarios with a step molecule skips while it remembers it done.
REMEMBERED = [path for path in SCENARIOS if {"prepare", "create"} & set(sequence_of(path))]


def test_every_role_has_a_scenario():
    roles = sorted(os.listdir(os.path.join(ROOT, "roles")))
    with_scenario = sorted(set(scenario_id(path).split(os.sep)[0] for path in SCENARIOS))
    assert with_scenario == roles


@pytest.mark.parametrize("path", REMEMBERED, ids=scenario_id)
def test_a_scenario_that_prepares_starts_and_ends_with_destroy(path):
    sequence = sequence_of(path)
    assert sequence[0] == sequence[-1] == "destroy", (
        "%s: test_sequence %s prepares or creates but does not start and end with destroy" % (scenario_id(path), sequence))
    assert os.path.exists(os.path.join(os.path.dirname(path), "destroy.yml"))
