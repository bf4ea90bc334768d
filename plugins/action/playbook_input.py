# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller side of overcommit.control.playbook_input: reads the run's
variables, its -e names and the inventory, and leaves every judgement to
plugin_utils.playbook_input."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.plugins.loader import lookup_loader
from ansible.utils.vars import load_extra_vars

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.plugin_utils import playbook_input

ARGUMENT_SPEC = dict(
    playbook=dict(type="str", required=True),
    variables=dict(type="dict", required=True),
    required=dict(type="list", elements="str", default=[]),
    one_of=dict(type="list", elements="list", default=[]),
    host_groups=dict(type="list", elements="dict", default=[]),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        spec = args["variables"]
        given = dict((name, self._templar.template(task_vars[name])) for name in spec if name in task_vars)
        typed = load_extra_vars(self._loader).keys()
        try:
            errors, values = playbook_input.check(args["playbook"], spec, given, typed, args["required"],
                                                  args["one_of"])
        except ValueRangeError as exc:
            result.update(failed=True, field=exc.field, msg="%s: %s" % (args["playbook"], exc))
            return result
        hosts_of = lookup_loader.get("ansible.builtin.inventory_hostnames", loader=self._loader, templar=self._templar)
        groups = task_vars.get("groups") or {}
        former_members = dict((group["formerly"], groups.get(group["formerly"]) or [])
                              for group in args["host_groups"] if group.get("formerly"))
        patterns, notes = playbook_input.host_patterns(args["playbook"], args["host_groups"], given, former_members)
        matched = dict((pattern, len(hosts_of.run([pattern], variables=task_vars)))
                       for pattern in set(patterns.values()) if pattern)
        errors.extend(playbook_input.empty_host_groups(args["playbook"], args["host_groups"], given, patterns,
                                                       matched))
        # `targets`: the host pattern of each group, which the playbook's later plays run on.
        result.update(changed=False, values=values, hosts=matched, targets=patterns)
        if notes:
            result["deprecations"] = [dict(msg=note, version="1.0.0", collection_name="overcommit.control")
                                      for note in notes]
        if errors:
            result.update(failed=True, errors=errors, msg="%s: %s" % (args["playbook"], "; ".join(errors)))
        else:
            result["msg"] = "%s: variables checked" % args["playbook"]
        return result
