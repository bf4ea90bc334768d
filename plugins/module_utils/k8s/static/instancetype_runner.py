# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster instancetypes and preferences of many class definitions over
one client: two lists, then per object a create, a resourceVersion-guarded
patch (re-planned on a conflict) or a delete with a resourceVersion
precondition. The decisions are instancetypes.py's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import PER_OBJECT
from ansible_collections.overcommit.control.plugins.module_utils.k8s.static import instancetypes

CREATED, UPDATED, DELETED, UNCHANGED, ABSENT = "created", "updated", "deleted", "unchanged", "absent"


class InstancetypeRunner(object):
    """One task: the objects of every definition, each definition's result
    on its own (one failing does not stop the others)."""

    def __init__(self, client, request):
        self.client = client
        self.request = request
        self.names = request["keys"]

    def run(self):
        existing = dict((kind, dict((obj["metadata"]["name"], obj) for obj in self.client.list(instancetypes.path(kind))))
                        for _part, kind in instancetypes.OBJECTS)
        return [self.one(definition, existing) for definition in self.request["definitions"]]

    def one(self, definition, existing):
        name = definition["name"]
        present = self.request["state"] == "present"
        result = {"name": name, "changed": False, "before": {}, "after": {}}
        if present:
            result.update({"class": definition["class"], "resources": instancetypes.resources_of(definition)})
        wanted = instancetypes.wanted_objects(definition, self.names)
        # Removing takes the preference away before the instancetype it goes with.
        parts = instancetypes.OBJECTS if present else tuple(reversed(instancetypes.OBJECTS))
        for part, kind in parts:
            current = existing[kind].get(name)
            try:
                if present:
                    action, after = self.keep(kind, name, current, wanted[part])
                else:
                    action, after = self.remove(kind, name, current)
            except PER_OBJECT as exc:
                result.update(failed=True, msg="%s %s: %s" % (kind, name, exc))
                return result
            result[part] = {"kind": kind, "action": action}
            result["before"][part] = instancetypes.view(current, self.names)
            result["after"][part] = instancetypes.view(after, self.names)
            result["changed"] = result["changed"] or action not in (UNCHANGED, ABSENT)
        return result

    def keep(self, kind, name, current, wanted):
        if current is None:
            body = instancetypes.new_object(kind, name, wanted)
            created = self.client.create(instancetypes.path(kind), body)
            return CREATED, created if isinstance(created, dict) and created.get("spec") else body
        planned = {}

        def plan_patch(obj):
            planned["current"] = obj
            planned["patch"] = instancetypes.update_patch(kind, obj, wanted, self.names)
            return planned["patch"]

        self.client.read_modify_write(instancetypes.path(kind, name), plan_patch, current=current)
        if planned["patch"] is None:
            return UNCHANGED, planned["current"]
        patch = dict(planned["patch"])
        patch["metadata"] = dict((k, v) for k, v in (patch.get("metadata") or {}).items() if k != "resourceVersion")
        return UPDATED, instancetypes.after_patch(planned["current"], patch)

    def remove(self, kind, name, current):
        if current is None:
            return ABSENT, None
        if not instancetypes.owned_by_us(current, self.names):
            raise instancetypes.refusal_not_ours(kind, name, self.names)
        self.client.request("DELETE", instancetypes.path(kind, name), content_type="application/json", body={
            "apiVersion": "v1", "kind": "DeleteOptions",
            # Deleted only as it was read: a change since is not thrown away unseen.
            "preconditions": {"resourceVersion": current["metadata"]["resourceVersion"]}})
        return DELETED, None
