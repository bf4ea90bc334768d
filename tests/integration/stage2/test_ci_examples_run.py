"""The ansible-playbook steps of the CI pipeline examples (docs/ci/) run as
written against the lab: the recommend job's command writes the plan and
its page into PLAN_DIR, and the apply job's command applies that plan, with
the variables each platform sets (GitHub's env, GitLab's predefined ones).
What the lab cannot have is said here: no GitHub or GitLab runner, so the
artifact hand-over between the jobs is the plan folder itself, and the
collection-install step is left out (the lab has this checkout installed).
The steps' INVENTORY is the lab's with its hypervisor standing for no node,
so that a plan can throttle only the lab's guests (this test's group) and
gate no node other tests use; whatever the plan applied is undone
afterwards."""

import json
import os
import re
import subprocess

import pytest
import yaml

from run_module import INVENTORY, ROOT, run_module

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("libvirt")]

HOST = "lab-hypervisor"


def playbook_commands(example):
    """{job: [its ansible-playbook command lines]} of a pipeline example."""
    with open(os.path.join(ROOT, "docs", "ci", example)) as handle:
        pipeline = yaml.safe_load(handle)
    jobs = pipeline.get("jobs") or dict((name, job) for name, job in pipeline.items()
                                        if isinstance(job, dict) and "script" in job)
    out = {}
    for name, job in jobs.items():
        lines = [step.get("run", "") for step in job.get("steps", [])] + list(job.get("script", []))
        out[name] = [line for line in lines if line.startswith("ansible-playbook ")]
    return out, pipeline


def run(line, folder, env):
    return subprocess.run(["bash", "-c", line], cwd=str(folder), env=env, capture_output=True, text=True,
                          timeout=600, check=False)


def inventory_without_node(folder):
    """The lab inventory, its hypervisor host standing for no Kubernetes node."""
    with open(os.path.join(INVENTORY, "hosts.yml")) as handle:
        inventory = yaml.safe_load(handle)
    inventory["all"]["children"]["hypervisors"]["hosts"][HOST].pop("kubernetes_node")
    path = os.path.join(str(folder), "hosts.yml")
    with open(path, "w") as handle:
        yaml.safe_dump(inventory, handle)
    return path


def undo(plan):
    for action in plan["actions"]:
        if action.get("vm") and action["action"] in ("throttle", "relax"):
            run_module("libvirt_cputune", {"domains": [action["vm"]], "state": "restored"}, host=HOST)


def test_the_recommend_and_apply_steps_of_both_pipelines_run_as_written(lab, tmp_path):
    github, github_pipeline = playbook_commands("github-actions-stage2.yml")
    gitlab, gitlab_pipeline = playbook_commands("gitlab-ci-stage2.yml")
    assert [len(github["recommend"]), len(github["apply"]), len(gitlab["recommend"]), len(gitlab["apply"])] == [1] * 4
    # The two pipelines recommend with the same command and variables: one run stands for both.
    assert github["recommend"] == gitlab["recommend"]
    variables = dict((key, github_pipeline["env"][key]) for key in ("INVENTORY", "PLAN_DIR"))
    assert variables == dict((key, gitlab_pipeline["variables"][key]) for key in ("INVENTORY", "PLAN_DIR"))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1",
               K8S_AUTH_KUBECONFIG=lab["OVERCOMMIT_KUBECONFIG_OPERATOR"], INVENTORY=inventory_without_node(tmp_path),
               PLAN_DIR=variables["PLAN_DIR"],
               # What each platform sets for the apply job.
               REQUESTED_BY="approver (GitHub run 1)", GITLAB_USER_LOGIN="approver", CI_JOB_ID="1")
    recommended = run(github["recommend"][0], tmp_path, env)
    assert recommended.returncode == 0, recommended.stdout[-3000:] + recommended.stderr[-2000:]
    plan_dir = tmp_path / variables["PLAN_DIR"]
    assert sorted(os.listdir(str(plan_dir))) == ["plan.html", "plan.json"]
    with open(str(plan_dir / "plan.json")) as handle:
        plan = json.load(handle)
    assert not [a for a in plan["actions"] if a.get("node")], plan["actions"]
    try:
        for command in (github["apply"][0], gitlab["apply"][0]):
            applied = run(command, tmp_path, env)
            assert applied.returncode == 0, applied.stdout[-3000:] + applied.stderr[-2000:]
            assert re.search(r"plan %s \(made" % re.escape(plan["id"]), applied.stdout), applied.stdout[-3000:]
    finally:
        undo(plan)
