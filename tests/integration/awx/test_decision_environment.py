"""The decision environment eda-server runs the collection's rulebooks in:
decision-environment.yml at the repository root (ansible-builder 3), checked
without a container runtime, as test_execution_environment checks the
execution environment.

`ansible-builder create` runs on a copy of the definition beside the
collection's tarball built from this checkout, as docs/eda.md tells a user
to run it. Then the two steps of the image build that need no container run
as the Containerfile runs them, with the context's own files: the galaxy
stage's `ansible-galaxy collection install -r requirements.yml`, and the
builder stage's `introspect.py introspect`, whose output is what the image
installs: ansible-rulebook and Java 17, and none of the modules' own
packages (libvirt-python and its build packages, kubernetes, pyvmomi), which
the execution environment carries. Building the image needs podman or docker
and is not run; neither is ansible-rulebook inside it (the lab runs it on
Debian's Java 17: tests/integration/eda)."""

import os
import shutil
import sys

import pytest
import yaml

from builder_tools import BIN, pins, run
from run_module import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.isolated]

DEFINITION = os.path.join(ROOT, "decision-environment.yml")


def load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    folder = tmp_path_factory.mktemp("de")
    shutil.copy(DEFINITION, str(folder))
    rc, out = run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--force", ROOT], str(folder))
    assert rc == 0, out
    rc, out = run([os.path.join(BIN, "ansible-builder"), "create", "--file", "decision-environment.yml",
                   "--output-filename", "Containerfile", "-v", "3"], str(folder))
    assert rc == 0 and "does not exist" not in out, out
    return folder / "context"


def test_definition_pins_what_the_project_tests_with_and_names_this_version_s_tarball():
    definition, pinned = load(DEFINITION), pins()
    dependencies = definition["dependencies"]
    assert definition["version"] == 3
    assert dependencies["ansible_core"]["package_pip"] == "ansible-core==" + pinned["ansible-core"]
    assert dependencies["ansible_runner"]["package_pip"] == "ansible-runner==" + pinned["ansible-runner"]
    assert dependencies["python"] == ["ansible-rulebook==" + pinned["ansible-rulebook"]]
    tarball = "overcommit-control-%s.tar.gz" % load(os.path.join(ROOT, "galaxy.yml"))["version"]
    assert dependencies["galaxy"]["collections"] == [{"name": "collections/" + tarball, "type": "file"}]
    assert definition["additional_build_files"] == [{"src": tarball, "dest": "collections"}]


def test_the_image_gets_ansible_rulebook_java_17_and_the_collection_but_not_the_modules_packages(context):
    containerfile = (context / "Containerfile").read_text()
    assert "--exclude-collection-reqs=exclude-collections.txt" in containerfile
    lines = containerfile.splitlines()
    # The rule engine's JVM is found in the image that runs (the final stage).
    assert lines.index("ENV JAVA_HOME=/usr/lib/jvm/jre-17-openjdk") > lines.index("FROM base AS final")
    build = context / "_build"
    collections = build.parent.parent / "installed"
    rc, out = run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "-r", "requirements.yml",
                   "--collections-path", str(collections / "ansible_collections"), "--offline"], str(build),
                  ANSIBLE_GALAXY_DISABLE_GPG_VERIFY="1", ANSIBLE_COLLECTIONS_PATH=str(collections))
    assert rc == 0, out
    installed = collections / "ansible_collections" / "overcommit" / "control"
    assert (installed / "extensions" / "eda" / "plugins" / "event_source" / "alertmanager.py").exists()
    assert (installed / "extensions" / "eda" / "rulebooks" / "closed_loop_alerts.yml").exists()
    output = build.parent.parent / "src"
    output.mkdir()
    rc, out = run([sys.executable, str(build / "scripts" / "introspect.py"), "introspect",
                   "--user-pip=requirements.txt", "--user-bindep=bindep.txt",
                   "--exclude-collection-reqs=exclude-collections.txt", "--write-bindep=%s" % (output / "bindep.txt"),
                   "--write-pip=%s" % (output / "requirements.txt"), str(collections)], str(build))
    assert rc == 0, out
    pip = [line.split("#")[0].strip() for line in (output / "requirements.txt").read_text().splitlines() if line]
    bindep = [line.split("#")[0].strip() for line in (output / "bindep.txt").read_text().splitlines() if line]
    assert pip == ["ansible-rulebook==" + pins()["ansible-rulebook"]], pip
    assert bindep == ["java-17-openjdk-headless [platform:rpm]"], bindep
