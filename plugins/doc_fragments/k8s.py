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
      - The credentials in a kubeconfig given as a dictionary (its users' C(token), C(password),
        C(client-key-data) and the tokens and secrets of an C(auth-provider)) are kept out of the task's output
        and logs, as those of a C(no_log) option are.
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
  username:
    description:
      - User name for HTTP basic authentication, with O(password); they replace the kubeconfig's credentials.
      - Only for API servers (or authenticating proxies in front of them) that take basic authentication;
        Kubernetes itself dropped it in 1.19.
      - With O(host), no kubeconfig is read.
      - Not together with O(api_key).
      - Can also be set with the E(K8S_AUTH_USERNAME) environment variable.
    type: str
  password:
    description:
      - Password of O(username) for HTTP basic authentication.
      - Can also be set with the E(K8S_AUTH_PASSWORD) environment variable.
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
  proxy:
    description:
      - URL of an HTTP proxy to reach the API server through, for example C(http://proxy.example:3128); an
        C(https://) API server is reached through a C(CONNECT) tunnel.
      - It overrides the kubeconfig's C(proxy-url). Without either, recent versions of the kubernetes library
        take a proxy from E(HTTPS_PROXY) and E(NO_PROXY).
      - Can also be set with the E(K8S_AUTH_PROXY) environment variable.
    type: str
  no_proxy:
    description:
      - Comma-separated hosts, domains, IP addresses and CIDRs reached without O(proxy), for example
        C(localhost,.local,.example.com,127.0.0.1,10.0.0.0/8).
      - Can also be set with the E(K8S_AUTH_NO_PROXY) environment variable.
    type: str
  proxy_headers:
    description:
      - Headers for O(proxy), made as urllib3's C(make_headers) makes them.
    type: dict
    suboptions:
      proxy_basic_auth:
        description:
          - C(USER:PASSWORD) for the proxy's basic authentication (C(Proxy-Authorization)).
          - Can also be set with the E(K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH) environment variable.
        type: str
      basic_auth:
        description:
          - C(USER:PASSWORD) for an C(Authorization) basic authentication header sent to the proxy.
          - Can also be set with the E(K8S_AUTH_PROXY_HEADERS_BASIC_AUTH) environment variable.
        type: str
      user_agent:
        description:
          - The C(User-Agent) the proxy sees, for example C(ops-automation/1.0).
          - Can also be set with the E(K8S_AUTH_PROXY_HEADERS_USER_AGENT) environment variable.
        type: str
  impersonate_user:
    description:
      - The user the API server acts as (the C(Impersonate-User) header), with that user's permissions; the
        identity that authenticates needs the C(impersonate) verb on that user.
      - Can also be set with the E(K8S_AUTH_IMPERSONATE_USER) environment variable.
    type: str
  impersonate_groups:
    description:
      - The groups of O(impersonate_user) (one C(Impersonate-Group) header each); only with O(impersonate_user).
      - Can also be set with the E(K8S_AUTH_IMPERSONATE_GROUPS) environment variable, for example C(Group1,Group2).
    type: list
    elements: str
  request_timeout:
    description:
      - Seconds one request may take, to connect and to be answered; an API server (or proxy) that does not
        answer in that time fails the request with a message naming this option, instead of hanging the task.
      - A read that timed out is tried again within O(retry_seconds), as other transient faults are.
      - kubernetes.core has no such option.
    type: float
    default: 30.0
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
  - Options that cannot work (O(password) without O(username), O(impersonate_groups) without
    O(impersonate_user), a O(proxy) that is not an C(http://) or C(https://) URL, O(request_timeout) not above
    V(0)) fail the task naming the option before any request.
  - In check mode every write is sent with C(dryRun=All), so the API server validates it, admission and RBAC
    included, and stores nothing.
  - The least privilege these modules need is the ClusterRole in the collection's C(docs/rbac/) directory.
attributes:
  action_group:
    membership: [overcommit.control.k8s]
"""
