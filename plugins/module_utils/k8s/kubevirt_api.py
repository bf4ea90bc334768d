# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where KubeVirt's objects live in the API (kubevirt.io/v1). Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

API = "/apis/kubevirt.io/v1"


def namespaced_path(namespace, plural, name=None):
    path = "%s/namespaces/%s/%s" % (API, namespace, plural)
    return "%s/%s" % (path, name) if name else path
