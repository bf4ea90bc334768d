# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where KubeVirt's objects live in the API (kubevirt.io/v1). Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

API = "/apis/kubevirt.io/v1"

# The node label virt-handler's node labeller sets to "true" where the kubelet's
# static CPU manager can give VMs dedicated CPUs: named kubevirt.io/cpumanager
# since KubeVirt v1.8, cpumanager before (v1.8 still writes both).
CPU_MANAGER_LABELS = ("kubevirt.io/cpumanager", "cpumanager")


def dedicated_cpus_offered(labels):
    """Whether KubeVirt marks a node (by its labels) as able to run VMs with
    dedicated CPUs; None on a node KubeVirt has not labelled. The newer label
    wins where both are there."""
    for label in CPU_MANAGER_LABELS:
        if label in labels:
            return labels[label] == "true"
    return None


def namespaced_path(namespace, plural, name=None):
    path = "%s/namespaces/%s/%s" % (API, namespace, plural)
    return "%s/%s" % (path, name) if name else path
