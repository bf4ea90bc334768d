"""The execution environment AWX runs the collection in: execution-environment.yml
at the repository root (ansible-builder 3) with the collection's own
meta/execution-environment.yml, checked without a container runtime.

`ansible-builder create` runs on a copy of the definition in a temporary
folder, beside the collection's tarball built from this checkout, as docs/awx.md
tells a user to run it. The build context it writes is read: the Containerfile
(base image, pinned ansible-core and ansible-runner, the four stages), the
galaxy requirements and the tarball they name. The two steps of the image
build that need no container are then run as the Containerfile runs them, with
the context's own files: the galaxy stage's `ansible-galaxy collection install
-r requirements.yml` from _build/, and the builder stage's `introspect.py
introspect`, whose output is the merged Python and system requirements the
image installs (ansible-builder 3 merges a collection's requirements during
the build, not in `create`). bindep reads that merged file on this Debian
machine, whose packages for libvirt-python (scripts/bootstrap installs them)
must be the ones the file names. Building the image itself needs podman or
docker and is not run."""

import json
import os
import re
import shutil
import sys
import tarfile

import pytest
import yaml
from packaging.requirements import Requirement

from builder_tools import BIN, pins, run
from run_module import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.isolated]

DEFINITION = os.path.join(ROOT, "execution-environment.yml")
COLLECTION_EE = os.path.join(ROOT, "meta", "execution-environment.yml")
# What the modules import at run time (plugins/module_utils/*/client.py).
RUNTIME_PYTHON = {"kubernetes", "pyvmomi", "libvirt-python"}


def galaxy_version():
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)["version"]


def requirement_lines(path):
    """The requirement lines of a pip or bindep file, comments dropped."""
    with open(path) as handle:
        lines = [line.split("#", 1)[0].strip() for line in handle]
    return [line for line in lines if line]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The build context `ansible-builder create` writes from a copy of the
    definition beside the collection's tarball: (folder, context)."""
    folder = tmp_path_factory.mktemp("ee")
    shutil.copy(DEFINITION, folder)
    rc, out = run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--force", ROOT], str(folder))
    assert rc == 0, out
    rc, out = run([os.path.join(BIN, "ansible-builder"), "create", "--output-filename", "Containerfile", "-v", "3"],
                  str(folder))
    assert rc == 0, out
    assert "No matches for" not in out and "does not exist" not in out, out
    return folder, folder / "context"


@pytest.fixture(scope="module")
def definition():
    with open(DEFINITION) as handle:
        return yaml.safe_load(handle)


def test_definition_is_version_3_with_the_pins_of_requirements_txt(definition):
    pinned = pins()
    assert definition["version"] == 3
    dependencies = definition["dependencies"]
    assert dependencies["ansible_core"]["package_pip"] == "ansible-core==" + pinned["ansible-core"]
    assert dependencies["ansible_runner"]["package_pip"] == "ansible-runner==" + pinned["ansible-runner"]
    # The tarball named is the one `ansible-galaxy collection build` writes for galaxy.yml's version.
    tarball = "overcommit-control-%s.tar.gz" % galaxy_version()
    assert dependencies["galaxy"]["collections"] == [{"name": "collections/" + tarball, "type": "file"}]
    assert definition["additional_build_files"] == [{"src": tarball, "dest": "collections"}]
    # The interpreter installed is the one whose headers libvirt-python compiles against.
    interpreter = dependencies["python_interpreter"]
    assert interpreter["python_path"] == "/usr/bin/" + interpreter["package_system"]
    assert dependencies["system"] == ["%s-devel [compile platform:rpm]" % interpreter["package_system"]]


def test_collection_metadata_names_its_runtime_requirements():
    with open(COLLECTION_EE) as handle:
        meta = yaml.safe_load(handle)
    assert meta["dependencies"] == {"python": "meta/ee-requirements.txt", "system": "meta/ee-bindep.txt"}
    python = requirement_lines(os.path.join(ROOT, meta["dependencies"]["python"]))
    assert {Requirement(line).name for line in python} == RUNTIME_PYTHON
    # Only what the modules need: none of the test tooling of requirements.txt.
    for tool in ("ansible-lint", "molecule", "pytest", "ansible-builder", "antsibull-docs", "sphinx", "ansible"):
        assert tool not in {Requirement(line).name for line in python}
    # The versions the project tests with satisfy the collection's requirements.
    pinned = pins()
    for line in python:
        requirement = Requirement(line)
        assert requirement.specifier.contains(pinned[requirement.name]), (line, pinned[requirement.name])


def test_containerfile(built, definition):
    folder, context = built
    assert sorted(os.listdir(context)) == ["Containerfile", "_build"]
    containerfile = (context / "Containerfile").read_text()
    pinned = pins()
    assert 'ARG EE_BASE_IMAGE="%s"' % definition["images"]["base_image"]["name"] in containerfile
    assert 'ARG ANSIBLE_INSTALL_REFS="ansible-core==%s ansible-runner==%s"' % (
        pinned["ansible-core"], pinned["ansible-runner"]) in containerfile
    assert 'ARG PYCMD="/usr/bin/python3.11"' in containerfile
    stages = re.findall(r"^FROM (\S+) AS (\w+)$", containerfile, re.M)
    assert stages == [("$EE_BASE_IMAGE", "base"), ("base", "galaxy"), ("base", "builder"), ("base", "final")]
    lines = containerfile.splitlines()
    # CRB (libvirt-devel) is enabled in the base stage, before anything is installed.
    crb = lines.index("RUN $PKGMGR install -y dnf-plugins-core && $PKGMGR config-manager --set-enabled crb"
                      " && $PKGMGR clean all")
    assert crb < lines.index("RUN $PYCMD -m pip install --no-cache-dir $ANSIBLE_INSTALL_REFS")
    assert ("RUN ANSIBLE_GALAXY_DISABLE_GPG_VERIFY=1 ansible-galaxy collection install "
            '$ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml --collections-path "/usr/share/ansible/collections"'
            in lines)
    assert ("RUN $PYCMD /output/scripts/introspect.py introspect --user-bindep=bindep.txt "
            "--write-bindep=/tmp/src/bindep.txt --write-pip=/tmp/src/requirements.txt" in lines)
    assert "COPY --from=galaxy /usr/share/ansible /usr/share/ansible" in lines
    assert "RUN /output/scripts/install-from-bindep && rm -rf /output/wheels" in lines
    assert "LABEL ansible-execution-environment=true" in lines


def test_build_context_holds_the_collection_tarball(built):
    folder, context = built
    build = context / "_build"
    with open(build / "requirements.yml") as handle:
        galaxy = yaml.safe_load(handle)
    version = galaxy_version()
    assert galaxy == {"collections": [{"name": "collections/overcommit-control-%s.tar.gz" % version, "type": "file"}]}
    tarball = build / galaxy["collections"][0]["name"]
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
        manifest = json.load(archive.extractfile("MANIFEST.json"))
    info = manifest["collection_info"]
    assert (info["namespace"], info["name"], info["version"]) == ("overcommit", "control", version)
    # What ansible-builder reads from the installed collection is in the tarball (not build_ignore'd).
    assert {"meta/execution-environment.yml", "meta/ee-requirements.txt", "meta/ee-bindep.txt",
            "meta/runtime.yml", "plugins/modules/libvirt_cputune.py"} <= names
    assert (build / "bindep.txt").read_text().strip() == "python3.11-devel [compile platform:rpm]"
    assert not (build / "requirements.txt").exists()  # no Python requirements beyond the collection's
    assert sorted(os.listdir(build / "scripts")) == sorted(
        ["assemble", "check_ansible", "check_galaxy", "entrypoint", "install-from-bindep", "introspect.py",
         "pip_install"])


@pytest.fixture(scope="module")
def merged(built, tmp_path_factory):
    """The galaxy and builder stages' steps run here from the context's files:
    the collection installed from _build/requirements.yml, then the merged
    requirements written by the context's introspect.py: (collections, pip, bindep)."""
    folder, context = built
    build = context / "_build"
    collections = tmp_path_factory.mktemp("ee-collections")
    rc, out = run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "-r", "requirements.yml",
                   "--collections-path", str(collections / "ansible_collections"), "--offline"], str(build),
                  ANSIBLE_GALAXY_DISABLE_GPG_VERIFY="1", ANSIBLE_COLLECTIONS_PATH=str(collections))
    assert rc == 0, out
    assert "overcommit.control:%s was installed successfully" % galaxy_version() in out, out
    output = tmp_path_factory.mktemp("ee-src")
    rc, out = run([sys.executable, str(build / "scripts" / "introspect.py"), "introspect", "--user-bindep=bindep.txt",
                   "--write-bindep=%s" % (output / "bindep.txt"), "--write-pip=%s" % (output / "requirements.txt"),
                   str(collections)], str(build))
    assert rc == 0, out
    return collections, output / "requirements.txt", output / "bindep.txt"


def test_merged_python_requirements_are_the_collections(merged):
    collections, pip, bindep = merged
    lines = pip.read_text().splitlines()
    own = requirement_lines(os.path.join(ROOT, "meta", "ee-requirements.txt"))
    assert [line for line in lines if line] == ["%s  # from collection overcommit.control" % line for line in own]
    assert {Requirement(line.split("#")[0]).name for line in lines if line} == RUNTIME_PYTHON


def test_merged_system_requirements_add_the_interpreter_headers(merged):
    collections, pip, bindep = merged
    lines = [line for line in bindep.read_text().splitlines() if line]
    own = requirement_lines(os.path.join(ROOT, "meta", "ee-bindep.txt"))
    assert lines == ["%s  # from collection overcommit.control" % line for line in own] + [
        "python3.11-devel [compile platform:rpm]  # from collection user"]
    packages = {line.split()[0]: line.split("[", 1)[1].split("]")[0].split() for line in own}
    # Built against libvirt's headers on both families, run with its library.
    for name in ("libvirt-devel", "pkgconf-pkg-config"):
        assert packages[name] == ["compile", "platform:rpm"]
    for name in ("libvirt-dev", "pkg-config"):
        assert packages[name] == ["compile", "platform:dpkg"]
    assert packages["libvirt-libs"] == ["platform:rpm"] and packages["libvirt0"] == ["platform:dpkg"]


def test_bindep_reads_the_merged_file_on_this_debian_machine(merged):
    """The builder stage runs `bindep -b compile` and the final stage `bindep
    -l newline`; here the dpkg entries are the packages bootstrap installed
    for libvirt-python, so nothing of the compile profile is missing."""
    collections, pip, bindep = merged
    rc, out = run([os.path.join(BIN, "bindep"), "-f", str(bindep), "-b", "compile"], str(bindep.parent))
    assert rc == 0 and out.strip() == "", out
    rc, out = run([os.path.join(BIN, "bindep"), "-f", str(bindep), "-l", "newline", "compile"], str(bindep.parent))
    assert rc == 0, out
    assert sorted(out.split()) == ["gcc", "libvirt-dev", "libvirt0", "pkg-config"]
    rc, out = run([os.path.join(BIN, "bindep"), "-f", str(bindep), "-l", "newline"], str(bindep.parent))
    assert rc == 0 and out.split() == ["libvirt0"], out


def test_installed_collection_is_the_one_ansible_builder_introspects(merged):
    collections, pip, bindep = merged
    installed = collections / "ansible_collections" / "overcommit" / "control"
    with open(installed / "MANIFEST.json") as handle:
        assert json.load(handle)["collection_info"]["version"] == galaxy_version()
    with open(installed / "meta" / "execution-environment.yml") as handle, open(COLLECTION_EE) as source:
        assert yaml.safe_load(handle) == yaml.safe_load(source)
