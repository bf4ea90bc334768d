"""One version everywhere: every plugin, option and role entry point says it
was added in a version the collection has reached (galaxy.yml), so that a
user reading `version_added` never meets a release that does not exist."""

import glob
import os
import re

import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)
VERSION_ADDED = re.compile(r"""^\s*version_added:\s*['"]?([^'"\s#]+)""", re.M)


def release(text):
    return tuple(int(part) for part in text.split("."))


def galaxy_version():
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)["version"]


def documented_files():
    for pattern in ("plugins/**/*.py", "plugins/**/*.yml", "roles/*/meta/argument_specs.yml",
                    "extensions/eda/plugins/**/*.py"):
        for path in glob.glob(os.path.join(ROOT, pattern), recursive=True):
            yield os.path.relpath(path, ROOT)


def test_every_version_added_is_a_version_the_collection_has_reached():
    current = galaxy_version()
    found = {}
    for path in documented_files():
        with open(os.path.join(ROOT, path)) as handle:
            for version in VERSION_ADDED.findall(handle.read()):
                found.setdefault(version, []).append(path)
    assert found, "no version_added found: the pattern no longer matches the docs"
    ahead = dict((version, sorted(set(paths))) for version, paths in found.items()
                 if release(version) > release(current))
    assert not ahead, "galaxy.yml says %s; these say they were added later: %s" % (current, ahead)
