import json
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common import untrusted
from ansible_collections.overcommit.control.plugins.module_utils.k8s import metadata
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml
from ansible_collections.overcommit.control.plugins.module_utils.vsphere import reservation

DEEP = "[" * 5000 + "]" * 5000


def test_records_are_parsed_as_json():
    assert untrusted.loads('{"a": [1, {"b": "[{"}]}') == {"a": [1, {"b": "[{"}]}


@pytest.mark.parametrize("text, why", [
    ("x" * (untrusted.MAX_CHARS + 1), "too large"),
    (DEEP, "too deeply nested"),
    ('{"a": ' * 40 + "1" + "}" * 40, "too deeply nested"),
    ("{not json", "Expecting"),
    (None, "NoneType"),
])
def test_oversized_deep_or_broken_values_raise_a_value_error_saying_why(text, why):
    with pytest.raises(ValueError, match=why):
        untrusted.loads(text)


def test_brackets_inside_strings_do_not_count_as_nesting():
    text = json.dumps({"reason": "[" * 100})
    assert untrusted.loads(text) == {"reason": "[" * 100}


def test_every_record_reader_reports_a_deep_value_as_unreadable_instead_of_raising_recursion_error():
    assert metadata.parse_record(DEEP) is None
    assert metadata.parse_policy(DEEP) == (None, "the annotation is not valid JSON (too deeply nested: more than 32 levels)")
    with pytest.raises(reservation.ReservationError, match="too deeply nested"):
        reservation.decode_record(DEEP)
    policy = ET.Element("policy")
    ET.SubElement(policy, "state").text = DEEP
    assert "too deeply nested" in domain_xml.parse_policy(policy)["error"]


def test_an_oversized_throttle_record_field_is_refused_naming_it_without_echoing_it():
    element = ET.Element("throttle", cpus="0.5", reason="r" * (untrusted.MAX_CHARS + 1))
    with pytest.raises(domain_xml.RecordError) as refused:
        domain_xml.parse_record(element)
    assert refused.value.field == "throttle.reason" and len(str(refused.value)) < 1000
