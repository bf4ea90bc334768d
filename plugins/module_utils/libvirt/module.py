# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AnsibleModule of the collection's libvirt modules: the connection
option, the libvirt-python check, option checks that fail naming the field,
and one connection per task whose errors fail the task.

The libvirt client does not retry (libvirtd is local and answers or is
down), so there is no `retries` to report."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import pwd

from ansible.module_utils.basic import missing_required_lib
from ansible_collections.overcommit.control.plugins.module_utils.common.fleet import summary
from ansible_collections.overcommit.control.plugins.module_utils.common.module import PlatformModule
from ansible_collections.overcommit.control.plugins.module_utils.common.names import check_names
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.client import (
    HAS_LIBVIRT, LibvirtClient, LibvirtClientError, connection_argument_spec, is_local_uri)

# libvirt's error codes for a connection its access rules refused:
# VIR_ERR_AUTH_FAILED, VIR_ERR_AUTH_CANCELLED, VIR_ERR_AUTH_UNAVAILABLE.
ACCESS_CODES = (45, 79, 94)


def access_hint(message, code, user, uri="qemu:///system"):
    """What a user whom the local libvirtd refused lacks, in words, or "":
    the system socket refuses a user outside the libvirt group (Permission
    denied), polkit one it has no rule for (an authentication error). A
    remote URI's refusal (SSH's own) is not the local user's rights."""
    if not is_local_uri(uri):
        return ""
    if code in ACCESS_CODES or "Permission denied" in message or "authentication" in message.lower():
        return ("; user %s has no access to libvirt here: add it to the libvirt group, or allow it "
                "org.libvirt.unix.manage with a polkit rule (the collection's docs/privileges.md)" % user)
    return ""


def current_user():
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return "uid %d" % os.geteuid()


class LibvirtModule(PlatformModule):
    """argument_spec: the module's own options (the connection's are added).
    failed: what a failed task returns besides msg (e.g. an empty result list).
    name_fields: the options that are lists of domain names, checked
    (common.names) before any connection.
    libvirt_required: False for a module that talks to libvirt only on
    some options; it calls require_libvirt() itself before with_client."""

    client_errors = (LibvirtClientError,)

    def __init__(self, argument_spec, failed=None, name_fields=(), libvirt_required=True, **kwargs):
        spec = connection_argument_spec()
        spec.update(argument_spec)
        super(LibvirtModule, self).__init__(spec, failed, **kwargs)
        if libvirt_required:
            self.require_libvirt()
        self.checked(lambda params: check_names(params, name_fields))

    def require_libvirt(self, **failed):
        """The task fails when libvirt-python is missing; `failed` is added
        to what it returns."""
        if not HAS_LIBVIRT:
            self.fail_json(msg=missing_required_lib("libvirt-python"), **dict(self.failed, **failed))

    def connect(self, failed):
        """One connection to `uri`; a refused one fails the task."""
        try:
            return LibvirtClient(self.params["uri"])
        except LibvirtClientError as exc:
            self.fail_json(msg="cannot connect to %s: %s%s" % (self.params["uri"], exc,
                                                               access_hint(str(exc), exc.code, current_user(),
                                                                           self.params["uri"])),
                           **failed)

    def client_error_message(self, exc):
        """A libvirt error outside any one domain's work."""
        return "libvirt at %s: %s" % (self.params["uri"], exc)

    def exit_read(self, key, results, **extra):
        """The end of an info task: it fails naming every domain that could
        not be read (the others are still returned under `key`), else exits
        unchanged."""
        failure_msg = summary(results)["failure_msg"]
        if failure_msg:
            self.fail_json(msg=failure_msg, changed=False, **dict(extra, **{key: results}))
        self.exit_json(changed=False, **dict(extra, **{key: results}))
