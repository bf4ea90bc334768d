# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AnsibleModule of the collection's vSphere modules: the connection
options, the pyVmomi check, option checks that fail naming the field, and
one session per task whose errors fail the task."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.basic import missing_required_lib
from ansible_collections.overcommit.control.plugins.module_utils.common.module import PlatformModule
from ansible_collections.overcommit.control.plugins.module_utils.common.names import check_names
from ansible_collections.overcommit.control.plugins.module_utils.common.retry import ReportsRetries
from ansible_collections.overcommit.control.plugins.module_utils.vsphere.client import (
    HAS_PYVMOMI, VsphereClient, VsphereClientError, check_connection_options, connection_argument_spec)


class VsphereModule(ReportsRetries, PlatformModule):
    """argument_spec: the module's own options (the connection's are added).
    name_fields: the options that are lists of object names, checked
    (common.names) before any connection."""

    client_errors = (VsphereClientError,)

    def __init__(self, argument_spec, name_fields=(), **kwargs):
        spec = connection_argument_spec()
        spec.update(argument_spec)
        super(VsphereModule, self).__init__(spec, **kwargs)
        if not HAS_PYVMOMI:
            self.fail_json(msg=missing_required_lib("pyVmomi"))
        self.checked(check_connection_options)
        self.checked(lambda params: check_names(params, name_fields))

    def connect(self, failed):
        """One session, logged out afterwards."""
        params = self.params
        client = VsphereClient(params["hostname"], params["username"], params["password"], params["port"],
                               params["validate_certs"], retry_seconds=params["retry_seconds"],
                               request_timeout=params["request_timeout"])
        self.retry_log = client.retry_log
        return client
