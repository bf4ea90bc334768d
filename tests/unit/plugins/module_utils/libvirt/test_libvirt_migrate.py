"""libvirt_migrate's pure parts: its options, checked before any connection,
its report lines, and what a move must carry (the collection's metadata,
whatever prefixes libvirt writes). What may move is judged in
domain/migration.py (test_domain_migration.py); the moves themselves run on
the lab's fleet (tests/integration/fleet/test_fleet_migrate.py)."""

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml, migrate

REQUEST = {"domains": ["batch-3"], "target_uri": "qemu+ssh://migrate@hv-2/system", "floor_fraction": 0.25,
           "max_vcpu_ratio": None}


def test_a_request_is_checked_and_normalised():
    request = migrate.check_request(dict(REQUEST, target_uri=" qemu+tls://hv-2/system "), True)
    assert request["target_uri"] == "qemu+tls://hv-2/system" and request["check_mode"] is True
    assert request["floor_fraction"] == 0.25 and request["max_vcpu_ratio"] is None


@pytest.mark.parametrize("field,value", [
    ("domains", []),
    ("target_uri", "hv-2"),
    ("target_uri", ""),
    ("target_uri", "qemu:///system"),  # this host itself
    ("target_uri", "qemu+ssh://localhost/system"),
    ("floor_fraction", 1.5),
    ("floor_fraction", -0.1),
    ("floor_fraction", True),
    ("max_vcpu_ratio", 0),
    ("max_vcpu_ratio", "many"),
])
def test_bad_options_are_refused_naming_the_field(field, value):
    with pytest.raises(ValueRangeError) as refused:
        migrate.check_request(dict(REQUEST, **{field: value}), False)
    assert refused.value.field == field


def test_the_report_says_what_moved_what_would_and_why_not():
    moved = {"name": "batch-3", "changed": True, "source": "hv-1", "target": "hv-2"}
    assert migrate.report_line(moved) == "batch-3: moved from hv-1 to hv-2, records carried"
    assert migrate.report_line(moved, check_mode=True) == "batch-3: would move from hv-1 to hv-2, records carried"
    refused = {"name": "web-1", "failed": True, "refused": True, "msg": "no room on hv-2"}
    assert migrate.report_line(refused) == "web-1: not moved: no room on hv-2"
    failed = {"name": "web-2", "failed": True, "msg": "not moved (it still runs on hv-1): timed out"}
    assert migrate.report_line(failed) == "web-2: failed: not moved (it still runs on hv-1): timed out"
    already = {"name": "batch-4", "changed": False, "already": True, "msg": "already on hv-2, not on hv-1: nothing to move"}
    assert migrate.report_line(already) == "batch-4: already on hv-2, not on hv-1: nothing to move"


def domain(metadata):
    return "<domain type='kvm'><name>batch-3</name><metadata>%s</metadata><vcpu>2</vcpu></domain>" % metadata


def test_what_a_move_carries_is_the_collections_metadata_whatever_the_prefixes():
    ours = ('<oc:vm xmlns:oc="%s"><oc:class>shared</oc:class></oc:vm>'
            '<overcommit:throttle xmlns:overcommit="%s" reason="INC-1" cpus="0.5"/>'
            % (domain_xml.CLASS_NAMESPACE, domain_xml.THROTTLE_NAMESPACE))
    foreign = '<app:owner xmlns:app="https://example.com/app/1">team-a</app:owner>'
    carried = domain_xml.collection_metadata(domain(ours + foreign))
    assert set(carried) == {domain_xml.CLASS_NAMESPACE, domain_xml.THROTTLE_NAMESPACE}
    # The same elements under other prefixes (as another libvirtd may write them) are the same records.
    renamed = ours.replace("xmlns:oc=", "xmlns:ns0=").replace("<oc:", "<ns0:").replace("</oc:", "</ns0:")
    assert domain_xml.collection_metadata(domain(renamed)) == carried
    # A changed record is not.
    assert domain_xml.collection_metadata(domain(ours.replace("INC-1", "INC-2"))) != carried
    assert domain_xml.collection_metadata("<domain><name>x</name></domain>") == {}
