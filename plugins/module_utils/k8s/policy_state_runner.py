# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What kubevirt_policy_state and node_policy_state share: one object read,
its policy state and kill switch written (metadata.py plans each patch), and
its result, whatever befalls it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.module_utils.common.errors import PER_OBJECT
from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import K8sClientError


def write_one(client, request, kind, key, wanted, path, write):
    """The result of writing `wanted` ({state, paused}) on the object `key`
    at `path`: write(current) writes and says whether anything changed. An
    object that is not there fails, or is skipped with missing=ignore; a
    refusal or API error fails this object alone."""
    result = {"name": key, "changed": False}
    try:
        try:
            current = client.get(path)
        except K8sClientError as exc:
            if exc.status != 404:
                raise
            outcome = "skipped" if request["missing"] == "ignore" else "failed"
            return dict(result, msg="%s %s not found" % (kind, key), **{outcome: True})
        result["changed"] = write(current)
        if "state" in wanted:
            result["policy"] = wanted["state"]
        if "paused" in wanted:
            result["paused"] = wanted["paused"]
    except PER_OBJECT as exc:
        result.update(fleet.outcome(exc))
    return result
