# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Connection options shared by the vSphere modules, named and defaulted as in community.vmware.
    # With the action group every module of the platform belongs to.
    DOCUMENTATION = r"""
options:
  hostname:
    description:
      - The hostname or IP address of the vCenter Server or ESXi host.
      - If not set in the task, the value of the environment variable E(VMWARE_HOST) is used.
      - One login serves every object of the task.
    type: str
  username:
    description:
      - The user name to log in with.
      - If not set in the task, the value of the environment variable E(VMWARE_USER) is used.
    type: str
    aliases: [admin, user]
  password:
    description:
      - The password of O(username).
      - If not set in the task, the value of the environment variable E(VMWARE_PASSWORD) is used.
    type: str
    aliases: [pass, pwd]
  port:
    description:
      - The HTTPS port of the server.
      - If not set in the task, the value of the environment variable E(VMWARE_PORT) is used.
    type: int
    default: 443
  validate_certs:
    description:
      - Whether the server's TLS certificate is verified. Set V(false) only for servers with self-signed
        certificates you trust.
      - If not set in the task, the value of the environment variable E(VMWARE_VALIDATE_CERTS) is used.
    type: bool
    default: true
  request_timeout:
    description:
      - Seconds one request may take, to connect and to be answered; a server (or proxy) that does not answer
        in that time fails the request with a message naming this option, instead of hanging the task.
      - A read that timed out is tried again within O(retry_seconds), as other transient faults are.
      - Waiting for reconfigure tasks asks vCenter for news in slices shorter than this, up to 600 seconds in all.
      - community.vmware has no such option.
    type: float
    default: 30.0
  retry_seconds:
    description:
      - How long, in seconds, the login and every read are tried again after a transient fault (a dropped,
        reset, refused or timed out connection, or vCenter's C(SystemError), C(HostCommunication) or
        C(Timedout)), with jittered exponential back-off.
      - A call that starts a task (a reconfigure) is sent again only when vCenter answered with a transient
        fault or C(TaskInProgress) instead of a task, so that no change is ever made twice.
      - When a call was tried again the result has C(retries) (C(attempts), C(waited_seconds) and the faults
        met as C(errors)); a fault that outlasts this time fails the object or the task with a message naming
        it and how long it was tried.
      - V(0) tries every call once.
    type: float
    default: 30.0
requirements:
  - pyVmomi on the host that runs the module
notes:
  - O(request_timeout) not above V(0) fails the task naming the option before any connection.
attributes:
  action_group:
    membership: [overcommit.control.vsphere]
"""
