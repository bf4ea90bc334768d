"""libvirt_vm_class on the lab's real libvirtd: a fleet of guests classified
in one task, read back by libvirt_cputune_info, honoured by libvirt_cputune,
then put back as the lab defined them. Uses the running idle guests and a
shut-off busy guest (never started here)."""

import xml.etree.ElementTree as ET

import libvirt
import pytest

from domain_records import element_of
from run_module import run_module

pytestmark = pytest.mark.xdist_group("libvirt")

HOST = "lab-hypervisor"
GUESTS = ("oc-lab-idle-1", "oc-lab-idle-4", "oc-lab-busy-2")
CLASS_NS = "https://overcommit.control/xmlns/vm/1"


def class_elements(libvirt_conn, name):
    """The class element of a domain as libvirt stores it, read without the
    collection: {definition: (class, baseline text)} for its config and, when
    it runs, its live definition."""
    out = {}
    for target, text in element_of(libvirt_conn.lookupByName(name), CLASS_NS).items():
        root = ET.fromstring(text) if text else None
        # libvirt hands the element back without its namespace.
        out[target] = None if root is None else (root.findtext("class"), root.findtext("baseline"))
    return out


def classes_of(names):
    info = run_module("libvirt_cputune_info", {"domains": list(names)}, host=HOST)
    return dict((d["name"], (d["declared_class"], d.get("baseline_cpus"))) for d in info["domains"])


@pytest.fixture
def lab_classes():
    """The guests' classes as the lab defined them, put back afterwards."""
    before = classes_of(GUESTS)
    yield before
    restored = run_module("libvirt_vm_class", {
        "classes": dict((name, cls) for name, (cls, _baseline) in before.items()),
        "baselines": dict((name, baseline) for name, (cls, baseline) in before.items() if baseline is not None)},
        host=HOST)
    assert not restored.get("failed"), restored
    assert classes_of(GUESTS) == before


def test_a_fleet_is_classified_in_one_task_and_the_brake_honours_the_class(lab_classes, libvirt_conn):
    wanted = {"classes": {"oc-lab-idle-4": "dedicated", "oc-lab-idle-1": "burstable", "oc-lab-busy-2": "shared"},
              "baselines": {"oc-lab-idle-1": 0.5}}
    checked = run_module("libvirt_vm_class", wanted, host=HOST, check=True)
    assert checked["changed"] and classes_of(GUESTS) == lab_classes, checked
    result = run_module("libvirt_vm_class", wanted, host=HOST)
    assert result["changed"], result
    assert "oc-lab-idle-1: burstable (baseline 0.5 CPU), was" in "\n".join(result["summary"]["report"])
    assert classes_of(GUESTS) == {"oc-lab-idle-4": ("dedicated", None), "oc-lab-idle-1": ("burstable", 0.5),
                                  "oc-lab-busy-2": ("shared", None)}
    # What libvirt itself stores, in each definition the module says it wrote.
    assert class_elements(libvirt_conn, "oc-lab-idle-4") == {"config": ("dedicated", None), "live": ("dedicated", None)}
    assert class_elements(libvirt_conn, "oc-lab-idle-1") == {"config": ("burstable", "0.5"), "live": ("burstable", "0.5")}
    assert class_elements(libvirt_conn, "oc-lab-busy-2")["config"] == ("shared", None)
    # Running guests get it live and in their config; the shut-off one in its config.
    by_name = dict((d["name"], d) for d in result["domains"])
    assert sorted(by_name["oc-lab-idle-4"]["after"]) == ["config", "live"]
    assert sorted(by_name["oc-lab-busy-2"]["after"]) == ["config"]
    again = run_module("libvirt_vm_class", wanted, host=HOST)
    assert not again["changed"], again

    # The brake reads the class: a dedicated guest is not throttled unless forced.
    refused = run_module("libvirt_cputune", {"domains": ["oc-lab-idle-4"], "cpus": 0.5, "reason": "test"}, host=HOST)
    assert refused["failed"] and "its class is dedicated" in refused["domains"][0]["msg"], refused
    assert run_module("libvirt_cputune_info", {"domains": ["oc-lab-idle-4"]}, host=HOST)["domains"][0]["cap_cpus"] is None
    live = libvirt_conn.lookupByName("oc-lab-idle-4").schedulerParametersFlags(libvirt.VIR_DOMAIN_AFFECT_LIVE)
    assert live.get("global_quota", -1) <= 0 and live.get("vcpu_quota", -1) <= 0, live


def test_bad_classes_are_refused_before_anything_is_read(lab_classes):
    for args, field in (({"classes": {"oc-lab-idle-1": "gold"}}, "classes.oc-lab-idle-1"),
                        ({"classes": {"oc-lab-idle-1": "shared"}, "baselines": {"oc-lab-idle-1": 0.5}},
                         "baselines.oc-lab-idle-1"),
                        ({"classes": {" oc-lab-idle-1": "shared"}}, "classes")):
        result = run_module("libvirt_vm_class", args, host=HOST)
        assert result["failed"] and result.get("field") == field, result
    # A baseline at or above the domain's vCPUs fails that domain alone.
    result = run_module("libvirt_vm_class", {"classes": {"oc-lab-idle-1": "burstable", "oc-lab-idle-4": "shared"},
                                             "baselines": {"oc-lab-idle-1": 8}}, host=HOST)
    by_name = dict((d["name"], d) for d in result["domains"])
    assert by_name["oc-lab-idle-1"]["failed"] and "baselines.oc-lab-idle-1" in by_name["oc-lab-idle-1"]["msg"]
    assert not by_name["oc-lab-idle-4"].get("failed")
    assert classes_of(["oc-lab-idle-1"])["oc-lab-idle-1"] == lab_classes["oc-lab-idle-1"]
