# -*- coding: utf-8 -*-
"""The class of libvirt domains in their metadata: the options checked, the
element written, and what the brakes read back."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import xml.etree.ElementTree as ET

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import classify, domain_xml

NS = domain_xml.CLASS_NAMESPACE


def test_classes_and_baselines_are_checked_naming_the_field():
    assert classify.check_classes({"a": "burstable", "b": None}, {"a": 0.5}) == {
        "a": {"class": "burstable", "baseline": 0.5}, "b": {"class": None, "baseline": None}}
    for classes, baselines, field in (({"a": "gold"}, None, "classes.a"), ({}, None, "classes"),
                                      ({"a": "shared"}, {"a": 0.5}, "baselines.a"),
                                      ({"a": "burstable"}, {"a": 0}, "baselines.a"),
                                      ({"a": "burstable"}, {"a": True}, "baselines.a"),
                                      ({"a": "burstable"}, {"b": 1}, "baselines.b"),
                                      ({"a ": "shared"}, None, "classes")):
        with pytest.raises(ValueRangeError) as refused:
            classify.check_classes(classes, baselines)
        assert refused.value.field == field, (classes, baselines)
    with pytest.raises(ValueRangeError, match="under the domain's 2 vCPUs"):
        classify.check_baseline("a", 2.0, 2)


def domain_with(element_xml):
    metadata = "<metadata>%s</metadata>" % element_xml if element_xml else ""
    return ET.fromstring("<domain xmlns:oc='%s'>%s<vcpu>2</vcpu></domain>" % (NS, metadata))


def test_the_element_written_is_the_one_the_brakes_read():
    written = domain_xml.class_xml("burstable", 0.5)
    # libvirt puts the element in the namespace it is given.
    stored = written.replace("<vm ", "<oc:vm ").replace("</vm>", "</oc:vm>").replace("<class>", "<oc:class>") \
        .replace("</class>", "</oc:class>").replace("<baseline>", "<oc:baseline>").replace("</baseline>", "</oc:baseline>")
    facts = domain_xml.class_facts(domain_with(stored))
    assert (facts["declared_class"], facts["baseline_cpus"]) == ("burstable", 0.5)
    assert domain_xml.class_xml(None) is None
    assert "<baseline>" not in domain_xml.class_xml("shared")


@pytest.mark.parametrize("text", ["", "fast", "-1", "0", "nan", "inf", "1" * 400])
def test_a_baseline_that_is_no_number_of_cpus_reads_as_none(text):
    facts = domain_xml.class_facts(domain_with("<oc:vm><oc:class>burstable</oc:class><oc:baseline>%s</oc:baseline>"
                                               "</oc:vm>" % text))
    assert facts["baseline_cpus"] is None and facts["declared_class"] == "burstable"


def test_the_report_says_the_class_now_and_before():
    result = {"name": "a", "changed": True, "class": "burstable", "baseline": 0.5,
              "before": {"live": {"class": "shared", "baseline": None}}}
    assert classify.report_line(result) == "a: burstable (baseline 0.5 CPU), was shared"
    assert classify.report_line(dict(result, changed=False)) == "a: burstable (baseline 0.5 CPU), unchanged"
    assert classify.report_line({"name": "a", "changed": True, "class": None, "baseline": None,
                                 "before": {"config": {"class": "dedicated", "baseline": None}}}, True) == \
        "a: would be no class, was dedicated"
