import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.overcommit.control.plugins.filter import rollout


def test_the_filters_are_registered():
    assert sorted(rollout.FilterModule().filters()) == [
        "rollout_changes", "rollout_health", "rollout_thresholds", "rollout_undo"]


def test_a_bad_threshold_fails_naming_the_role_variable():
    with pytest.raises(AnsibleFilterError) as error:
        rollout.rollout_thresholds({"max_steal_cpus": "lots"})
    assert "rollout_thresholds: rollout_wave_health.max_steal_cpus='lots'" in str(error.value)


def test_health_and_undo_of_an_empty_wave():
    assert rollout.rollout_health({}, None, None, {})["healthy"]
    assert rollout.rollout_undo({})["empty"] and rollout.rollout_changes({}) == []
