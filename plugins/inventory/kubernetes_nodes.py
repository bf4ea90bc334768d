# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: kubernetes_nodes
short_description: The hypervisor hosts of the collection's playbooks, from Kubernetes Nodes
version_added: 0.1.0
description:
  - Builds the inventory the collection's playbooks expect from the Nodes of a Kubernetes cluster - one host per
    node, named after it, in the O(hypervisors_group) group (default C(hypervisors)), with C(kubernetes_node) set to
    the node's name (the node recommend and the closed loop gate for that host) and C(ansible_host) to its
    O(address_type) address; and the O(controllers) (default C(localhost), connection C(local)) in the
    C(controllers) group, where the playbooks talk to the Kubernetes API.
  - "Groups every host by what a rollout in waves or an incident targets: C(zone_<zone>) (label
    C(topology.kubernetes.io/zone)), C(role_<role>) (labels C(node-role.kubernetes.io/<role>)), C(pool_<pool>)
    (label O(pool_label)), C(esxi_<host>) (the ESXi host the C(esxi_guard) role labelled the node with,
    C(<prefix><esxi_host_label>)), and C(gated) or C(open) by the collection's admission gate (the record
    M(overcommit.control.node_admission) keeps on a gated node, even one this version cannot read). Characters a
    group name cannot hold become C(_)."
  - Each host also gets C(overcommit_node) - its labels, taints, whether it is cordoned, gated (with the gate
    record), paused (the kill switch label), its zone, roles, pool and ESXi host - for O(compose), O(groups),
    O(keyed_groups) and O(filters).
  - Reads only (C(get) and C(list) on nodes, as the collection's ClusterRole grants). A connection or option that
    cannot work fails the inventory with a message naming it, before anything is added.
author:
  - overcommit.control maintainers (@overcommit)
requirements:
  - kubernetes (the Python client) on the controller
extends_documentation_fragment:
  - ansible.builtin.constructed
  - ansible.builtin.inventory_cache
options:
  plugin:
    description: The name of this plugin; the inventory file's name must end with C(kubernetes_nodes.yml) or
      C(kubernetes_nodes.yaml).
    type: str
    required: true
    choices: [overcommit.control.kubernetes_nodes]
  kubeconfig:
    description: Path to a kubeconfig; without it and O(host), the in-cluster service account, then C(~/.kube/config).
    type: path
    env:
      - name: K8S_AUTH_KUBECONFIG
  context:
    description: The kubeconfig context to use instead of its current context.
    type: str
    env:
      - name: K8S_AUTH_CONTEXT
  host:
    description: URL of the API server.
    type: str
    env:
      - name: K8S_AUTH_HOST
  api_key:
    description: Bearer token to authenticate with.
    type: str
    env:
      - name: K8S_AUTH_API_KEY
  validate_certs:
    description: Whether the API server's certificate is verified.
    type: bool
    aliases: [verify_ssl]
    env:
      - name: K8S_AUTH_VERIFY_SSL
  ca_cert:
    description: CA bundle that signed the API server's certificate.
    type: path
    aliases: [ssl_ca_cert]
    env:
      - name: K8S_AUTH_SSL_CA_CERT
  client_cert:
    description: Client certificate to authenticate with.
    type: path
    aliases: [cert_file]
    env:
      - name: K8S_AUTH_CERT_FILE
  client_key:
    description: Key of O(client_cert).
    type: path
    aliases: [key_file]
    env:
      - name: K8S_AUTH_KEY_FILE
  request_timeout:
    description: Seconds one request to the API server may take.
    type: float
    default: 30
  retry_seconds:
    description: Seconds transient faults (429, 5xx, dropped connections) are retried for in all; 0 tries once.
    type: float
    default: 30
  label_selector:
    description: Only the nodes this label selector matches; every node when empty.
    type: str
    default: ""
  hypervisors_group:
    description: The group every node's host is in; the collection's playbooks target C(hypervisors).
    type: str
    default: hypervisors
  controllers:
    description: Hosts of the C(controllers) group (connection C(local)), where the playbooks run the Kubernetes
      and vSphere tasks; empty for none.
    type: list
    elements: str
    default: [localhost]
  address_type:
    description: The node address (C(status.addresses)) that becomes C(ansible_host); empty to leave
      C(ansible_host) unset (the node's name is then the address).
    type: str
    default: InternalIP
  pool_label:
    description: The node label whose value groups nodes into pools (C(pool_<value>)).
    type: str
    default: overcommit.control/class-pool
  esxi_host_label:
    description: The short key, under O(prefix), of the label the C(esxi_guard) role puts the node's ESXi host in.
    type: str
    default: esxi-host
  prefix:
    description: The key prefix of the collection's labels and annotations (the gate record, the kill switch).
    type: str
    default: overcommit.control/
  filters:
    description: Jinja2 conditions on each host's variables; a node is added only when all are true.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
# inventory.kubernetes_nodes.yml: every node of the cluster, grouped by zone,
# the playbooks' hosts reached at the nodes' InternalIP over SSH
plugin: overcommit.control.kubernetes_nodes
kubeconfig: ~/.kube/config

---
# The KubeVirt nodes only, KubeVirt-side (no libvirt on the hosts), waves by zone
# (ansible-playbook -i inventory.kubernetes_nodes.yml overcommit.control.rollout -e ... --limit zone_zone_a)
plugin: overcommit.control.kubernetes_nodes
label_selector: kubevirt.io/schedulable=true
compose:
  overcommit_libvirt: false
  ansible_user: "'ops'"
keyed_groups:
  - key: overcommit_node.labels['node.kubernetes.io/instance-type'] | default('none')
    prefix: instance
filters:
  - not overcommit_node.paused
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: /var/cache/ansible/kubernetes-nodes
cache_timeout: 300
"""

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.k8s.client import (
    HAS_KUBERNETES, K8sClient, K8sClientError, check_connection_options)
from ansible_collections.overcommit.control.plugins.module_utils.k8s.nodes import inventory as node_inventory
from ansible_collections.overcommit.control.plugins.module_utils.k8s.nodes.reader import read_nodes

CONNECTION_OPTIONS = ("kubeconfig", "context", "host", "api_key", "validate_certs", "ca_cert", "client_cert",
                      "client_key", "request_timeout", "retry_seconds")
NODE_OPTIONS = ("hypervisors_group", "address_type", "pool_label", "esxi_host_label", "prefix")


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "overcommit.control.kubernetes_nodes"

    def verify_file(self, path):
        return super(InventoryModule, self).verify_file(path) and \
            path.endswith(("kubernetes_nodes.yml", "kubernetes_nodes.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super(InventoryModule, self).parse(inventory, loader, path, cache)
        self._read_config_data(path)
        options = dict((name, self.get_option(name)) for name in NODE_OPTIONS)
        try:
            node_inventory.check_options(options)
        except ValueRangeError as exc:
            raise AnsibleParserError("%s: %s" % (path, exc))
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache") and cache
        facts = None
        if use_cache:
            try:
                facts = self._cache[cache_key]
            except KeyError:
                facts = None
        if facts is None:
            facts = self._read(path, options)
            if self.get_option("cache"):
                self._cache[cache_key] = facts
        self._populate(facts, options)

    def _read(self, path, options):
        if not HAS_KUBERNETES:
            raise AnsibleParserError("%s: the kubernetes Python library is required on the controller "
                                     "(pip install kubernetes)" % path)
        params = dict((name, self.get_option(name)) for name in CONNECTION_OPTIONS)
        client = None
        try:
            check_connection_options(params)
            client = K8sClient(params)
            nodes, _missing = read_nodes(client, [], self.get_option("label_selector") or None)
        except (ValueRangeError, K8sClientError) as exc:
            raise AnsibleParserError("%s: cannot read the Kubernetes nodes: %s" % (path, exc))
        finally:
            if client is not None:
                client.close()
        return [node_inventory.node_facts(node, options) for node in nodes]

    def _populate(self, facts, options):
        strict = self.get_option("strict")
        for name in self.get_option("controllers") or []:
            self.inventory.add_group("controllers")
            self.inventory.add_host(name, group="controllers")
            self.inventory.set_variable(name, "ansible_connection", "local")
        for node in facts:
            host, variables, groups = node_inventory.host_of(node, options)
            if not all(self._compose(condition, variables) for condition in self.get_option("filters")):
                continue
            for group in groups:
                self.inventory.add_group(group)
                self.inventory.add_host(host, group=group)
            for key, value in variables.items():
                self.inventory.set_variable(host, key, value)
            self._set_composite_vars(self.get_option("compose"), variables, host, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), variables, host, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), variables, host, strict=strict)
