"""Security on the lab: TLS verified by default by every platform client,
secrets never printed, data read from objects treated as untrusted.

Real: the lab's kube-apiserver (its certificate is self-signed, so without
the lab's CA it is an untrusted certificate), vcsim (self-signed), libvirtd
and its idle guests, ansible-playbook running the modules. Stand-ins: the
lab's Prometheus speaks plain HTTP, so a loopback HTTPS server made here
with a self-signed certificate answers /api/v1/query as Prometheus does;
throwaway Nodes, a throwaway VMI and a throwaway never-started domain carry
the hand-planted records."""

import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml
from kubernetes import client

from apiproxy import kubeconfig_parts
from loopback import LoopbackServer
from certificates import self_signed
from run_module import INVENTORY, ROOT, run_module

# A planted domain (oc-sec-*) trips host-wide reads of libvirt: those tests are
# in the libvirt group; the others use objects of their own.

TEMPLATE = "{{ lookup('pipe', 'id') }}"
EVALUATED = "uid="  # what `id` prints, were the template ever rendered
DEEP = "[" * 5000 + "]" * 5000  # deeper than json's recursion limit, under the size limit
GATE_RECORD = "overcommit.control/gate"
POLICY = "overcommit.control/policy"


def no_traceback(result):
    return "Traceback" not in json.dumps(result) and "module_stderr" not in result


# --- TLS: Kubernetes -----------------------------------------------------------

def kubeconfig_without_ca(path, folder):
    """The lab kubeconfig at path, without its certificate-authority: the
    API server's self-signed certificate is then not trusted."""
    with open(path) as handle:
        config = yaml.safe_load(handle)
    del config["clusters"][0]["cluster"]["certificate-authority"]
    out = os.path.join(folder, "no-ca.kubeconfig")
    with open(out, "w") as handle:
        yaml.safe_dump(config, handle)
    return out


def assert_certificate_refused(result, option):
    assert result["failed"] is True, result
    assert "CERTIFICATE_VERIFY_FAILED" in result["msg"] and "TLS certificate verification failed" in result["msg"], result
    assert "%s: false" % option in result["msg"], result
    assert no_traceback(result), result
    assert "retries" not in result, result  # a certificate does not pass: never retried


@pytest.mark.isolated
def test_kubernetes_modules_refuse_an_untrusted_api_server_certificate_unless_validate_certs_is_false(
        lab, make_nodes, tmp_path):
    """The lab's real kube-apiserver, reached without the lab's CA, by a
    kubeconfig and by host + api_key: refused, naming TLS verification and
    validate_certs; with validate_certs: false the same read works."""
    names = make_nodes(1)
    no_ca = kubeconfig_without_ca(lab["OVERCOMMIT_KUBECONFIG_OPERATOR"], str(tmp_path))
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])
    for connection in ({"kubeconfig": no_ca}, {"host": server, "api_key": token}):
        refused = run_module("node_overcommit_info", dict(connection, names=names))
        assert_certificate_refused(refused, "validate_certs")
        assert token not in json.dumps(refused)
        allowed = run_module("node_overcommit_info", dict(connection, names=names, validate_certs=False))
        assert not allowed.get("failed") and [n["name"] for n in allowed["nodes"]] == names, allowed
    # The lab's CA given as ca_cert is trusted again, with verification on.
    trusted = run_module("node_overcommit_info", {"host": server, "api_key": token, "ca_cert": ca_cert, "names": names})
    assert not trusted.get("failed"), trusted


# --- TLS: vSphere --------------------------------------------------------------

@pytest.mark.xdist_group("vcsim")
def test_vsphere_modules_refuse_vcsims_self_signed_certificate_unless_validate_certs_is_false(lab):
    """The lab's real vcsim and its self-signed certificate. The lab's
    environment sets VMWARE_VALIDATE_CERTS=false; both the environment and
    the task's validate_certs: true override it here."""
    env = dict((key, lab[key]) for key in ("VMWARE_HOST", "VMWARE_PORT", "VMWARE_USER", "VMWARE_PASSWORD"))
    from_env = run_module("vsphere_overcommit_info", {"vm_stats": False}, env=dict(env, VMWARE_VALIDATE_CERTS="true"))
    from_task = run_module("vsphere_overcommit_info", {"vm_stats": False, "validate_certs": True},
                           env=dict(env, VMWARE_VALIDATE_CERTS="false"))
    reservation = run_module("vsphere_vm_reservation", {"names": ["oc-no-such-vm"], "cpu": {"reservation": 0}},
                             env=dict(env, VMWARE_VALIDATE_CERTS="true"), check=True)
    for refused in (from_env, from_task, reservation):
        assert_certificate_refused(refused, "validate_certs")
        assert lab["VMWARE_PASSWORD"] not in json.dumps(refused)
    allowed = run_module("vsphere_overcommit_info", {"vm_stats": False, "validate_certs": False}, env=env)
    assert not allowed.get("failed") and allowed["hosts"], allowed


# --- TLS: Prometheus -----------------------------------------------------------

class FakePrometheus(LoopbackServer):
    """HTTPS on a free loopback port answering /api/v1/query with an empty
    instant vector, as Prometheus does for series it does not have."""

    def __init__(self, cert_path, key_path):
        self.queries = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                owner.queries.append(self.path)
                body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        self.serve(server)
        self.url = "https://127.0.0.1:%d" % server.server_address[1]


@pytest.fixture
def one_vmi(kube_admin):
    from kubevirt_fleet import NAMESPACE, Fleet

    fleet = Fleet(kube_admin)
    name = fleet.vmi(cores=1)
    yield NAMESPACE, name
    fleet.cleanup()


@pytest.mark.isolated
def test_the_prometheus_client_refuses_an_untrusted_certificate_unless_told(one_vmi, tmp_path):
    """kubevirt_vm_cpu_info reads usage from an HTTPS Prometheus (a loopback
    stand-in with a self-signed certificate made here; the VMI is real):
    refused by default naming prometheus_validate_certs and
    prometheus_ca_cert, without retries; read with the certificate given as
    prometheus_ca_cert or with prometheus_validate_certs: false."""
    namespace, name = one_vmi
    cert_path, key_path = self_signed(str(tmp_path))
    args = {"namespace": namespace, "names": [name], "usage_times": [time.time()], "usage_window": 60}
    with FakePrometheus(cert_path, key_path) as prometheus:
        args["prometheus_url"] = prometheus.url
        refused = run_module("kubevirt_vm_cpu_info", args)
        assert_certificate_refused(refused, "prometheus_validate_certs")
        assert "prometheus_ca_cert" in refused["msg"]
        assert prometheus.queries == []  # no request got past the handshake
        for trust in ({"prometheus_ca_cert": cert_path}, {"prometheus_validate_certs": False}):
            allowed = run_module("kubevirt_vm_cpu_info", dict(args, **trust))
            assert not allowed.get("failed") and [vm["name"] for vm in allowed["vms"]] == ["%s/%s" % one_vmi], allowed
        assert prometheus.queries and all(q.startswith("/api/v1/query?") for q in prometheus.queries)


# --- secrets never printed -----------------------------------------------------

def uri_tasks(node):
    """Every ansible.builtin.uri task in a parsed playbook, at any depth."""
    if isinstance(node, list):
        return [task for item in node for task in uri_tasks(item)]
    if isinstance(node, dict):
        found = [node] if "ansible.builtin.uri" in node or "uri" in node else []
        return found + [task for value in node.values() for task in uri_tasks(value)]
    return []


@pytest.mark.isolated
def test_the_lab_demos_uri_tasks_that_send_a_token_have_no_log():
    """playbooks/lab_demo.yml as shipped: every uri task with an
    Authorization header keeps its arguments (the bearer token) out of the
    output and the logs."""
    with open(os.path.join(ROOT, "playbooks", "lab_demo.yml")) as handle:
        demo = yaml.safe_load(handle)
    sending = [task for task in uri_tasks(demo)
               if "Authorization" in json.dumps((task.get("ansible.builtin.uri") or task.get("uri") or {}))]
    assert len(sending) >= 3
    assert [task["name"] for task in sending if task.get("no_log") is not True] == []


SECRETS_PLAYBOOK = """
- name: Every module and role of the lab demo, once each
  hosts: controllers
  gather_facts: false
  vars:
    admin: "{{{{ lookup('ansible.builtin.file', lookup('ansible.builtin.env', 'OVERCOMMIT_KUBECONFIG_ADMIN')) | from_yaml }}}}"
  module_defaults:
    group/overcommit.control.k8s:
      kubeconfig: "{kubeconfig_dict}"
  tasks:
    - name: The demo's first task, reading the nodes with the bearer token
      ansible.builtin.uri:
        url: "{{{{ admin.clusters[0].cluster.server }}}}/api/v1/nodes?limit=1"
        ca_path: "{{{{ admin.clusters[0].cluster['certificate-authority'] }}}}"
        headers:
          Authorization: "Bearer {{{{ admin.users[0].user.token }}}}"
      no_log: true
    - name: node_overcommit_info
      overcommit.control.node_overcommit_info: {{names: [lab-node-c]}}
    - name: node_admission, as a server-side dry run
      # Other tests gate nodes of the lab side by side; the gated share is not what this checks.
      overcommit.control.node_admission: {{names: [lab-node-c], taints: [{{key: oc-secrets-test}}], reason: secrets, max_gated_share: 1.0}}
      check_mode: true
    - name: kubevirt_vm_resources
      overcommit.control.kubevirt_vm_resources: {{namespace: lab, names: [{vm}], mode: audit}}
    - name: kubevirt_vm_cpu_limit
      overcommit.control.kubevirt_vm_cpu_limit: {{namespace: lab, names: [{vm}], state: restored}}
    - name: kubevirt_vm_cpu_info
      overcommit.control.kubevirt_vm_cpu_info: {{namespace: lab, names: [{vm}]}}
    - name: kubevirt_policy_state
      overcommit.control.kubevirt_policy_state: {{states: {{}}}}
    - name: the kubevirt_cpu_reconcile role
      ansible.builtin.include_role:
        name: overcommit.control.kubevirt_cpu_reconcile
      vars:
        kubevirt_cpu_reconcile_namespace: lab
        kubevirt_cpu_reconcile_label_selector: "{selector}"
    - name: vsphere_overcommit_info
      overcommit.control.vsphere_overcommit_info: {{vm_stats: false}}
    - name: vsphere_vm_reservation
      overcommit.control.vsphere_vm_reservation: {{names: [DC0_C0_RP0_VM0], cpu: {{reservation: 10}}, reason: secrets}}
      check_mode: true

- name: The libvirt modules and the incident roles on a throwaway domain
  hosts: hypervisors
  gather_facts: false
  tasks:
    - name: libvirt_cputune_info
      overcommit.control.libvirt_cputune_info: {{uri: "{{{{ libvirt_uri }}}}", domains: [{domain}]}}
    - name: libvirt_policy_state
      overcommit.control.libvirt_policy_state: {{uri: "{{{{ libvirt_uri }}}}", states: {{{domain}: {{cap: 0.5}}}}}}
    - name: host_pressure_info
      overcommit.control.host_pressure_info: {{collect_domains: false}}
    - name: the throttle role (libvirt_cputune)
      ansible.builtin.include_role:
        name: overcommit.control.throttle
      vars: {{throttle_domains: [{domain}], throttle_cpus: 0.5, throttle_reason: secrets test}}
    - name: the restore role
      ansible.builtin.include_role:
        name: overcommit.control.restore
      vars: {{restore_domains: [{domain}]}}
"""


def lab_tokens(lab):
    tokens = []
    for key in ("ADMIN", "OPERATOR", "UNBOUND"):
        with open(lab["OVERCOMMIT_KUBECONFIG_" + key]) as handle:
            tokens.append(yaml.safe_load(handle)["users"][0]["user"]["token"])
    return tokens


@pytest.fixture
def one_vm(kube_admin):
    """A running KubeVirt VM (VirtualMachine, VMI, launcher pod) of the lab's stand-in for KubeVirt."""
    from kubevirt_fleet import Fleet

    fleet = Fleet(kube_admin)
    name = fleet.vmi(cores=1, vm=True)
    yield name, fleet.selector
    fleet.cleanup()


@pytest.mark.xdist_group("libvirt")
def test_no_secret_shows_with_vvv(lab, planted_domain, one_vm):
    """Every module the lab demo runs (node_overcommit_info, node_admission,
    kubevirt_vm_resources, kubevirt_vm_cpu_limit, kubevirt_vm_cpu_info,
    kubevirt_policy_state, vsphere_overcommit_info, vsphere_vm_reservation,
    libvirt_cputune_info, libvirt_policy_state, host_pressure_info,
    libvirt_cputune) and the roles throttle, restore and
    kubevirt_cpu_reconcile, plus the demo's bearer-token uri task, once
    each with -vvv against the real lab servers: the writes to shared
    objects in check mode (server-side dry runs), the libvirt ones for real
    on a throwaway never-started domain. The Kubernetes modules get the
    admin kubeconfig as a dict (its token inline); the KubeVirt ones act on
    a VM made for the test (the lab's stand-in for KubeVirt's controllers). Neither the vSphere
    password nor any lab token nor a Bearer value appears in the output.
    (The roles recommend, apply_plan, closed_loop and esxi_guard call the
    same modules; their own runs are in the stage2, closed_loop and
    esxi_guard tests.)"""
    with open(lab["OVERCOMMIT_KUBECONFIG_ADMIN"]) as handle:
        inline = json.dumps(yaml.safe_load(handle)).replace('"', "'")
    domain = planted_domain[0].name()
    playbook = SECRETS_PLAYBOOK.format(kubeconfig_dict="{{ %s }}" % inline, domain=domain, vm=one_vm[0],
                                       selector=one_vm[1])
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as handle:
        handle.write(playbook)
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"),
               **dict((key, lab[key]) for key in ("VMWARE_HOST", "VMWARE_PORT", "VMWARE_USER", "VMWARE_PASSWORD",
                                                  "VMWARE_VALIDATE_CERTS")))
    try:
        completed = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-vvv",
                                    "-i", INVENTORY, handle.name], env=env, capture_output=True, text=True,
                                   timeout=600, check=False)
    finally:
        os.unlink(handle.name)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-4000:]
    assert "PLAY RECAP" in output and "%s: 0.5 CPU" % domain in output and "restored" in output, output[-4000:]
    for secret in [lab["VMWARE_PASSWORD"]] + lab_tokens(lab):
        assert secret not in output
    bearer = re.findall(r"Bearer\s+([^\s'\"{]+)", output)
    assert bearer == [], bearer
    tokens = set(re.findall(r"token['\"]?\s*[:=]\s*['\"]?([^\s'\",}]+)", output))
    assert tokens <= {"VALUE_SPECIFIED_IN_NO_LOG_PARAMETER", "********", "null", "None"}, tokens


# --- untrusted data from objects -----------------------------------------------

@pytest.fixture
def planted_node(kube_admin, make_nodes):
    """A throwaway Node whose gate record and policy annotations are set by
    the test (as anyone with write access to the node could)."""
    name = make_nodes(1)[0]

    def plant(annotations):
        client.CoreV1Api(kube_admin).patch_node(name, {"metadata": {"annotations": annotations}})
    return name, plant


# What each throwaway node's gate record and policy state hold, and what the result says of it.
PLANTED = [
    ("x" * 120000, "too large"),  # twice on the node: the API server takes at most 256 KiB of annotations
    (DEEP, "too deeply nested"),
    ("[1, 2]", "list"),
    ("7", "int"),
]


@pytest.mark.isolated
def test_a_nodes_oversized_deep_or_mistyped_annotations_make_its_records_unreadable_not_the_task_fail(
        lab, kube_admin, make_nodes):
    """Real Nodes whose gate record and policy state annotations hold an
    oversized or deeply nested value, a JSON list or a number. Reading them
    reports each policy state unreadable saying why and no gate record,
    without a traceback or the value in the result; gating them refuses
    each node alone, naming its record, and changes nothing; storing a
    policy state (check mode) does not crash either."""
    names = make_nodes(len(PLANTED))
    core = client.CoreV1Api(kube_admin)
    for name, (value, _why) in zip(names, PLANTED):
        core.patch_node(name, {"metadata": {"annotations": {GATE_RECORD: value, POLICY: value}}})
    kubeconfig = lab["OVERCOMMIT_KUBECONFIG_ADMIN"]
    read = run_module("node_overcommit_info", {"names": names, "kubeconfig": kubeconfig})
    assert not read.get("failed") and no_traceback(read) and len(json.dumps(read)) < 20000, str(read)[:2000]
    by_name = dict((node["name"], node) for node in read["nodes"])
    for name, (_value, why) in zip(names, PLANTED):
        assert by_name[name]["gate"] is None and why in by_name[name]["policy_error"], by_name[name]
    gated = run_module("node_admission", {"names": names, "max_gated_share": 1.0, "reason": "untrusted test",
                                          "kubeconfig": kubeconfig})
    assert no_traceback(gated) and len(json.dumps(gated)) < 20000, str(gated)[:2000]
    assert gated.get("changed") is not True
    assert sorted(node["name"] for node in gated["nodes"] if node.get("failed")) == sorted(names), gated
    state = run_module("node_admission", {"names": names, "policy_state": {"cap": 1}, "max_gated_share": 1.0,
                                          "kubeconfig": kubeconfig}, check=True)
    assert no_traceback(state) and len(json.dumps(state)) < 20000, str(state)[:2000]
    for name in names:
        assert node_taints(core, name) == []


def node_taints(core, name):
    return core.read_node(name).spec.taints or []


@pytest.mark.isolated
def test_template_text_in_a_node_annotation_comes_back_verbatim(lab, planted_node):
    """A real Node's gate record whose reason is Jinja2 text: the module's
    result and a debug of it print the text as it is, never its value."""
    name, plant = planted_node
    plant({GATE_RECORD: json.dumps({"reason": TEMPLATE, "by": TEMPLATE, "time": "2026-01-01T00:00:00Z"})})
    read = run_module("node_overcommit_info", {"names": [name], "kubeconfig": lab["OVERCOMMIT_KUBECONFIG_ADMIN"]})
    assert read["nodes"][0]["gate"]["reason"] == TEMPLATE, read
    shown = run_debug_of("node_overcommit_info", {"names": [name], "kubeconfig": lab["OVERCOMMIT_KUBECONFIG_ADMIN"]},
                         "{{ result.nodes[0].gate.reason }}")
    assert TEMPLATE in shown and EVALUATED not in shown, shown


def run_debug_of(module, args, message, hosts="localhost"):
    """The default output of a play that runs the module and debugs `message`."""
    play = [{"hosts": hosts, "gather_facts": False, "tasks": [
        {"name": "run", "overcommit.control." + module: args, "register": "result"},
        {"name": "show", "ansible.builtin.debug": {"msg": message}}]}]
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as handle:
        yaml.safe_dump(play, handle)
    try:
        completed = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY,
                                    handle.name], capture_output=True, text=True, timeout=600, check=False,
                                   env=dict(os.environ, ANSIBLE_NOCOLOR="1",
                                            ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections")))
    finally:
        os.unlink(handle.name)
    return completed.stdout + completed.stderr


@pytest.fixture
def planted_domain(libvirt_conn):
    """A throwaway persistent domain, never started, whose metadata the test
    writes as anyone with access to libvirt could. Undefined afterwards."""
    import libvirt

    domain = libvirt_conn.defineXML(
        "<domain type='qemu'><name>oc-sec-%s</name><memory unit='MiB'>32</memory><vcpu>1</vcpu>"
        "<os><type arch='x86_64'>hvm</type></os></domain>" % uuid.uuid4().hex[:8])

    def plant(namespace, element):
        domain.setMetadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, element, "ocsec", namespace,
                           libvirt.VIR_DOMAIN_AFFECT_CONFIG)
    yield domain, plant
    domain.undefine()


def domain_namespaces():
    from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml

    return domain_xml.THROTTLE_NAMESPACE, domain_xml.POLICY_NAMESPACE


@pytest.mark.xdist_group("libvirt")
def test_a_domains_oversized_or_deep_metadata_fails_that_domain_alone(lab, planted_domain):
    """A real (never started) domain's throttle record carries a 1 MiB
    reason and its policy state a deeply nested JSON value: reading it
    reports the policy state unreadable and the record refused, naming the
    field and the limit, without loading them into the result or a
    traceback; restoring it changes nothing and says why."""
    domain, plant = planted_domain
    throttle_ns, policy_ns = domain_namespaces()
    uri = lab["OVERCOMMIT_LIBVIRT_URI"]
    policy = ET.Element("policy")
    ET.SubElement(policy, "state").text = DEEP
    plant(policy_ns, ET.tostring(policy, encoding="unicode"))
    deep = run_module("libvirt_cputune_info", {"uri": uri, "domains": [domain.name()]})
    assert not deep.get("failed") and no_traceback(deep), json.dumps(deep)[:2000]
    assert "too deeply nested" in json.dumps(deep["domains"][0]), json.dumps(deep)[:2000]

    record = ET.Element("throttle", cpus="0.5", reason="r" * (1024 * 1024))
    ET.SubElement(record, "previous", target="config", global_quota="-1", global_period="100000")
    plant(throttle_ns, ET.tostring(record, encoding="unicode"))
    before = domain.XMLDesc(0)
    read = run_module("libvirt_cputune_info", {"uri": uri, "domains": [domain.name()]})
    restore = run_module("libvirt_cputune", {"uri": uri, "domains": [domain.name()], "state": "restored"})
    for result in (read, restore):
        text = json.dumps(result)
        assert no_traceback(result) and len(text) < 50000, text[:2000]
        assert "throttle.reason" in text and "at most 65536 characters" in text, text[:2000]
    assert restore.get("changed") is not True
    assert domain.XMLDesc(0) == before


@pytest.mark.xdist_group("libvirt")
def test_template_text_in_domain_metadata_comes_back_verbatim_in_results_and_the_restore_summary(lab, planted_domain):
    """A real (never started) domain's throttle record with Jinja2 text as
    its reason and as a previous value: libvirt_cputune_info returns the
    reason as it is, and the restore playbook's printed summary shows the
    refused value as text, never evaluated."""
    domain, plant = planted_domain
    throttle_ns, _policy_ns = domain_namespaces()
    record = ET.Element("throttle", cpus="0.5", reason=TEMPLATE, by=TEMPLATE)
    ET.SubElement(record, "previous", target="config", global_quota=TEMPLATE, global_period="100000")
    plant(throttle_ns, ET.tostring(record, encoding="unicode"))
    read = run_debug_of("libvirt_cputune_info", {"uri": lab["OVERCOMMIT_LIBVIRT_URI"], "domains": [domain.name()]},
                        "{{ result }}")
    assert TEMPLATE in read and EVALUATED not in read, read[-3000:]
    from run_module import run_playbook

    restored = run_playbook("restore.yml", {"domains": [domain.name()]})
    output = restored.stdout + restored.stderr
    assert TEMPLATE in output and EVALUATED not in output, output[-3000:]
    assert "Traceback" not in output


@pytest.mark.isolated
def test_a_vmis_deep_or_template_annotations_are_read_as_data(kube_admin, one_vmi):
    """A real VMI (the lab's stand-in for KubeVirt's controllers) whose
    brake's throttle record is deeply nested JSON and whose desired cap is
    Jinja2 text: reading it and restoring it end without a traceback; the
    record reads as none and the template text is never evaluated."""
    from kubevirt_fleet import GROUP, PREFIX, VERSION

    namespace, name = one_vmi
    client.CustomObjectsApi(kube_admin).patch_namespaced_custom_object(
        GROUP, VERSION, namespace, "virtualmachineinstances", name,
        {"metadata": {"annotations": {PREFIX + "cpu-limit-throttle": DEEP, PREFIX + "cpu-limit-applied": DEEP,
                                      PREFIX + "cpu-limit": TEMPLATE}}})
    read = run_module("kubevirt_vm_cpu_info", {"namespace": namespace, "names": [name]})
    restore = run_module("kubevirt_vm_cpu_limit", {"namespace": namespace, "names": [name], "state": "restored"})
    for result in (read, restore):
        text = json.dumps(result)
        assert no_traceback(result) and len(text) < 20000 and EVALUATED not in text, text[:2000]
        assert DEEP not in text
