# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The policy's rules, one file each. A rule declares its own PARAMETERS
(and which of them are INTEGERS), whether it needs the VMs' state
(NEEDS_VM_STATE: else it runs on every host), and apply(cycle, scene),
which proposes actions with their reasons through the cycle
(cycle.propose) and notes why it did not act (cycle.notes). Adding a rule
is a new file here and its place in RULES."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.domain.policy.rules import (
    contain, credits, gate, placement, relax, weight)

# The rules a cycle runs on each host, in this order: the gate looks at the
# host alone, the credits hold burstable VMs before contain judges who is a
# culprit, placement counts what contain could not settle, relax lets go last.
RULES = (gate, credits, contain, placement, relax)
# Every rule's file, for its parameters: also the rungs a rule calls (the
# weight is contain's first rung).
ALL = RULES + (weight,)
