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


@pytest.mark.parametrize("given, why", [
    (["web-1", "web-2", "web-1"], "names[2]='web-1' is given twice (each name once)"),
    (["web-1", "x" * 300], "names[1]='" + "x" * 32 + "...' is 300 characters long, more than the 253"),
    (["web\n1"], "names[0]='web\\n1' holds a control character"),
])
def test_a_name_twice_too_long_or_with_control_characters_is_refused_naming_it(given, why):
    with pytest.raises(names.NameListError) as error:
        names.check_names({"names": given}, ("names",))
    assert error.value.field == "names" and why in str(error.value)


def test_more_names_than_one_task_is_for_are_refused_before_any_is_read():
    with pytest.raises(ValueRangeError) as error:
        names.check_names({"names": ["web-%d" % n for n in range(10000)]}, ("names",))
    assert error.value.field == "names" and "at most 5000 names" in str(error.value)


def test_names_with_markup_and_selector_characters_are_names_like_any_other():
    # libvirt escapes them; a platform whose names cannot hold them says so itself.
    names.check_names({"names": ["a<b", "a&b", 'a"b', "a,b", "a=b", "a!b", "vm-é"]}, ("names",))
