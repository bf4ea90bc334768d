"""Writes tests/MAP.md: for every module, role and playbook of the
collection, the test files that exercise it, so that a module's tests are
found from its name although the integration tests are filed by the lab
server they need. A unit test (tests/unit/test_code_layout.py) checks the
file is what this script writes.

A test file exercises a module when it runs it (run_module("NAME", ...)),
names it (overcommit.control.NAME) or imports it; it tests a module's code
when it imports one of the module_utils files the module imports. A role is
exercised where it is named or its molecule scenario runs, a playbook where
it is run (playbook("NAME"), playbooks/NAME.yml, overcommit.control.NAME).

Usage: python scripts/test_map.py  (rewrites tests/MAP.md)
"""

import ast
import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREFIX = "ansible_collections.overcommit.control.plugins.module_utils."
MAP = os.path.join(ROOT, "tests", "MAP.md")


def read(path):
    with open(path) as handle:
        return handle.read()


def module_utils_imports(path):
    """The module_utils files a Python file imports, as dotted names."""
    found = set()
    for node in ast.walk(ast.parse(read(path), path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            found.add(node.module[len(PREFIX):])
            found.update("%s.%s" % (node.module[len(PREFIX):], alias.name) for alias in node.names)
    return found


def test_files():
    paths = glob.glob(os.path.join(ROOT, "tests", "**", "test_*.py"), recursive=True)
    return sorted(os.path.relpath(path, ROOT) for path in paths if "/testbed/" not in path)


def rows():
    tests = dict((path, read(os.path.join(ROOT, path))) for path in test_files())
    imports = dict((path, module_utils_imports(os.path.join(ROOT, path))) for path in tests)
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py"))):
        name = os.path.basename(path)[:-3]
        runs = re.compile(r"run_module\(\s*\"%s\"|overcommit\.control\.%s\b|plugins\.modules\.%s\b|"
                          r"plugins/modules/%s\.py" % ((re.escape(name),) * 4))
        # Its own code: the shared layer (common/) is everyone's.
        own = set(name for name in module_utils_imports(path) if not name.startswith("common"))
        used = sorted(p for p, text in tests.items() if runs.search(text))
        code = sorted(p for p in tests if p not in used and imports[p] & own)
        out.append(("module", name, used, code))
    books = dict((os.path.basename(path)[:-4], read(path))
                 for path in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")))
    book_tests = {}
    for book in books:
        run = re.compile(r"playbook\(\s*\"%s\b|playbooks/%s\.yml|\"%s\.yml\"|overcommit\.control\.%s\b"
                         % ((re.escape(book),) * 4))
        book_tests[book] = set(p for p, text in tests.items() if run.search(text))
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*"))):
        name = os.path.basename(path)
        named = re.compile(r"overcommit\.control\.%s\b|roles/%s\b|role: %s\b" % ((re.escape(name),) * 3))
        used = set(p for p, text in tests.items() if named.search(text))
        # A role a playbook runs is exercised by that playbook's tests.
        for book, text in books.items():
            if re.search(r"overcommit\.control\.%s\b" % re.escape(name), text):
                used |= book_tests[book]
        used = sorted(used)
        scenario = "roles/%s/molecule/default" % name
        if os.path.isdir(os.path.join(ROOT, scenario)):
            used.append(scenario)
        out.append(("role", name, used, []))
    for name in sorted(books):
        out.append(("playbook", name, sorted(book_tests[name]), []))
    return out


def render():
    lines = ["# Where each module, role and playbook is tested", "",
             "Written by `python scripts/test_map.py`; do not edit by hand (a unit test checks it). The "
             "integration tests are filed by the lab server they need (`tests/integration/<lab>/`), so this "
             "map finds them by name.", "",
             "| kind | name | runs it | tests its code (module_utils it imports) |", "|---|---|---|---|"]
    for kind, name, used, code in rows():
        lines.append("| %s | `%s` | %s | %s |" % (kind, name, "<br>".join("`%s`" % p for p in used) or "none",
                                                  "<br>".join("`%s`" % p for p in code) or ""))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    with open(MAP, "w") as handle:
        handle.write(render())
    print("wrote %s" % MAP)
