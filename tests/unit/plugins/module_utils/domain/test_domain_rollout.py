import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.domain import rollout

PRESSURE = {"pressure": {"cpu": {"some": {"avg10": 12.5}}}, "cpus": 2, "procs_running": 3}
DOMAINS = {"domains": [{"name": "web-1", "usage": {"steal_cpus": 0.4}}, {"name": "db-1", "usage": {"steal_cpus": 0.01}},
                       {"name": "off-1", "active": False}]}

CONFIG = {"changed": True, "kubevirt": {"namespace": "kubevirt", "name": "kubevirt"},
          "before": {"cpu_allocation_ratio": None, "memory_overcommit": 120, "auto_cpu_limit_namespace_selector": None,
                     "vm_rollout_strategy": "Stage"},
          "after": {"cpu_allocation_ratio": 8, "memory_overcommit": 150, "auto_cpu_limit_namespace_selector": None,
                    "vm_rollout_strategy": "Stage"}}
VM_BEFORE = {"class": "shared", "cpu_request": "500m", "cpu_limit": None, "dedicated_cpu_placement": False,
             "memory_guest": "1Gi", "memory_request": None, "memory_limit": "2Gi", "balloon": None}
VMS = {"results": [
    {"changed": True, "invocation": {"module_args": {"prefix": "example.com/"}}, "vms": [
        {"name": "tenant-a/web-1", "changed": True, "before": VM_BEFORE,
         "after": dict(VM_BEFORE, **{"class": "burstable", "cpu_request": None, "cpu_limit": "2",
                                     "memory_request": "512Mi", "balloon": False})},
        {"name": "tenant-a/web-2", "changed": False, "before": VM_BEFORE, "after": VM_BEFORE}]},
    {"skipped": True}]}
CLASSES = {"changed": True, "invocation": {"module_args": {"uri": "qemu:///system"}}, "domains": [
    {"name": "web-1", "changed": True, "before": {"live": {"class": "burstable", "baseline": 0.5},
                                                  "config": {"class": None, "baseline": None}},
     "after": {"live": {"class": "shared", "baseline": None}, "config": {"class": "shared", "baseline": None}}},
    {"name": "db-1", "changed": False, "before": {"config": {"class": "dedicated", "baseline": None}}}]}
RESERVATIONS = {"changed": True, "invocation": {"module_args": {"attribute": "example.reservation"}}, "vms": [
    {"name": "node-1", "uuid": "u-1", "changed": True,
     "before": {"cpu": {"reservation": 0, "limit": -1, "shares_level": "normal", "shares": 1000}, "record": None},
     "after": {"cpu": {"reservation": 1000, "limit": -1, "shares_level": "normal", "shares": 1000}}},
    {"name": "node-2", "uuid": "u-2", "changed": True,
     "before": {"cpu": {"reservation": 500, "limit": -1, "shares_level": "custom", "shares": 3000},
                "memory": {"reservation": 64, "limit": -1, "shares_level": "normal", "shares": 640},
                "memory_reservation_locked_to_max": False, "record": {"v": 1, "prior": {"cpu.reservation": 0}}},
     "after": {"cpu": {"reservation": 1000, "limit": -1, "shares_level": "high", "shares": 2000},
               "memory": {"reservation": 64, "limit": -1, "shares_level": "normal", "shares": 640},
               "memory_reservation_locked_to_max": False}},
    {"name": "node-3", "uuid": "u-3", "changed": False, "failed": True, "msg": "changed meanwhile"}]}
APPLIED = {"kubevirt_config": CONFIG, "kubevirt_vms": VMS, "libvirt_classes": CLASSES,
           "vsphere_reservations": RESERVATIONS}


def test_thresholds_default_to_no_failed_object_and_name_a_bad_one():
    assert rollout.check_thresholds(None) == {"max_cpu_pressure": None, "max_run_queue_per_cpu": None,
                                              "max_steal_cpus": None, "max_failed": 0}
    assert rollout.check_thresholds({"max_steal_cpus": "0.5", "max_failed": 2.0})["max_steal_cpus"] == 0.5
    for bad, field in (({"max_cpu": 5}, "wave.max_cpu"), ({"max_steal_cpus": -1}, "wave.max_steal_cpus"),
                       ({"max_cpu_pressure": True}, "wave.max_cpu_pressure"),
                       ({"max_failed": "some"}, "wave.max_failed"), ([1], "wave")):
        with pytest.raises(ValueRangeError) as error:
            rollout.check_thresholds(bad, "wave")
        assert error.value.field == field


def test_a_unit_within_every_threshold_is_healthy():
    verdict = rollout.health({"kubevirt_vms": VMS}, PRESSURE, DOMAINS, {
        "max_cpu_pressure": 20, "max_run_queue_per_cpu": 2, "max_steal_cpus": 0.5})
    assert verdict["healthy"] and verdict["reasons"] == []
    assert verdict["signals"] == {"failed": 0, "cpu_pressure": 12.5, "run_queue_per_cpu": 1.5,
                                  "steal_cpus": {"web-1": 0.4, "db-1": 0.01}}


def test_each_threshold_crossed_is_a_reason():
    verdict = rollout.health(APPLIED, PRESSURE, DOMAINS, {
        "max_cpu_pressure": 10, "max_run_queue_per_cpu": 1, "max_steal_cpus": 0.1})
    assert not verdict["healthy"]
    assert verdict["reasons"] == [
        "1 object(s) failed, more than 0: vsphere_reservations: node-3: changed meanwhile",
        "CPU pressure 12.5 % is above 10 %", "1.50 runnable tasks per CPU is above 1",
        "web-1 steals 0.40 CPU, above 0.1"]
    # A run queue of 0 per CPU is a threshold no host meets: the reader itself runs.
    assert not rollout.health({}, PRESSURE, None, {"max_run_queue_per_cpu": 0})["healthy"]
    assert rollout.health(APPLIED, PRESSURE, DOMAINS, {"max_failed": 1})["healthy"]


def test_a_failed_task_without_objects_counts_and_unread_pressure_is_unhealthy_when_checked():
    applied = {"kubevirt_config": {"failed": True, "msg": "no KubeVirt CR"}, "kubevirt_vms": {"results": []}}
    assert rollout.failures(applied) == ["kubevirt_config: no KubeVirt CR"]
    assert rollout.health({}, {"failed": True, "msg": "no PSI"}, None, {})["healthy"]
    verdict = rollout.health({}, {"failed": True, "msg": "no PSI"}, None, {"max_cpu_pressure": 50})
    assert verdict["reasons"] == ["the host's pressure could not be read: no PSI"]
    assert rollout.health({}, {"skipped": True}, {"skipped": True}, {})["healthy"]


def test_undo_puts_back_exactly_what_the_wave_changed():
    undo = rollout.undo(APPLIED)
    assert undo["kubevirt_config"] == {"namespace": "kubevirt", "name": "kubevirt", "memory_overcommit": 120,
                                       "clear": ["cpu_allocation_ratio"]}
    assert undo["kubevirt_vms"] == [{"namespace": "tenant-a", "names": ["web-1"], "force": True,
                                     "prefix": "example.com/", "vm_class": "shared", "cpu_request": "500m",
                                     "cpu_limit": "none", "memory_request": "none"}]
    assert undo["notes"] == ["tenant-a/web-1: balloon was not set before and cannot be removed; it stays False"]
    assert undo["libvirt_classes"] == [
        {"apply": "config", "classes": {"web-1": None}, "uri": "qemu:///system"},
        {"apply": "live", "classes": {"web-1": "burstable"}, "baselines": {"web-1": 0.5}, "uri": "qemu:///system"}]
    assert undo["vsphere_restore"] == {"uuids": ["u-1"], "state": "restored", "attribute": "example.reservation"}
    assert undo["vsphere_present"] == [{"uuids": ["u-2"], "cpu": {"reservation": 500, "shares": 3000},
                                        "attribute": "example.reservation"}]
    assert not undo["empty"]
    assert undo["lines"][0] == "KubeVirt CR kubevirt/kubevirt: cpu_allocation_ratio back to unset, memory_overcommit back to 120"
    assert "vSphere VM node-1: restored from its record" in undo["lines"]
    assert "libvirt domain web-1: class back to none (config), burstable with baseline 0.5 CPU (live)" in undo["lines"]


def test_nothing_changed_is_nothing_to_undo():
    unchanged = {"kubevirt_config": dict(CONFIG, changed=False), "kubevirt_vms": {"skipped": True},
                 "libvirt_classes": {}, "vsphere_reservations": {"vms": [RESERVATIONS["vms"][2]]}}
    undo = rollout.undo(unchanged)
    assert undo["empty"] and undo["lines"] == [] and undo["kubevirt_vms"] == []
    assert rollout.undo(None)["empty"]


def test_a_class_label_written_alone_is_noted_not_guessed():
    vms = {"vms": [{"name": "t/vm", "changed": True, "before": VM_BEFORE, "after": VM_BEFORE}]}
    undo = rollout.undo({"kubevirt_vms": vms})
    assert undo["kubevirt_vms"] == [] and "only its class label was written" in undo["notes"][0]


def test_changes_say_per_object_what_moved():
    lines = rollout.changes(APPLIED)
    assert lines[0] == "KubeVirt CR kubevirt/kubevirt: cpu_allocation_ratio None -> 8, memory_overcommit 120 -> 150"
    assert "KubeVirt VM tenant-a/web-1: balloon None -> False, class shared -> burstable, cpu_limit None -> 2, " \
           "cpu_request 500m -> None, memory_request None -> 512Mi" in lines
    assert "vSphere VM node-2: cpu.reservation 500 -> 1000, cpu.shares 3000 -> 2000, cpu.shares_level custom -> high" in lines
    assert "libvirt domain web-1: config.baseline None -> None" not in lines and len(lines) == 5
