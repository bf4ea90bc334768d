"""playbooks/awx_configure.yml, which configures an AWX with awx.awx, checked
without an AWX: ansible-playbook's syntax check; what the playbook creates,
read from its YAML (every job template's playbook is in playbooks/, the
surveys ask for variables the playbooks read, the stage 2 workflow puts an
approval between recommend and apply_plan, apply_plan takes the plan's extra
vars on launch, the schedules and the closed loop are off unless switched on,
the pinned awx.awx is the one installed); and a check-mode run against a
loopback port where nothing listens, which must fail with awx.awx's connection
error, not a traceback. Runs with the tests' ANSIBLE_HOME and
ANSIBLE_COLLECTIONS_PATH (scripts/lib.sh); writes nothing to ~/.ansible."""

import json
import os
import re
import socket
import subprocess
import sys

import jinja2
import pytest
import yaml

import playbook_forkserver
from run_module import ROOT

pytestmark = pytest.mark.isolated

BIN = os.path.dirname(sys.executable)
PLAYBOOKS = os.path.join(ROOT, "playbooks")
PLAYBOOK = os.path.join(PLAYBOOKS, "awx_configure.yml")
REQUIREMENTS = os.path.join(ROOT, "meta", "awx-requirements.yml")
WORKFLOW_TYPES = {"job_template", "workflow_approval"}
SURVEY_TYPES = {"text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect"}
REQUIRED_VARS = {"awx_project_scm_url": "https://git.example.invalid/platform/overcommit-control.git",
                 "awx_inventory": "Hypervisors", "awx_machine_credential": "Hypervisor SSH"}


class Loader(yaml.SafeLoader):
    """YAML of a playbook: !unsafe strings are kept as they are."""


Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def load(path):
    with open(path) as handle:
        return yaml.load(handle, Loader=Loader)  # noqa: S506 - a SafeLoader with one more tag


def environment(**extra):
    """The caller's environment without any AWX connection of its own, with
    the tests' Ansible paths (required: nothing may go to ~/.ansible)."""
    for name in ("ANSIBLE_HOME", "ANSIBLE_COLLECTIONS_PATH"):
        if not os.environ.get(name):
            pytest.fail("%s is not set: run with scripts/lib.sh's %s" % (
                name, "ANSIBLE_HOME_DIR" if name == "ANSIBLE_HOME" else "COLLECTIONS_DIR"), pytrace=False)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CONTROLLER_", "TOWER_"))}
    env.update(PATH=BIN + os.pathsep + os.environ.get("PATH", ""), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    env.update(extra)
    return env


def ansible_playbook(*args, env=None, cwd=None):
    completed = playbook_forkserver.run([os.path.join(BIN, "ansible-playbook"), *args], env=env or environment(),
                                        cwd=cwd, timeout=300)
    return completed.returncode, completed.stdout + completed.stderr


@pytest.fixture(scope="module")
def play():
    plays = load(PLAYBOOK)
    assert len(plays) == 1 and plays[0]["hosts"] == "localhost"
    return plays[0]


def tasks_of(play, module):
    return [task for task in play["tasks"] if "awx.awx." + module in task]


def job_templates(play):
    """Job template name -> (its task's arguments, its task's `when` or None)."""
    return {task["awx.awx.job_template"]["name"]: (task["awx.awx.job_template"], task.get("when"))
            for task in tasks_of(play, "job_template")}


def code_of(playbook):
    """The playbook's text without its comments: what it reads, not what it says."""
    with open(os.path.join(ROOT, playbook)) as handle:
        return "\n".join(line for line in handle.read().splitlines() if not line.lstrip().startswith("#"))


def switched_off(play, when):
    """Whether `when` is one switch (`awx_x | bool`) that defaults to false."""
    match = re.fullmatch(r"(awx_\w+) \| bool", (when or "").strip())
    return bool(match) and play["vars"].get(match.group(1)) is False


def test_syntax_check_passes():
    code, output = ansible_playbook("--syntax-check", PLAYBOOK)
    assert code == 0, output[-3000:]


def test_every_job_templates_playbook_is_in_playbooks(play):
    templates = job_templates(play)
    assert {"overcommit throttle", "overcommit restore", "overcommit recommend", "overcommit apply_plan",
            "overcommit closed_loop"} <= set(templates)
    missing = []
    for name, (template, when) in templates.items():
        assert template["playbook"].startswith("playbooks/"), name
        if os.path.isfile(os.path.join(ROOT, template["playbook"])):
            continue
        # A playbook still to come is allowed only behind a switch that is off by default.
        if not switched_off(play, when):
            missing.append("%s: %s" % (name, template["playbook"]))
    assert not missing, "job templates whose playbook is not in playbooks/: %s" % missing


def test_stage_3_is_behind_a_switch_that_is_off(play):
    assert play["vars"]["awx_closed_loop_enabled"] is False
    closed_loop = [task for task in play["tasks"] if "closed_loop" in json.dumps(task)]
    assert len(closed_loop) == 2, [task["name"] for task in closed_loop]
    for task in closed_loop:
        assert task.get("when") == "awx_closed_loop_enabled | bool", task["name"]
    for task in play["tasks"]:
        if task not in closed_loop:
            assert "when" not in task, task["name"]


@pytest.mark.parametrize("name", ["overcommit throttle", "overcommit restore", "overcommit apply_plan"])
def test_survey_variables_are_read_by_the_playbook(play, name):
    template, _when = job_templates(play)[name]
    assert template["survey_enabled"] is True
    questions = template["survey_spec"]["spec"]
    assert template["survey_spec"]["name"] and template["survey_spec"]["description"]
    path = os.path.join(ROOT, template["playbook"])
    if not os.path.isfile(path):
        pytest.fail("%s is not there yet (test_every_job_templates_playbook_is_in_playbooks says so too)"
                    % template["playbook"])
    code = code_of(template["playbook"])
    for question in questions:
        assert question["type"] in SURVEY_TYPES, question
        assert question["question_name"] and isinstance(question["required"], bool), question
        assert re.search(r"\b%s\b" % re.escape(question["variable"]), code), (
            "%s asks for %s, which %s does not read" % (name, question["variable"], template["playbook"]))
        if question["type"] in ("multiplechoice", "multiselect"):
            assert question["choices"] and question.get("default", question["choices"][0]) in question["choices"]
        # A newline-separated answer is one string the playbooks do not split: a list variable
        # is asked as text, names separated by commas (Ansible's string to list conversion).
        assert question["type"] != "textarea", "%s: %s" % (name, question["variable"])
    assert len({question["variable"] for question in questions}) == len(questions)


@pytest.mark.parametrize("name", ["overcommit throttle", "overcommit restore"])
def test_surveys_require_what_the_playbook_requires(play, name):
    """Variables the playbook's first check requires (playbook_input's
    `required`) are required questions without a default; any other
    required question has a default; every question is a variable the
    playbook reads."""
    template, _when = job_templates(play)[name]
    first = load(os.path.join(ROOT, template["playbook"]))[0]
    check = first["tasks"][0]["overcommit.control.playbook_input"]
    required = set(check.get("required") or [])
    questions = {question["variable"]: question for question in template["survey_spec"]["spec"]}
    assert required <= set(questions), required - set(questions)
    for variable, question in questions.items():
        if variable in required:
            assert question["required"] is True and "default" not in question, variable
        elif question["required"]:
            # Required by the survey only: it must have an answer ready.
            assert "default" in question, variable
    assert set(questions) <= set(check["variables"]), set(questions) - set(check["variables"])


def test_apply_plan_takes_the_plan_as_extra_vars_on_launch(play):
    template, when = job_templates(play)["overcommit apply_plan"]
    assert when is None
    assert template["ask_variables_on_launch"] is True
    assert template["playbook"] == "playbooks/apply_plan.yml"
    recommend, _when = job_templates(play)["overcommit recommend"]
    assert recommend["playbook"] == "playbooks/recommend.yml"


def test_the_workflow_approves_between_recommend_and_apply_plan(play):
    (task,) = tasks_of(play, "workflow_job_template")
    workflow = task["awx.awx.workflow_job_template"]
    nodes = {node["identifier"]: node for node in workflow["workflow_nodes"]}
    templates = {name for name, (_template, when) in job_templates(play).items() if when is None}
    by_template = {}
    for identifier, node in nodes.items():
        unified = node["unified_job_template"]
        assert unified["type"] in WORKFLOW_TYPES, identifier
        if unified["type"] == "job_template":
            assert unified["name"] in templates, "%s runs %s, which the playbook does not create" % (
                identifier, unified["name"])
        by_template.setdefault(unified["name"], []).append(identifier)
    assert set(by_template) == {"overcommit recommend", "Approve the recommended plan", "overcommit apply_plan"}

    def children(identifier, kinds=("success_nodes", "failure_nodes", "always_nodes")):
        related = nodes[identifier].get("related") or {}
        return {child["identifier"] for kind in kinds for child in related.get(kind) or []}

    for identifier in nodes:
        assert children(identifier) <= set(nodes), identifier
    (recommend,) = by_template["overcommit recommend"]
    (approve,) = by_template["Approve the recommended plan"]
    (apply_plan,) = by_template["overcommit apply_plan"]
    assert nodes[approve]["unified_job_template"]["type"] == "workflow_approval"
    assert children(recommend) == {approve} == children(recommend, ("success_nodes",))
    assert children(approve) == {apply_plan} == children(approve, ("success_nodes",))
    assert children(apply_plan) == set()
    assert [identifier for identifier in nodes if apply_plan in children(identifier)] == [approve]


def test_the_approval_waits_as_long_as_the_plan_lives(play):
    (task,) = tasks_of(play, "workflow_job_template")
    approval = [node["unified_job_template"] for node in task["awx.awx.workflow_job_template"]["workflow_nodes"]
                if node["unified_job_template"]["type"] == "workflow_approval"][0]
    variables = play["vars"]
    render = jinja2.Environment(undefined=jinja2.StrictUndefined)
    timeout = render.from_string(variables["awx_approval_timeout"]).render(awx_recommend_vars={})
    assert timeout == "3600"
    assert render.from_string(approval["timeout"]).render(awx_approval_timeout=timeout) == "3600"
    assert "recommend" in approval["description"] and "plan_dir" in variables["awx_plan_page"]


def test_schedules_exist_but_do_not_run_by_default(play):
    (workflow,) = tasks_of(play, "workflow_job_template")
    workflow_name = workflow["awx.awx.workflow_job_template"]["name"]
    schedules = {task["awx.awx.schedule"]["unified_job_template"]: task["awx.awx.schedule"]
                 for task in tasks_of(play, "schedule")}
    assert set(schedules) == {workflow_name, "overcommit closed_loop"}
    variables = play["vars"]
    for schedule in schedules.values():
        switch = re.fullmatch(r"\{\{ (awx_\w+) \| bool \}\}", schedule["enabled"])
        assert switch and variables[switch.group(1)] is False, schedule["name"]
        rrule = re.fullmatch(r"\{\{ (awx_\w+) \}\}", schedule["rrule"])
        assert rrule and re.fullmatch(r"DTSTART:\d{8}T\d{6}Z RRULE:FREQ=MINUTELY;INTERVAL=\d+",
                                      variables[rrule.group(1)]), schedule["name"]
    assert variables["awx_recommend_rrule"].endswith("INTERVAL=30")


def test_variables_are_prefixed_and_the_connection_is_not_written(play):
    assert all(name.startswith("awx_") for name in play["vars"])
    with open(PLAYBOOK) as handle:
        text = handle.read()
    assert not re.search(r"^\s*controller_(host|username|password|oauthtoken)\s*:", text, re.MULTILINE)


def test_the_pinned_awx_collection_is_the_installed_one():
    pins = [entry for entry in load(REQUIREMENTS)["collections"] if entry["name"] == "awx.awx"]
    assert len(pins) == 1 and re.fullmatch(r"\d+\.\d+\.\d+", pins[0]["version"]), pins
    completed = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "list", "awx.awx",
                                "--format", "json"], env=environment(), capture_output=True, text=True,
                               timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr[-2000:]
    installed = {path: found["awx.awx"]["version"] for path, found in json.loads(completed.stdout).items()
                 if "awx.awx" in found}
    assert installed, "awx.awx is not installed: ansible-galaxy collection install -r meta/awx-requirements.yml"
    assert set(installed.values()) == {pins[0]["version"]}, installed


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("auth", [{"CONTROLLER_OAUTH_TOKEN": "not-a-token"},
                                  {"CONTROLLER_USERNAME": "admin", "CONTROLLER_PASSWORD": "not-a-password"}],
                         ids=["token", "username"])
def test_without_a_controller_it_fails_with_awx_awxs_connection_error(tmp_path, auth):
    host = "https://127.0.0.1:%d" % free_port()
    env = environment(CONTROLLER_HOST=host, **auth)
    code, output = ansible_playbook(PLAYBOOK, "--check", "-e", json.dumps(REQUIRED_VARS), env=env, cwd=str(tmp_path))
    assert code == 2, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    assert "Connection refused" in output and "Ensure the organization exists" in output, output[-3000:]
    assert re.search(r"Failed to get token|error when trying to connect to %s" % re.escape(host), output), output[-3000:]
    assert "changed=0" in output and "ok=1 " in output, output[-3000:]


def test_without_its_variables_it_stops_before_calling_the_controller(tmp_path):
    env = environment(CONTROLLER_HOST="https://127.0.0.1:%d" % free_port(), CONTROLLER_OAUTH_TOKEN="not-a-token")
    code, output = ansible_playbook(PLAYBOOK, "--check", env=env, cwd=str(tmp_path))
    assert code == 2 and "Traceback" not in output, output[-3000:]
    assert "awx_configure.yml needs awx_project_scm_url" in output and "Connection refused" not in output, output
