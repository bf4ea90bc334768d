"""The CI pipeline examples of docs/ci/ are valid pipelines of their
platforms: checked against the schemas GitHub Actions and GitLab CI publish,
as check-jsonschema ships them (--builtin-schema, offline). That their
ansible-playbook steps run is an integration test
(tests/integration/stage2/test_ci_examples_run.py)."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir))
TOOL = os.path.join(os.path.dirname(sys.executable), "check-jsonschema")


@pytest.mark.parametrize("example, schema", [
    ("github-actions-stage2.yml", "vendor.github-workflows"),
    ("gitlab-ci-stage2.yml", "vendor.gitlab-ci"),
])
def test_the_pipeline_example_is_valid_for_its_platform(example, schema):
    checked = subprocess.run([TOOL, "--builtin-schema", schema, os.path.join(ROOT, "docs", "ci", example)],
                             capture_output=True, text=True, timeout=120, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_broken_pipeline_is_refused(tmp_path):
    # The check can fail: steps that are not a list make no GitHub workflow.
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  recommend:\n    runs-on: ubuntu-latest\n    steps: ansible-playbook\n")
    checked = subprocess.run([TOOL, "--builtin-schema", "vendor.github-workflows", str(broken)],
                             capture_output=True, text=True, timeout=120, check=False)
    assert checked.returncode != 0


def test_the_requirements_example_installs_the_version_the_collection_is():
    """docs/ci/requirements.yml, which both pipelines install from, names
    the collection at the version galaxy.yml gives it."""
    import yaml
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        version = yaml.safe_load(handle)["version"]
    with open(os.path.join(ROOT, "docs", "ci", "requirements.yml")) as handle:
        requirements = yaml.safe_load(handle)
    (entry,) = requirements["collections"]
    assert entry["type"] == "git" and entry["name"].endswith(".git") and entry["version"] == version, entry
    with open(os.path.join(ROOT, "docs", "ci", "requirements.yml")) as handle:
        text = handle.read()
    assert "overcommit-control-%s.tar.gz" % version in text
    for example in ("github-actions-stage2.yml", "gitlab-ci-stage2.yml"):
        with open(os.path.join(ROOT, "docs", "ci", example)) as handle:
            assert "collection install -r collections/requirements.yml" in handle.read()
