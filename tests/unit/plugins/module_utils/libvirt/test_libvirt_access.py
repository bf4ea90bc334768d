"""What a user whom libvirt refuses is told: the right it lacks."""

from ansible_collections.overcommit.control.plugins.module_utils.libvirt.module import access_hint


def test_a_refused_connection_names_the_group_or_polkit_rule_the_user_lacks():
    socket = "Failed to connect socket to '/var/run/libvirt/libvirt-sock': Permission denied"
    polkit = "authentication unavailable: no polkit agent available to authenticate action 'org.libvirt.unix.manage'"
    for message, code in ((socket, 38), (polkit, 94), ("authentication failed", 45)):
        hint = access_hint(message, code, "ops")
        assert "user ops has no access to libvirt here" in hint and "libvirt group" in hint, message
        assert "org.libvirt.unix.manage" in hint
    # Anything else (libvirtd down) is not a matter of rights.
    assert access_hint("Failed to connect socket to '/var/run/libvirt/libvirt-sock': No such file or directory",
                       38, "ops") == ""


def test_a_remote_uris_refusal_is_not_the_local_users_rights():
    assert access_hint("Permission denied (publickey)", 38, "ops", "qemu+ssh://hv-7/system") == ""
    assert access_hint("Permission denied", 38, "ops", "qemu:///system")
