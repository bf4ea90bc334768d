# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AnsibleModule of the collection's vSphere modules: the connection
options, the pyVmomi check, option checks that fail naming the field, and
one session per task whose errors fail the task."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.overcommit.control.plugins.module_utils.common.names import NameListError, check_names
from ansible_collections.overcommit.control.plugins.module_utils.common.retry import ReportsRetries
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.client import (
    HAS_PYVMOMI, VsphereClient, VsphereClientError, connection_argument_spec)
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.inventory import SelectorError


class VsphereModule(ReportsRetries, AnsibleModule):
    """argument_spec: the module's own options (the connection's are added).
    field_errors: the module's exceptions that name a field (exc.field);
    a selector that matches nothing is one for every module.
    name_fields: the options that are lists of object names, checked
    (common.names) before any connection."""

    def __init__(self, argument_spec, field_errors=(), name_fields=(), **kwargs):
        spec = connection_argument_spec()
        spec.update(argument_spec)
        super(VsphereModule, self).__init__(argument_spec=spec, supports_check_mode=True, **kwargs)
        self.field_errors = (SelectorError, NameListError) + tuple(field_errors)
        if not HAS_PYVMOMI:
            self.fail_json(msg=missing_required_lib("pyVmomi"))
        self.checked(lambda params: check_names(params, name_fields))

    def checked(self, check):
        """check(params), or the task fails naming the field before any connection."""
        try:
            return check(self.params)
        except self.field_errors as exc:
            self.fail_json(msg=str(exc), field=exc.field)

    def with_client(self, work):
        """work(client) in one session, logged out afterwards; its errors fail the task."""
        params, client = self.params, None
        try:
            client = VsphereClient(params["hostname"], params["username"], params["password"], params["port"],
                                   params["validate_certs"])
            self.retry_log = client.retry_log
            return work(client)
        except self.field_errors as exc:
            self.fail_json(msg=str(exc), field=exc.field)
        except VsphereClientError as exc:
            self.fail_json(msg=str(exc))
        finally:
            if client is not None:
                client.close()
