"""Stage 2 run the way AWX runs jobs: playbooks/recommend.yml, then
playbooks/apply_plan.yml with the plan recommend handed on, each as one job
through ansible-runner's streaming protocol

    ansible-runner transmit PRIVATE_DATA_DIR -p PLAYBOOK
      | ansible-runner worker --private-data-dir WORKDIR --delete
      | ansible-runner process PRIVATE_DATA_DIR

which is what AWX's controller (transmit, process) and an execution node
(worker, under receptor) run for every job.

Real: the runner protocol and its three steps (ansible-runner of the venv),
the playbooks, the collection, and the lab's servers (libvirtd,
kube-apiserver) they measure and, for apply_plan, read. The plan reaches
apply_plan the way an AWX workflow passes it: read from the recommend job's
`playbook_on_stats` event (`artifact_data`, what set_stats hands on), then
written into the next job's env/extravars.

Not AWX: there is no AWX control plane (no database, receptor, workflow,
approval or execution environment). The private data dir is laid out the way
AWX's task manager writes it for a job: project/ (the project checkout: here a
copy of playbooks/), inventory/hosts (an executable script printing the
inventory as JSON, from playbooks/inventories/lab/hosts.yml), env/extravars
(YAML in which every value not set on the job template is tagged !unsafe, as
AWX writes launch-time vars and workflow artifacts), env/envvars,
env/settings and env/cmdline (`--check` for a check job). transmit streams
symlinks as symlinks, so the playbooks are copied, not linked. The collection
itself is found through ANSIBLE_COLLECTIONS_PATH (an absolute path to this
checkout's collections/), which works because worker and controller are one
machine here; on a real execution node the collection comes from the
execution environment. The worker runs with an environment of its own
(PATH, HOME under tmp), so what the job needs comes from env/envvars.

apply_plan always runs as a check job (--check), so nothing changes whatever
the plan holds. This test starts and stops no guest: with the lab idle the
plan has no action; when another run left a busy guest running it has some,
and an action whose object that run changed between the two jobs is refused,
which fails the apply_plan job (fail_on_refused, true by default): the test
asserts either outcome from the job's artifacts. Ansible writes only under the
test's tmp (ANSIBLE_HOME, ANSIBLE_REMOTE_TMP), never to ~/.ansible."""

import copy
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from run_module import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("lab-node-a")]

BIN = os.path.dirname(sys.executable)
RUNNER = os.path.join(BIN, "ansible-runner")
LAB_INVENTORY = os.path.join(ROOT, "playbooks", "inventories", "lab", "hosts.yml")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
JOB_TIMEOUT = 900
TAIL = 4000
# The modules of apply_plan that change something.
CHANGING_ACTIONS = ("libvirt_cputune", "node_admission")


class UnsafeDumper(yaml.SafeDumper):
    """YAML with every string tagged !unsafe: how AWX writes the extra vars
    that were not set on the job template (launch vars, workflow artifacts),
    so that Ansible never templates them."""

    def represent_data(self, data):
        if isinstance(data, str):
            return self.represent_scalar("!unsafe", data)
        return super().represent_data(data)


def extravars_yaml(extra_vars, safe=None):
    """env/extravars as AWX writes it: each variable dumped on its own, the
    job template's own (`safe`, unchanged) plain, everything else !unsafe."""
    safe = safe or {}
    parts = []
    for key, value in extra_vars.items():
        dumper = yaml.SafeDumper if key in safe and safe[key] == value else UnsafeDumper
        parts.append(yaml.dump({key: value}, Dumper=dumper, default_flow_style=False))
    return "".join(parts)


def inventory_script(path):
    """The lab inventory in the form AWX gives a job: an executable that
    prints the inventory's groups, their hosts and vars, and _meta.hostvars."""
    with open(path) as handle:
        tree = yaml.safe_load(handle)
    groups, hostvars = {}, {}

    def walk(name, group):
        group = group or {}
        entry = groups.setdefault(name, {"hosts": [], "children": [], "vars": {}})
        entry["vars"].update(group.get("vars") or {})
        for host, host_vars in (group.get("hosts") or {}).items():
            entry["hosts"].append(host)
            hostvars.setdefault(host, {}).update(host_vars or {})
        for child, child_group in (group.get("children") or {}).items():
            entry["children"].append(child)
            walk(child, child_group)

    walk("all", tree["all"])
    groups["_meta"] = {"hostvars": hostvars}
    return "#! /usr/bin/env python3\n# -*- coding: utf-8 -*-\nprint(%r)\n" % json.dumps(groups)


def private_data_dir(base, job_id, lab, extra_vars, safe_vars=None, check=False):
    """A job's private data dir, laid out as AWX's task manager writes it."""
    pdd = os.path.join(str(base), "job-%s" % job_id)
    shutil.copytree(os.path.join(ROOT, "playbooks"), os.path.join(pdd, "project", "playbooks"))
    os.makedirs(os.path.join(pdd, "inventory"))
    hosts = os.path.join(pdd, "inventory", "hosts")
    with open(hosts, "w") as handle:
        handle.write(inventory_script(LAB_INVENTORY))
    os.chmod(hosts, 0o700)
    os.makedirs(os.path.join(pdd, "env"))
    ansible_home = os.path.join(str(base), "ansible-home")
    envvars = {
        "PATH": BIN + os.pathsep + SYSTEM_PATH,
        "ANSIBLE_COLLECTIONS_PATH": os.path.join(ROOT, "collections"),
        "ANSIBLE_HOME": ansible_home,
        # Module files go to the remote user's ~/.ansible/tmp otherwise, even
        # with a local connection (ANSIBLE_HOME does not move it).
        "ANSIBLE_REMOTE_TMP": os.path.join(ansible_home, "remote-tmp"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_HOST_KEY_CHECKING": "False",
        "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
        "ANSIBLE_LOCALHOST_WARNING": "False",
        "JOB_ID": str(job_id),
        "INVENTORY_ID": "1",
    }
    envvars.update({key: value for key, value in lab.items() if key.startswith("K8S_AUTH_")})
    if "K8S_AUTH_KUBECONFIG" not in envvars:
        pytest.fail("lab.env has no K8S_AUTH_KUBECONFIG", pytrace=False)
    meta = {"awx_job_id": int(job_id), "awx_user_name": "approver", "awx_job_launch_type": "workflow"}
    files = {
        "envvars": yaml.safe_dump(envvars, default_flow_style=False),
        "extravars": extravars_yaml(dict(meta, **extra_vars), safe_vars),
        "settings": yaml.safe_dump({"job_timeout": JOB_TIMEOUT, "suppress_ansible_output": True,
                                    "suppress_output_file": True}),
        # What AWX's build_args gives here (no machine credential, local
        # connection): --check for a check job, else nothing to add.
        "cmdline": "--check" if check else "",
    }
    for name, text in files.items():
        with open(os.path.join(pdd, "env", name), "w") as handle:
            handle.write(text)
    return pdd


def read(path):
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return handle.read().strip()


class Job:
    """One job's run through transmit | worker | process and what process
    left in the private data dir."""

    def __init__(self, pdd, ident, worker_dir, rcs, stdout, stderrs):
        self.pdd, self.ident, self.worker_dir = pdd, ident, worker_dir
        self.rcs, self.stdout, self.stderrs = rcs, stdout, stderrs
        self.artifacts = os.path.join(pdd, "artifacts", ident)
        self.events = []
        for path in glob.glob(os.path.join(self.artifacts, "job_events", "*.json")):
            with open(path) as handle:
                self.events.append(json.load(handle))
        self.events.sort(key=lambda event: event.get("counter", 0))
        status = os.path.join(self.artifacts, "status")
        self.status = read(status)
        self.rc = read(os.path.join(self.artifacts, "rc"))
        # The command the worker ran and its working dir, streamed back.
        command = read(os.path.join(self.artifacts, "command"))
        self.command = json.loads(command) if command else {}

    @property
    def output(self):
        """The job's output as AWX shows it: the events' stdout in order."""
        return "\n".join(event.get("stdout", "") for event in self.events if event.get("stdout"))

    def stats_artifacts(self):
        stats = [event for event in self.events if event.get("event") == "playbook_on_stats"]
        assert len(stats) == 1, "%d playbook_on_stats events\n%s" % (len(stats), self.diagnosis())
        return stats[0]["event_data"].get("artifact_data") or {}

    def diagnosis(self):
        parts = ["exit codes transmit/worker/process: %s, status %s, rc %s" % (self.rcs, self.status, self.rc),
                 "command: %s" % self.command.get("command"),
                 "--- process stdout (tail)\n" + self.stdout[-TAIL:]]
        parts += ["--- %s stderr (tail)\n%s" % (step, text[-TAIL:]) for step, text in self.stderrs.items() if text]
        daemon_log = read(os.path.join(self.pdd, "daemon.log"))
        if daemon_log:
            parts.append("--- daemon.log (tail)\n" + daemon_log[-TAIL:])
        return "\n".join(parts)


def run_job(base, pdd, ident, playbook):
    """transmit | worker | process, as AWX and receptor run them."""
    logs = os.path.join(str(base), "logs-%s" % ident)
    os.makedirs(logs)
    worker_dir = os.path.join(str(base), "execution-node", ident)
    # The execution node's own environment: nothing of the test's leaks in.
    worker_home = os.path.join(str(base), "execution-node", "home")
    os.makedirs(worker_home, exist_ok=True)
    worker_env = {"PATH": BIN + os.pathsep + SYSTEM_PATH, "HOME": worker_home, "LANG": "C.UTF-8"}
    control_env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", SYSTEM_PATH))
    err = {step: open(os.path.join(logs, step + ".err"), "w+") for step in ("transmit", "worker", "process")}
    transmit = subprocess.Popen([RUNNER, "transmit", pdd, "-p", playbook, "-i", ident],
                                stdout=subprocess.PIPE, stderr=err["transmit"], env=control_env)
    worker = subprocess.Popen([RUNNER, "worker", "--private-data-dir", worker_dir, "--delete"],
                              stdin=transmit.stdout, stdout=subprocess.PIPE, stderr=err["worker"], env=worker_env)
    transmit.stdout.close()
    process = subprocess.Popen([RUNNER, "process", pdd, "-i", ident], stdin=worker.stdout,
                               stdout=subprocess.PIPE, stderr=err["process"], env=control_env, text=True)
    worker.stdout.close()
    try:
        stdout, _stderr = process.communicate(timeout=JOB_TIMEOUT + 60)
    except subprocess.TimeoutExpired:
        for step in (transmit, worker, process):
            step.kill()
        stdout, _stderr = process.communicate()
    rcs = (transmit.wait(), worker.wait(), process.returncode)
    stderrs = {}
    for step, handle in err.items():
        handle.seek(0)
        stderrs[step] = handle.read()
        handle.close()
    return Job(pdd, ident, worker_dir, rcs, stdout, stderrs)


def task_events(job, actions):
    """The events of tasks whose module is one of `actions`."""
    return [event for event in job.events
            if str(event.get("event_data", {}).get("task_action", "")).rsplit(".", 1)[-1] in actions]


@pytest.fixture(scope="module")
def jobs_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("awx-jobs")


@pytest.fixture(scope="module")
def recommended(jobs_dir, lab):
    """The recommend job, run once for the module, and the plan.json it wrote."""
    plan_dir = os.path.join(str(jobs_dir), "plans")
    # The job template's extra vars (awx_recommend_vars): not tagged !unsafe.
    template_vars = {"samples": 2, "interval": 1, "kubernetes": True, "plan_dir": plan_dir}
    pdd = private_data_dir(jobs_dir, 101, lab, template_vars, safe_vars=template_vars)
    job = run_job(jobs_dir, pdd, "101", "playbooks/recommend.yml")
    plan_file = os.path.join(plan_dir, "plan.json")
    written = None
    if os.path.exists(plan_file):
        with open(plan_file) as handle:
            written = json.load(handle)
    return job, written


def apply_job(jobs_dir, lab, job_id, plan):
    """An apply_plan check job with the plan as the workflow passes it."""
    extra_vars = {"overcommit_plan": plan, "requested_by": "approver@test"}
    pdd = private_data_dir(jobs_dir, job_id, lab, extra_vars, check=True)
    return run_job(jobs_dir, pdd, str(job_id), "playbooks/apply_plan.yml")


def test_recommend_hands_its_plan_on_through_the_runner_artifacts(recommended):
    job, written = recommended
    assert job.rcs == (0, 0, 0), job.diagnosis()
    assert job.status == "successful" and job.rc == "0", job.diagnosis()
    # ansible-playbook ran in the worker's unpacked copy of the private data
    # dir, from project/, and the worker removed that copy afterwards.
    assert job.command["cwd"] == os.path.join(job.worker_dir, "project"), job.diagnosis()
    assert job.command["command"][0] == "ansible-playbook", job.diagnosis()
    assert job.command["command"][-1] == "playbooks/recommend.yml", job.diagnosis()
    assert os.path.join(job.worker_dir, "inventory") in job.command["command"], job.diagnosis()
    assert not os.path.exists(job.worker_dir)
    # The worker streamed the job's whole event stream back: it ends with the stats.
    assert job.events and job.events[-1]["event"] == "playbook_on_stats", job.diagnosis()
    artifacts = job.stats_artifacts()
    assert set(artifacts) == {"overcommit_plan"}, job.diagnosis()
    plan = artifacts["overcommit_plan"]
    assert plan["id"].startswith("plan-"), plan
    assert plan["version"] == 1, plan
    assert plan["expires_unix"] > plan["created_unix"], plan
    assert isinstance(plan["actions"], list), plan
    assert written is not None, "recommend wrote no plan.json\n" + job.diagnosis()
    assert written["id"] == plan["id"]
    assert written == plan
    assert "plan %s (may be applied until" % plan["id"] in job.output, job.diagnosis()


def test_apply_plan_takes_the_plan_as_a_workflow_passes_it(recommended, jobs_dir, lab):
    plan = recommended[0].stats_artifacts().get("overcommit_plan")
    assert plan, "no plan from the recommend job\n" + recommended[0].diagnosis()
    job = apply_job(jobs_dir, lab, 102, plan)
    assert "--check" in job.command.get("command", []), job.diagnosis()
    applied = job.stats_artifacts().get("overcommit_plan_applied")
    assert applied, job.diagnosis()
    assert applied["plan"] == plan["id"], applied
    outcome = applied["applied"] + applied["done"] + applied["refused"] + applied["failed"]
    assert sorted(outcome) == sorted(action["object"] for action in plan["actions"]), applied
    assert applied["failed"] == [], applied
    assert '"plan %s"' % plan["id"] in job.output, job.diagnosis()
    if applied["refused"]:
        # An object of the plan changed between the two jobs (another run
        # throttled a guest or gated the node meanwhile): apply_plan refuses
        # that action and, fail_on_refused being its default, fails the job
        # after the rest, which AWX shows as a failed job.
        assert job.status == "failed" and job.rcs == (0, int(job.rc), 0) and job.rc != "0", job.diagnosis()
        assert "%d refused" % len(applied["refused"]) in job.output, job.diagnosis()
    else:
        assert job.rcs == (0, 0, 0), job.diagnosis()
        assert job.status == "successful" and job.rc == "0", job.diagnosis()


def test_an_expired_plan_fails_the_job_before_any_change(recommended, jobs_dir, lab):
    plan = copy.deepcopy(recommended[0].stats_artifacts().get("overcommit_plan"))
    assert plan, "no plan from the recommend job\n" + recommended[0].diagnosis()
    plan["expires_unix"] = plan["created_unix"] - 1
    job = apply_job(jobs_dir, lab, 103, plan)
    # transmit and process end well; the worker exits with ansible-playbook's
    # rc, and the job's status says it failed (what AWX shows).
    assert job.rcs[0] == 0 and job.rcs[2] == 0, job.diagnosis()
    assert job.status == "failed", job.diagnosis()
    assert job.rc not in (None, "0") and job.rcs[1] == int(job.rc), job.diagnosis()
    assert "plan %s expired" % plan["id"] in job.output, job.diagnosis()
    assert "expired" in job.stdout, job.diagnosis()
    # Refused before anything: no task of a module that changes anything ran.
    assert task_events(job, CHANGING_ACTIONS) == [], job.diagnosis()
    assert "overcommit_plan_applied" not in job.stats_artifacts(), job.diagnosis()
