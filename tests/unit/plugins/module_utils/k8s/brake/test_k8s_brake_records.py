# -*- coding: utf-8 -*-
"""The KubeVirt brake's records as types: read from annotations that may
have been edited by hand, written back as the same JSON."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.untrusted import MAX_CHARS, MAX_DEPTH
from ansible_collections.overcommit.control.plugins.module_utils.k8s.brake.records import (
    AppliedRecord, ThrottleRecord, same_record_text)


def test_a_throttle_record_reads_its_fields_and_writes_the_same_json_keeping_unknown_keys():
    text = json.dumps({"previous": None, "reason": "INC-1", "by": "ops", "time": "2026-12-01T00:00:00Z",
                       "plan": "plan-1", "note": "kept"}, sort_keys=True)
    record = ThrottleRecord.parse(text)
    assert (record.previous, record.reason, record.by, record.time, record.plan, record.forced) == (
        None, "INC-1", "ops", "2026-12-01T00:00:00Z", "plan-1", None)
    # Written back in the current record schema, which results do not show.
    assert json.loads(record.text()) == dict(json.loads(text), schema=1)
    assert "schema" not in record.as_dict()
    # previous is always written (null: the pod had no limit); forced only when true.
    assert ThrottleRecord(reason="r").as_dict() == {"previous": None, "reason": "r"}
    assert ThrottleRecord(reason="r", forced=True).as_dict()["forced"] is True


def test_an_applied_record_keeps_the_pod_uid_under_its_stored_key():
    record = AppliedRecord(cpus="1", pod="virt-launcher-x", pod_uid="u-1", time="t")
    assert json.loads(record.text()) == {"cpus": "1", "pod": "virt-launcher-x", "podUID": "u-1", "time": "t", "schema": 1}
    assert AppliedRecord.parse(record.text()).pod_uid == "u-1"


@pytest.mark.parametrize("text", [None, "", "not json", "[1, 2]", "42", '"text"',
                                  json.dumps({"reason": "x" * MAX_CHARS}),
                                  '{"a": %s1%s}' % ("[" * (MAX_DEPTH + 1), "]" * (MAX_DEPTH + 1))])
def test_anything_that_is_not_a_record_reads_as_none(text):
    assert ThrottleRecord.parse(text) is None and AppliedRecord.parse(text) is None


def test_records_compare_by_content_not_by_their_texts_layout():
    assert same_record_text('{"reason": "a", "previous": "1"}', '{"previous":"1","reason":"a"}')
    assert not same_record_text('{"reason": "a"}', '{"reason": "b"}')
    assert same_record_text(None, None) and not same_record_text(None, '{"reason": "a"}')
    with pytest.raises(TypeError):
        ThrottleRecord(colour="red")
