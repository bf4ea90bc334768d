#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: playbook_input
short_description: Check the variables a playbook is run with before it changes anything
version_added: 0.1.1
description:
  - Each playbook of the collection runs this first, on C(localhost). It checks every variable the run gives
    against the kind the playbook reads it as, and fails, naming the variable as the user typed it and the values
    it allows, in one line per problem, before any host is touched.
  - Refuses input that is valid in form but does nothing, such as an empty list of names or an empty reason.
  - A variable passed with C(-e) that the playbook does not read, but whose name is close to one it does (C(domain)
    for C(domains), C(scpoe) for C(scope)), fails the run naming both. Other unknown names, and names starting
    with C(ansible_), are left alone.
  - Fails when a host group the run needs matches no host of the inventory, naming the group and the variable
    that chooses it.
  - An action plugin; it runs on the controller and needs no connection.
author:
  - overcommit.control maintainers (@overcommit)
extends_documentation_fragment:
  - overcommit.control.attributes
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Checks only; it changes nothing in any mode.
  diff_mode:
    support: none
options:
  playbook:
    description: The playbook's name, for the messages.
    type: str
    required: true
  variables:
    description:
      - Every variable the playbook reads, each with its kind, or a mapping with C(kind), C(choices) and
        C(about) (what the variable is, for the messages that ask for it).
      - "Kinds: C(names) (a non-empty list of distinct names), C(cpus) (a number of CPUs above 0: V(2), V(0.5)
        or V(500m), the same rule on every platform), C(text) (non-empty), C(bool), C(count) (a whole number, at
        least 1), C(seconds) (above 0), C(share) (0 to 1), C(mapping), C(choice) (with C(choices)), C(hosts) (a
        group or host pattern) and C(any) (read as given; the role checks it)."
    type: dict
    required: true
  required:
    description: Variables the run must give.
    type: list
    elements: str
    default: []
  one_of:
    description: Lists of variables of which the run must give at least one each.
    type: list
    elements: list
    default: []
  host_groups:
    description:
      - The host groups the run acts on, each a mapping of C(variable) (the variable that chooses the group),
        C(default) (the group when it is not given) and optionally C(when) (the group is needed only when one of
        these variables is given).
    type: list
    elements: dict
    default: []
"""

EXAMPLES = r"""
- name: Check the incident variables before anything changes
  overcommit.control.playbook_input:
    playbook: throttle.yml
    variables:
      domains: names
      cpus: cpus
      reason: text
      scope: {kind: choice, choices: [domain, vcpu]}
      target_hosts: hosts
    required: [cpus, reason]
    one_of: [[domains]]
    host_groups:
      - variable: target_hosts
        default: hypervisors
"""

RETURN = r"""
values:
  description: The variables given, as checked (a number of CPUs as a number, V(500m) as V(0.5)).
  returned: always
  type: dict
  sample: {"cpus": 0.5, "domains": ["web-17"], "reason": "INC-4211"}
hosts:
  description: The number of hosts each host pattern the run needs matches.
  returned: always
  type: dict
  sample: {"hypervisors": 12}
errors:
  description: One line per problem found.
  returned: failed
  type: list
  elements: str
  sample: ["domain is not a variable of throttle.yml: did you mean domains?"]
"""
