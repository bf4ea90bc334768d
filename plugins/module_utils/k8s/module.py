# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AnsibleModule of the collection's Kubernetes modules: the connection
options (their secrets kept out of every output), the kubernetes library
check, option checks that fail naming the field, and one client per task
whose API errors fail the task."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.basic import missing_required_lib
from ansible_collections.overcommit.control.plugins.module_utils.common.module import PlatformModule
from ansible_collections.overcommit.control.plugins.module_utils.common.names import check_names
from ansible_collections.overcommit.control.plugins.module_utils.common.retry import ReportsRetries
from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import (
    HAS_KUBERNETES, K8sClient, K8sClientError, auth_argument_spec, check_connection_options, connection_secrets)


class K8sModule(ReportsRetries, PlatformModule):
    """argument_spec: the module's own options (the connection's are added).
    failed: what a failed task returns besides msg (e.g. an empty result list).
    name_fields: the options that are lists of object names, checked
    (common.names) before any API call."""

    client_errors = (K8sClientError,)

    def __init__(self, argument_spec, failed=None, name_fields=(), **kwargs):
        spec = auth_argument_spec()
        spec.update(argument_spec)
        super(K8sModule, self).__init__(spec, failed, **kwargs)
        # Again with the values taken from K8S_AUTH_* (a proxy URL's password).
        self.no_log_values.update(connection_secrets(self.params))
        if not HAS_KUBERNETES:
            self.fail_json(msg=missing_required_lib("kubernetes"))
        self.checked(check_connection_options)
        self.checked(lambda params: check_names(params, name_fields))

    def _load_params(self):
        super(K8sModule, self)._load_params()
        # Before the options are validated: a validation failure returns
        # them all (invocation.module_args), a dict kubeconfig included.
        self.no_log_values.update(connection_secrets(self.params))
        # The options the task set, before defaults fill in the others: for
        # an option whose null means something else than leaving it out.
        self.given_options = frozenset(self.params)

    def given(self, option):
        """Whether the task set `option` at all, a null value included."""
        return option in self.given_options

    def connect(self, failed):
        """One client; in check mode every write is a server-side dry run."""
        client = K8sClient(self.params, dry_run=self.check_mode)
        self.retry_log = client.retry_log
        return client
