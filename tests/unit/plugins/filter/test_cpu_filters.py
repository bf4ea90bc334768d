import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.overcommit.control.plugins.filter.cpu import FilterModule

FILTERS = FilterModule().filters()


def test_conversions():
    assert FILTERS["cpus_to_quota"](2) == 200000
    assert FILTERS["cpus_to_quota"]("0.5", period=20000) == 10000
    assert FILTERS["quota_to_cpus"](50000) == 0.5
    assert FILTERS["quota_to_cpus"](-1) is None
    assert FILTERS["vcpu_cap_to_domain"](0.5, 4) == 2
    assert FILTERS["domain_cap_to_vcpu"](2, 4) == 0.5


def test_bad_input_names_the_filter_and_the_range():
    with pytest.raises(AnsibleFilterError, match="cpus_to_quota: period=10 is out of range: allowed 1000..1000000"):
        FILTERS["cpus_to_quota"](1, period=10)
    with pytest.raises(AnsibleFilterError, match="domain_cap_to_vcpu: vcpus=0"):
        FILTERS["domain_cap_to_vcpu"](2, 0)
