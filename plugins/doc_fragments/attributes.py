# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # What every module of the collection supports; a module adds details.
    # Extend together with ansible.builtin.action_common_attributes (and .actiongroups).
    DOCUMENTATION = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
"""

    # Modules that only read.
    INFO_MODULE = r"""
attributes:
  check_mode:
    support: full
    details: Reads only; check mode changes nothing either.
  diff_mode:
    support: none
  platform:
    platforms: posix
"""
