# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a VM's policy state says of the brake the policy put on it (its
cap, its demoted weight, their direction), shared by the core and the rules. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


TIGHTEN = "tighten"

LOOSEN = "loosen"

# State keys a brake of ours keeps (a cap, a demoted weight); dropped
# together when the exact restore takes both away.
CAP_KEYS = ("cap", "rule", "capped_at", "changed_at", "direction", "calm_since", "released", "idle_seen",
            "weight", "weight_waits")
