# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shape every platform's module base shares (libvirt/module.py,
k8s/module.py, vsphere/module.py): options checked before any connection,
failing naming the field; then one client per task, closed afterwards,
whose errors fail the task. A platform's base says only how it connects
and which errors its client raises."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError


class PlatformModule(AnsibleModule):
    """failed: what a failed task returns besides msg (e.g. an empty result
    list). A platform's base sets client_errors and implements connect()."""

    client_errors = ()

    def __init__(self, argument_spec, failed=None, **kwargs):
        super(PlatformModule, self).__init__(argument_spec=argument_spec, supports_check_mode=True, **kwargs)
        self.failed = failed or {}

    def checked(self, check):
        """check(params), or the task fails naming the field before any connection."""
        try:
            return check(self.params)
        except ValueRangeError as exc:
            self.fail_json(msg=str(exc), field=exc.field, **self.failed)

    def connect(self, failed):
        """The platform's client for this task (or the task fails, returning `failed`)."""
        raise NotImplementedError

    def client_error_message(self, exc):
        return str(exc)

    def with_client(self, work, refusals=(), **failed):
        """work(client) over one connection, closed afterwards. A client
        error, a value out of range (naming the field) or one of `refusals`
        (the work's own reasons to stop) fails the task; `failed` is added
        to what it returns."""
        failed = dict(self.failed, **failed)
        client = None
        try:
            client = self.connect(failed)
            return work(client)
        except ValueRangeError as exc:
            self.fail_json(msg=str(exc), field=exc.field, **failed)
        except self.client_errors as exc:
            self.fail_json(msg=self.client_error_message(exc), **failed)
        except tuple(refusals) as exc:
            self.fail_json(msg=str(exc), **failed)
        finally:
            if client is not None:
                client.close()
