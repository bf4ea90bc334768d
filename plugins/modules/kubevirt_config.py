#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kubevirt_config
short_description: Set the cluster's KubeVirt overcommit model on the KubeVirt CR
version_added: 0.1.0
description:
  - Sets, on the KubeVirt CR, how much a VM is promised at creation cluster-wide, the static overcommit
    model, and leaves every other setting of the CR as it is.
  - O(cpu_allocation_ratio) is C(developerConfiguration.cpuAllocationRatio), O(memory_overcommit) is
    C(developerConfiguration.memoryOvercommit), O(auto_cpu_limit_namespace_selector) is
    C(autoCPULimitNamespaceLabelSelector) and O(vm_rollout_strategy) is C(vmRolloutStrategy).
  - Every value is validated before the CR is read, because KubeVirt silently keeps its previous
    configuration when given an invalid one (for example a ratio of 0). The result also reports what
    KubeVirt applies (C(effective)), its defaults included, and flags invalid values already on the CR.
  - Only options given are changed. The write carries the CR's C(resourceVersion) and is re-planned on a conflict.
author:
  - overcommit.control maintainers (@overcommit)
extends_documentation_fragment:
  - overcommit.control.k8s
  - overcommit.control.attributes
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.actiongroups
attributes:
  check_mode:
    support: full
    details: The write is sent to the API server as a dry run (C(dryRun=All)), so the CR schema validates it.
options:
  namespace:
    description:
      - Namespace of the KubeVirt CR. Without it (and O(name)) the only KubeVirt CR of the cluster is used.
    type: str
  name:
    description:
      - Name of the KubeVirt CR.
    type: str
  cpu_allocation_ratio:
    description:
      - vCPUs sold per physical CPU, at least 1. A VM without an explicit CPU request gets a launcher pod
        requesting vCPUs / ratio CPUs. KubeVirt's default is 10.
    type: int
  memory_overcommit:
    description:
      - Percentage of the guest memory the launcher does I(not) request is sold on top, at least 10;
        150 means the guest sees 1.5 times what its launcher requests. KubeVirt's default is 100.
      - Applies only to VMs that set no memory request.
    type: int
  auto_cpu_limit_namespace_selector:
    description:
      - VMs in namespaces this label selector matches get a CPU limit equal to their vCPUs.
      - "An empty selector (which would match every namespace) is refused; say so with a C(matchExpressions)
        entry C({key: kubernetes.io/metadata.name, operator: Exists})."
    type: dict
  clear_auto_cpu_limit_namespace_selector:
    description:
      - Remove the automatic CPU limit selector.
    type: bool
    default: false
  vm_rollout_strategy:
    description:
      - How changes of live-updatable fields reach running VMs. V(LiveUpdate) applies them live;
        V(Stage) waits for a restart.
    type: str
    choices: [Stage, LiveUpdate]
  clear:
    description:
      - Settings to remove from the CR, so that KubeVirt's default applies again, for example to put back a CR
        that did not set them (the C(before) of an earlier task says which were not set).
      - A setting named here and also given a value fails the task before the CR is read.
    type: list
    elements: str
    choices: [cpu_allocation_ratio, memory_overcommit, auto_cpu_limit_namespace_selector, vm_rollout_strategy]
    default: []
    version_added: 0.1.0
"""

EXAMPLES = r"""
- name: Sell 8 vCPUs per physical CPU and 20 % more memory than requested
  overcommit.control.kubevirt_config:
    cpu_allocation_ratio: 8
    memory_overcommit: 120

- name: Put back KubeVirt's default allocation ratio
  overcommit.control.kubevirt_config:
    clear: [cpu_allocation_ratio]

- name: Give every VM in namespaces labelled tier=shared a CPU limit of its vCPUs
  overcommit.control.kubevirt_config:
    namespace: kubevirt
    name: kubevirt
    auto_cpu_limit_namespace_selector:
      matchLabels:
        tier: shared
    vm_rollout_strategy: LiveUpdate
"""

RETURN = r"""
kubevirt:
  description: Namespace and name of the KubeVirt CR.
  returned: always
  type: dict
  sample: {namespace: kubevirt, name: kubevirt}
before:
  description: The managed settings as set on the CR before the task (null when not set).
  returned: success
  type: dict
  sample: {cpu_allocation_ratio: null, memory_overcommit: null, auto_cpu_limit_namespace_selector: null,
           vm_rollout_strategy: null}
after:
  description: The managed settings as set on the CR after the task.
  returned: success
  type: dict
effective:
  description: What KubeVirt applies after the task, its defaults for what is not set; an invalid value
    already on the CR is reported as ignored.
  returned: success
  type: dict
  sample: {cpu_allocation_ratio: 8, memory_overcommit: 100, auto_cpu_limit_namespace_selector: null,
           vm_rollout_strategy: LiveUpdate}
"""

from ansible_collections.overcommit.control.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.overcommit.control.plugins.module_utils.k8s.static import (
    runner as kubevirt, config as kubevirt_config)


def main():
    module = K8sModule(
        dict(
            namespace=dict(type="str"),
            name=dict(type="str"),
            cpu_allocation_ratio=dict(type="int"),
            memory_overcommit=dict(type="int"),
            auto_cpu_limit_namespace_selector=dict(type="dict"),
            clear_auto_cpu_limit_namespace_selector=dict(type="bool", default=False),
            vm_rollout_strategy=dict(type="str", choices=list(kubevirt_config.ROLLOUT_STRATEGIES)),
            clear=dict(type="list", elements="str", default=[], choices=list(kubevirt_config.FIELDS)),
        ),
        mutually_exclusive=[("auto_cpu_limit_namespace_selector", "clear_auto_cpu_limit_namespace_selector")],
    )
    wanted = module.checked(kubevirt_config.check_wanted)
    result = module.with_client(
        lambda client: kubevirt.configure(client, module.params["namespace"], module.params["name"], wanted))
    if module._diff and result["changed"]:
        result["diff"] = {"before": result["before"], "after": result["after"]}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
