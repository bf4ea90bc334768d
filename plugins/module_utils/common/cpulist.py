# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CPU lists as the kernel and libvirt write them. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def cpu_ids(text):
    """Sorted CPU ids of a CPU list: the kernel's "0-3,8,10-11", or
    libvirt's cpuset, which may also exclude ("0-3,^2"). Raises ValueError
    for anything else."""
    ids, excluded = set(), set()
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        into = excluded if part.startswith("^") else ids
        low, _sep, high = part.lstrip("^").partition("-")
        into.update(range(int(low), int(high or low) + 1))
    return sorted(ids - excluded)
