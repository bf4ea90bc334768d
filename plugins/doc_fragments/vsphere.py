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
requirements:
  - pyVmomi on the host that runs the module
attributes:
  action_group:
    membership: [overcommit.control.vsphere]
"""
