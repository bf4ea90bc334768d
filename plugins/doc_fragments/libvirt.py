# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Connection options shared by the libvirt modules, as in community.libvirt.
    # With the action group every module of the platform belongs to.
    DOCUMENTATION = r"""
options:
  uri:
    description:
      - libvirt connection URI of the hypervisor.
      - One connection serves every domain of the task.
    type: str
    default: qemu:///system
  class_namespace:
    description:
      - XML namespace of the domain C(<metadata>) element that declares a VM's class, as
        C(<vm xmlns="NAMESPACE"><class>shared</class></vm>).
      - Pinned vCPUs or realtime vCPU scheduling make a domain C(dedicated) whatever it declares;
        a domain that declares nothing is C(shared).
    type: str
    default: https://overcommit.control/xmlns/vm/1
requirements:
  - libvirt-python on the host that runs the module
attributes:
  action_group:
    membership: [overcommit.control.libvirt]
"""
