# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeVirt objects over the client: finding the KubeVirt CR and setting its
overcommit model with a resourceVersion-guarded patch."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.k8s import kubevirt_config
from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import K8sClientError

API = "/apis/kubevirt.io/v1"


def namespaced_path(namespace, plural, name=None):
    path = "%s/namespaces/%s/%s" % (API, namespace, plural)
    return "%s/%s" % (path, name) if name else path


def find_kubevirt(client, namespace=None, name=None):
    """The KubeVirt CR: the one named, else the only one in the namespace
    (or the cluster)."""
    if namespace and name:
        try:
            return client.get(namespaced_path(namespace, "kubevirts", name))
        except K8sClientError as exc:
            if exc.status == 404:
                raise K8sClientError("no KubeVirt CR %s/%s" % (namespace, name), status=404)
            raise
    found = client.list(namespaced_path(namespace, "kubevirts") if namespace else API + "/kubevirts")
    if name:
        found = [kv for kv in found if kv["metadata"]["name"] == name]
    if len(found) != 1:
        where = "namespace %s" % namespace if namespace else "the cluster"
        raise K8sClientError("expected one KubeVirt CR in %s, found %d%s: set namespace and name" % (
            where, len(found), "" if not found else " (%s)" % ", ".join(
                "%s/%s" % (kv["metadata"]["namespace"], kv["metadata"]["name"]) for kv in found)), status=404)
    return found[0]


def configure(client, namespace, name, wanted):
    """Sets the wanted settings on the KubeVirt CR; returns the result."""
    kubevirt = find_kubevirt(client, namespace, name)
    meta = kubevirt["metadata"]
    path = namespaced_path(meta["namespace"], "kubevirts", meta["name"])
    planned = {}

    def plan_patch(current):
        planned.update(kubevirt_config.plan(current, wanted))
        return planned["patch"]

    _current, patch, conflicts = client.read_modify_write(path, plan_patch, current=kubevirt)
    result = {"changed": patch is not None, "kubevirt": {"namespace": meta["namespace"], "name": meta["name"]},
              "before": planned["before"], "after": planned["after"],
              "effective": kubevirt_config.effective(planned["after"])}
    if conflicts:
        result["conflicts"] = conflicts
    return result
