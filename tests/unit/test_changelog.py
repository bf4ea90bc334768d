"""The changelog is antsibull-changelog's, as users of collections expect:
valid fragments, a valid changelogs/changelog.yaml, a CHANGELOG.rst that is
what the tool generates from it, and one version everywhere: galaxy.yml's
version is the latest release or the one being made, and a change not yet
released (a fragment) is never filed under a version already released."""

import filecmp
import glob
import os
import shutil
import subprocess
import sys

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir))
TOOL = os.path.join(os.path.dirname(sys.executable), "antsibull-changelog")


def release(text):
    return tuple(int(part) for part in str(text).split("."))


def load(path):
    with open(os.path.join(ROOT, path)) as handle:
        return yaml.safe_load(handle)


def run(*args, cwd=ROOT):
    return subprocess.run([TOOL] + list(args), cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def fragments():
    return sorted(glob.glob(os.path.join(ROOT, "changelogs", "fragments", "*.yml")))


def test_the_fragments_are_valid():
    linted = run("lint")
    assert linted.returncode == 0 and not linted.stdout.strip(), linted.stdout + linted.stderr


def test_changelog_yaml_is_valid_and_galaxy_yml_is_its_latest_release_or_the_next():
    linted = run("lint-changelog-yaml", os.path.join("changelogs", "changelog.yaml"))
    assert linted.returncode == 0 and not linted.stdout.strip(), linted.stdout + linted.stderr
    releases = sorted((load(os.path.join("changelogs", "changelog.yaml")).get("releases") or {}), key=release)
    version = load("galaxy.yml")["version"]
    assert releases, "changelogs/changelog.yaml has no release"
    assert release(version) >= release(releases[-1]), (version, releases[-1])
    if release(version) == release(releases[-1]):
        # A change that is in no release yet belongs to the next version:
        # galaxy.yml says which before its fragment lands.
        assert not fragments(), ("galaxy.yml says %s, already released; bump it to the version these changes go "
                                 "into: %s" % (version, [os.path.basename(f) for f in fragments()]))


def test_changelog_rst_is_what_antsibull_changelog_generates(tmp_path):
    copy = tmp_path / "collection"
    os.makedirs(str(copy / "changelogs"))
    for name in ("galaxy.yml", "CHANGELOG.rst"):
        shutil.copy(os.path.join(ROOT, name), str(copy / name))
    for name in ("config.yaml", "changelog.yaml"):
        shutil.copy(os.path.join(ROOT, "changelogs", name), str(copy / "changelogs" / name))
    generated = run("generate", cwd=str(copy))
    assert generated.returncode == 0, generated.stdout + generated.stderr
    assert filecmp.cmp(os.path.join(ROOT, "CHANGELOG.rst"), str(copy / "CHANGELOG.rst"), shallow=False), \
        "CHANGELOG.rst differs from what `antsibull-changelog generate` writes from changelogs/changelog.yaml"
