# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Connection options shared by the Kubernetes modules, named and read from
    # the environment as in kubernetes.core.
    # With the action group every module of the platform belongs to.
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, or the kubeconfig as a dictionary.
      - Without it and without O(host), the in-cluster service account is tried first, then C(~/.kube/config).
      - Can also be set with the E(K8S_AUTH_KUBECONFIG) environment variable.
    type: raw
  context:
    description:
      - The kubeconfig context to use instead of its current context.
      - Can also be set with the E(K8S_AUTH_CONTEXT) environment variable.
    type: str
  host:
    description:
      - URL of the API server, for example C(https://api.example.com:6443).
      - With O(api_key) (or O(client_cert) and O(client_key)) no kubeconfig is read.
      - Can also be set with the E(K8S_AUTH_HOST) environment variable.
    type: str
  api_key:
    description:
      - Bearer token to authenticate with.
      - Can also be set with the E(K8S_AUTH_API_KEY) environment variable.
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate.
      - Can also be set with the E(K8S_AUTH_VERIFY_SSL) environment variable.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to the CA certificate that signed the API server's certificate.
      - Can also be set with the E(K8S_AUTH_SSL_CA_CERT) environment variable.
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate to authenticate with.
      - Can also be set with the E(K8S_AUTH_CERT_FILE) environment variable.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the key of O(client_cert).
      - Can also be set with the E(K8S_AUTH_KEY_FILE) environment variable.
    type: path
    aliases: [key_file]
  retry_seconds:
    description:
      - How long, in seconds, a request is tried again after a transient fault of the API server or of the
        connection to it (HTTP 429, 500, 502, 503, 504, a dropped, refused or timed out connection), with
        jittered exponential back-off; a C(Retry-After) is honoured within that time.
      - A write is sent again after a fault that may have followed its being applied only when it is safe;
        every write of these modules is (a patch guarded by the object's C(resourceVersion), the creation of a
        named Event, or a server-side dry run in check mode).
      - When a request was tried again the result has C(retries) (C(attempts), C(waited_seconds) and the faults
        met as C(errors)); a fault that outlasts this time fails the object or the task with a message naming
        it and how long it was tried.
      - V(0) tries every request once.
    type: float
    default: 30.0
requirements:
  - kubernetes (the Python client) on the host that runs the module
notes:
  - One connection serves every object of the task.
  - In check mode every write is sent with C(dryRun=All), so the API server validates it, admission and RBAC
    included, and stores nothing.
  - The least privilege these modules need is the ClusterRole in the collection's C(docs/rbac/) directory.
attributes:
  action_group:
    membership: [overcommit.control.k8s]
"""
