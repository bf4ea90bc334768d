# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for CPU cap arithmetic, so playbooks never convert by hand."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.domain import cpu
from ansible_collections.overcommit.control.plugins.plugin_utils.filter_guard import filter_guard


@filter_guard
def cpus_to_quota(cpus, period=cpu.DEFAULT_PERIOD):
    return cpu.quota_for_cpus(float(cpus), int(period))


@filter_guard
def quota_to_cpus(quota, period=cpu.DEFAULT_PERIOD):
    return cpu.cpus_for_quota(int(quota), int(period))


@filter_guard
def vcpu_cap_to_domain(cpus_per_vcpu, vcpus):
    return cpu.domain_cpus_from_vcpu_cap(float(cpus_per_vcpu), int(vcpus))


@filter_guard
def domain_cap_to_vcpu(domain_cpus, vcpus):
    return cpu.vcpu_cap_from_domain_cpus(float(domain_cpus), int(vcpus))


class FilterModule(object):
    def filters(self):
        return {
            "cpus_to_quota": cpus_to_quota,
            "quota_to_cpus": quota_to_cpus,
            "vcpu_cap_to_domain": vcpu_cap_to_domain,
            "domain_cap_to_vcpu": domain_cap_to_vcpu,
        }
