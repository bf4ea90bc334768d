import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common import names
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError


def test_a_list_written_as_one_string_is_refused_naming_the_field_and_element():
    params = {"domains": "web-1, web-2".split(",")}
    with pytest.raises(names.NameListError) as error:
        names.check_names(params, ("domains",))
    assert error.value.field == "domains"
    assert str(error.value) == ("domains[1]=' web-2' has surrounding spaces (names are matched exactly: did you mean "
                                "'web-2'?)")
    # The modules' field errors are ValueRangeErrors: every platform's module fails on them naming the field.
    assert isinstance(error.value, ValueRangeError)


def test_every_bad_element_of_the_field_is_listed():
    with pytest.raises(names.NameListError) as error:
        names.check_names({"vms": ["a", "b ", "", "\tc"]}, ("uuids", "vms"))
    assert error.value.field == "vms"
    assert str(error.value) == ("vms[1]='b ' has surrounding spaces (names are matched exactly: did you mean 'b'?); "
                                "vms[2]='' is empty; vms[3]='\\tc' has surrounding whitespace (names are matched "
                                "exactly: did you mean 'c'?)")


def test_the_first_field_with_a_bad_name_is_reported():
    with pytest.raises(names.NameListError) as error:
        names.check_names({"clusters": [" c1"], "hosts": ["h1 "]}, ("clusters", "hosts"))
    assert error.value.field == "clusters"


@pytest.mark.parametrize("params", [{"names": ["web-1", "web 2", "tenant-a.vm_3"]}, {"names": []}, {"names": None},
                                    {}])
def test_good_or_absent_names_pass(params):
    names.check_names(params, ("names",))
