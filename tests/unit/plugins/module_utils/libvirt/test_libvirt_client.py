"""When a running domain started: libvirt's API has no start time, so the
client reads its QEMU process's, where the hypervisor is this machine."""

from ansible_collections.overcommit.control.plugins.module_utils.libvirt.client import process_start, qemu_pid_file

PROC_STAT = "cpu  10 0 10 100\nbtime 1700000000\nprocesses 42\n"


def test_a_process_start_is_boot_time_plus_its_start_ticks_even_with_spaces_and_parentheses_in_its_name():
    fields = ["S"] + ["0"] * 18 + ["12345"] + ["0"] * 30
    stat = "4242 (qemu-system-x86 (oc lab)) " + " ".join(fields)
    assert process_start(stat, PROC_STAT, 100) == 1700000123.5
    assert process_start("4242 (qemu)", PROC_STAT, 100) is None
    assert process_start(stat, "cpu 1 2 3\n", 100) is None


def test_only_a_hypervisor_on_this_machine_has_a_pid_file_to_read(monkeypatch):
    assert qemu_pid_file("qemu:///system", "web-17") == "/run/libvirt/qemu/web-17.pid"
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    assert qemu_pid_file("qemu:///session", "web-17") == "/run/user/1000/libvirt/qemu/run/web-17.pid"
    for uri in ("qemu+ssh://hv-7/system", "qemu:///embed?root=/tmp/x", "test:///default"):
        assert qemu_pid_file(uri, "web-17") is None, uri
