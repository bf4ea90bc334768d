# -*- coding: utf-8 -*-
"""Every record the collection keeps on an object carries its schema; a
record in an older shape (before records carried one, before `owns`,
`plan` or `forced` existed) is read as it is, and one of a newer schema is
refused for that object, nothing changed. The older shapes below are the
ones builds before 0.1.0 wrote."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common import record
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import plan as limit_plan
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import request as brake
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake import state as limit_state
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.records import (
    AppliedRecord, ThrottleRecord, same_record_text)
from ansible_collections.overcommit.control.plugins.module_utils.k8s import metadata
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml
from ansible_collections.overcommit.control.plugins.module_utils.vsphere import reservation as rsv

PREFIX = "overcommit.control/"
THROTTLE_NS, POLICY_NS, CLASS_NS = domain_xml.THROTTLE_NAMESPACE, domain_xml.POLICY_NAMESPACE, domain_xml.CLASS_NAMESPACE
NEWER = record.RECORD_SCHEMA + 1


def domain(*elements):
    """A domain XML whose metadata holds the elements as libvirt keeps them
    (each in its namespace, children unprefixed)."""
    return "<domain><name>x</name><vcpu>4</vcpu><metadata>%s</metadata></domain>" % "".join(elements)


def in_namespace(element_xml, tag, namespace):
    return element_xml.replace("<%s" % tag, '<p:%s xmlns:p="%s"' % (tag, namespace), 1) \
        .replace("</%s>" % tag, "</p:%s>" % tag)


@pytest.mark.parametrize("value", [None, 1, "1"])
def test_a_schema_this_collection_reads(value):
    assert record.schema_refusal(value) is None
    record.check_schema("x.schema", value)


@pytest.mark.parametrize("value,why", [
    (NEWER, "newer overcommit.control"), (str(NEWER), "newer overcommit.control"), (0, "not a record schema"),
    ("one", "not a record schema"), (True, "not a record schema"), (1.5, "not a record schema")])
def test_a_schema_this_collection_cannot_read_is_named(value, why):
    assert why in record.schema_refusal(value)
    with pytest.raises(record.NewerRecordError) as refused:
        record.check_schema("throttle.schema", value)
    assert str(refused.value).startswith("throttle.schema: ") and "nothing was changed" in str(refused.value)


# --- libvirt domain metadata ---------------------------------------------------

LIBVIRT_RECORD = {"reason": "INC-1", "by": "ops", "time": "2026-01-05T10:00:00Z", "scope": "vcpu", "cpus": 1.5,
                  "owns": ["vcpu_quota"], "previous": {"live": {"vcpu_period": 100000, "vcpu_quota": -1}}}


def test_the_libvirt_elements_are_written_in_the_current_schema():
    for element in (domain_xml.record_xml(LIBVIRT_RECORD), domain_xml.policy_xml({"cap": 1.0}, None),
                    domain_xml.class_xml("shared")):
        assert ET.fromstring(element).get("schema") == str(record.RECORD_SCHEMA)


def test_a_libvirt_throttle_record_in_the_first_shape_reads_without_schema_owns_or_plan():
    first = ('<throttle reason="INC-1" time="2026-01-05T10:00:00Z" by="ops" scope="vcpu" cpus="1.5">'
             '<previous target="live" vcpu_period="100000" vcpu_quota="-1"/></throttle>')
    described = domain_xml.describe(domain(in_namespace(first, "throttle", THROTTLE_NS)))
    # Without owns, restore writes back every value recorded.
    assert described["record"] == dict((k, v) for k, v in LIBVIRT_RECORD.items() if k != "owns")
    current = domain_xml.describe(domain(in_namespace(domain_xml.record_xml(LIBVIRT_RECORD), "throttle",
                                                      THROTTLE_NS)))
    assert current["record"] == LIBVIRT_RECORD


def test_a_libvirt_throttle_record_of_a_newer_schema_is_refused_naming_it():
    newer = domain_xml.record_xml(LIBVIRT_RECORD).replace('schema="1"', 'schema="%d"' % NEWER)
    with pytest.raises(record.NewerRecordError, match="throttle.schema: it was written in record schema %d" % NEWER):
        domain_xml.describe(domain(in_namespace(newer, "throttle", THROTTLE_NS)))


def test_a_libvirt_policy_element_without_schema_reads_and_a_newer_one_keeps_only_its_kill_switch():
    first = '<policy><pause reason="INC-2" by="ops"/><state>{"cap":1.0}</state></policy>'
    assert domain_xml.describe(domain(in_namespace(first, "policy", POLICY_NS)))["policy"] == {
        "state": {"cap": 1.0}, "pause": {"reason": "INC-2", "by": "ops"}, "error": None}
    newer = first.replace("<policy>", '<policy schema="%d">' % NEWER)
    policy = domain_xml.describe(domain(in_namespace(newer, "policy", POLICY_NS)))["policy"]
    assert policy["state"] is None and policy["pause"] == {"reason": "INC-2", "by": "ops"}
    assert "newer overcommit.control" in policy["error"]


def test_a_libvirt_class_element_without_schema_reads_and_a_newer_one_is_refused():
    # libvirt keeps the class element's children in its namespace too.
    first = '<vm xmlns="%s"><class>burstable</class><baseline>0.5</baseline></vm>' % CLASS_NS
    facts = domain_xml.describe(domain(first))
    assert (facts["declared_class"], facts["baseline_cpus"]) == ("burstable", 0.5)
    newer = first.replace("<vm ", '<vm schema="%d" ' % NEWER)
    with pytest.raises(record.NewerRecordError, match="vm.schema"):
        domain_xml.describe(domain(newer))


# --- KubeVirt annotations ------------------------------------------------------

def request(**params):
    base = {"state": "throttled", "names": ["web-1"], "namespace": "lab", "label_selector": None, "cpus": "1",
            "headroom": 1.0, "floor": 0.25, "force": False, "prefix": PREFIX}
    base.update(params)
    return brake.check_request(base)


def vmi_view(annotations):
    vmi = {"metadata": {"name": "web-1", "namespace": "lab", "uid": "u", "annotations": annotations},
           "spec": {"domain": {"cpu": {"cores": 4}}},
           "status": {"phase": "Running", "nodeName": "node-a", "activePods": {"pod-1": "node-a"}}}
    return limit_state.vmi_view(vmi, request()["keys"])


LAUNCHER = {"metadata": {"name": "virt-launcher-web-1-1", "uid": "pod-1"},
            "spec": {"nodeName": "node-a", "containers": [{"name": "compute", "resources": {
                "requests": {"cpu": "400m", "memory": "1Gi"}, "limits": {"cpu": "2"}}}]},
            "status": {"phase": "Running"}}


def test_kubevirt_records_in_the_first_shape_read_and_equal_their_rewrite_in_the_current_schema():
    first = json.dumps({"previous": "4", "reason": "INC-1", "by": "ops", "time": "2026-01-05T10:00:00Z"})
    parsed = ThrottleRecord.parse(first)
    assert (parsed.previous, parsed.plan, parsed.forced, parsed.extra) == ("4", None, None, {})
    rewritten = parsed.text()
    assert json.loads(rewritten)["schema"] == record.RECORD_SCHEMA and same_record_text(first, rewritten)
    applied = AppliedRecord.parse('{"cpus": "1", "pod": "virt-launcher-web-1-1", "podUID": "pod-1", "time": "t"}')
    assert applied.pod_uid == "pod-1" and json.loads(applied.text())["schema"] == record.RECORD_SCHEMA
    # Restore gives back the limit the first-shape record kept.
    view = vmi_view({PREFIX + "cpu-limit": "1", PREFIX + "cpu-limit-throttle": first})
    assert limit_plan.target(view, LAUNCHER, request(state="restored", cpus=None)) == (4.0, None, "restore")


def test_a_kubevirt_throttle_record_of_a_newer_schema_refuses_throttle_and_restore():
    # Schema 2 is this collection's own KubeVirt record that keeps a demoted request: 3 is newer.
    newer = json.dumps({"previous": "4", "reason": "INC-1", "schema": NEWER + 1})
    assert ThrottleRecord.parse(newer) is None and "newer overcommit.control" in ThrottleRecord.unreadable(newer)
    view = vmi_view({PREFIX + "cpu-limit": "1", PREFIX + "cpu-limit-throttle": newer})
    for req in (request(cpus="1"), request(state="restored", cpus=None)):
        with pytest.raises(limit_state.LimitRefusal) as refused:
            limit_plan.target(view, LAUNCHER, req)
        assert "record schema %d" % (NEWER + 1) in str(refused.value) and "nothing was changed" in str(refused.value)
        # Removing it would lose what restore gives back: not advised for a newer record.
        assert "remove" not in str(refused.value)


# --- node annotations ------------------------------------------------------------

def node(annotations):
    return {"metadata": {"name": "n1", "annotations": annotations, "labels": {}}, "spec": {}}


def test_node_records_without_schema_read_and_are_written_in_the_current_schema():
    first = {PREFIX + "gate": '{"reason": "PSI high", "by": "ops", "time": "t"}',
             PREFIX + "policy": '{"rule": "gate_pressure", "gated_at": 1}'}
    view = metadata.node_view(node(first), PREFIX)
    assert view["gate"] == {"reason": "PSI high", "by": "ops", "time": "t"} and view["gate_error"] is None
    assert view["policy"] == {"rule": "gate_pressure", "gated_at": 1} and view["policy_error"] is None
    assert json.loads(metadata.record_text(view["gate"]))["schema"] == record.RECORD_SCHEMA
    assert json.loads(metadata.policy_text(view["policy"]))["schema"] == record.RECORD_SCHEMA
    # Read back, the schema is the annotation's, not part of the record or state.
    again = metadata.node_view(node({PREFIX + "gate": metadata.record_text(view["gate"]),
                                     PREFIX + "policy": metadata.policy_text(view["policy"])}), PREFIX)
    assert (again["gate"], again["policy"]) == (view["gate"], view["policy"])


def test_node_records_of_a_newer_schema_are_not_read_and_say_why():
    newer = {PREFIX + "gate": json.dumps({"reason": "PSI high", "schema": NEWER}),
             PREFIX + "policy": json.dumps({"rule": "gate_pressure", "schema": NEWER})}
    view = metadata.node_view(node(newer), PREFIX)
    assert view["gate"] is None and "newer overcommit.control" in view["gate_error"]
    assert PREFIX + "gate" in view["gate_error"] and "nothing was changed" in view["gate_error"]
    assert view["policy"] is None and "newer overcommit.control" in view["policy_error"]


def test_a_policy_state_may_not_use_the_key_the_schema_is_kept_under():
    with pytest.raises(ValueError, match="policy_state.schema"):
        metadata.check_policy_state({"rule": "x", "schema": 1})


# --- the vSphere custom attribute --------------------------------------------------

def test_the_vsphere_record_keeps_its_schema_as_v_and_a_newer_one_is_refused():
    current = {"v": 1, "prior": {"cpu.reservation": 0}, "reason": "INC-1"}
    assert rsv.decode_record(rsv.encode_record(current)) == current
    with pytest.raises(rsv.ReservationError, match="newer overcommit.control"):
        rsv.decode_record(json.dumps(dict(current, v=NEWER)), "attr")
