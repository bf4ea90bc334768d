"""The docs name only what exists: the mechanical kind of drift between the
guides (README.md, docs/*.md) and the collection, caught when it happens.

- every `overcommit.control.NAME` is a module, role, playbook, filter,
  inventory plugin, event source, rulebook, action group or one of the records the
  collection writes;
- in the YAML examples of the docs and in the EXAMPLES of the modules and
  event sources, every option given to one of the collection's modules or
  event sources is one it documents, and every variable given to one of its
  roles is one its argument spec (or defaults) has;
- every `rolename_variable` in backticks is a variable of that role;
- every `-e NAME=...` on a command line that runs one of the collection's
  playbooks is a variable that playbook reads."""

import ast
import glob
import importlib
import importlib.util
import os
import re

import pytest
import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir))
PREFIX = "overcommit.control."
# Names of records on objects, not plugins: the vSphere custom attribute.
RECORD_NAMES = {"reservation"}


def read(path):
    with open(os.path.join(ROOT, path)) as handle:
        return handle.read()


def docs():
    paths = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return [(path, read(path)) for path in paths]


def documentation_of(path):
    """The DOCUMENTATION string of a plugin file, as YAML."""
    for node in ast.parse(read(path)).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["DOCUMENTATION"]:
            return yaml.safe_load(node.value.value) or {}
    return {}


def option_names(options):
    names = set()
    for name, spec in (options or {}).items():
        names.add(name)
        names.update((spec or {}).get("aliases") or [])
    return names


def fragment_options():
    out = {}
    for path in glob.glob(os.path.join(ROOT, "plugins", "doc_fragments", "*.py")):
        name = os.path.splitext(os.path.basename(path))[0]
        text = read(os.path.relpath(path, ROOT))
        for match in re.finditer(r'(\w+) = r"""(.*?)"""', text, re.S):
            key = name if match.group(1) == "DOCUMENTATION" else "%s.%s" % (name, match.group(1).lower())
            out[key] = option_names((yaml.safe_load(match.group(2)) or {}).get("options"))
    return out


def module_options():
    fragments = fragment_options()
    out = {}
    for path in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py")):
        doc = documentation_of(os.path.relpath(path, ROOT))
        names = option_names(doc.get("options"))
        for fragment in doc.get("extends_documentation_fragment") or []:
            if fragment.startswith(PREFIX):
                names |= fragments.get(fragment[len(PREFIX):], set())
        out[doc["module"]] = names
    return out


def event_source_options():
    out = {}
    for path in glob.glob(os.path.join(ROOT, "extensions", "eda", "plugins", "event_source", "*.py")):
        name = os.path.splitext(os.path.basename(path))[0]
        out[name] = option_names(documentation_of(os.path.relpath(path, ROOT)).get("options"))
    return out


def role_variables():
    out = {}
    for role in sorted(os.listdir(os.path.join(ROOT, "roles"))):
        names = set()
        specs = yaml.safe_load(read(os.path.join("roles", role, "meta", "argument_specs.yml")))["argument_specs"]
        for entry in specs.values():
            names |= set((entry.get("options") or {}).keys())
        defaults = os.path.join("roles", role, "defaults", "main.yml")
        if os.path.exists(os.path.join(ROOT, defaults)):
            names |= set((yaml.safe_load(read(defaults)) or {}).keys())
        out[role] = names
    return out


def filter_names():
    names = set()
    for path in glob.glob(os.path.join(ROOT, "plugins", "filter", "*.py")):
        plugin = importlib.import_module("ansible_collections.overcommit.control.plugins.filter."
                                         + os.path.splitext(os.path.basename(path))[0])
        names.update(plugin.FilterModule().filters())
    return names


def playbooks():
    return dict((os.path.splitext(os.path.basename(p))[0], read(os.path.relpath(p, ROOT)))
                for p in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")))


def known_names():
    runtime = yaml.safe_load(read(os.path.join("meta", "runtime.yml")))
    rulebooks = set(os.path.splitext(os.path.basename(p))[0]
                    for p in glob.glob(os.path.join(ROOT, "extensions", "eda", "rulebooks", "*.yml")))
    inventories = set(os.path.splitext(os.path.basename(p))[0]
                      for p in glob.glob(os.path.join(ROOT, "plugins", "inventory", "*.py")))
    return (set(module_options()) | set(role_variables()) | set(playbooks()) | filter_names() | inventories
            | set(event_source_options()) | rulebooks | set(runtime.get("action_groups") or {}) | RECORD_NAMES)


def yaml_blocks(text, where="docs"):
    """Every YAML block of a page, parsed. A block that does not parse fails:
    an excerpt that is not YAML belongs in a ```text block."""
    for match in re.finditer(r"^```ya?ml\n(.*?)^```", text, re.S | re.M):
        try:
            yield yaml.safe_load(match.group(1))
        except yaml.YAMLError as exc:
            raise AssertionError("%s: a ```yaml block does not parse (%s):\n%s" % (where, exc, match.group(1)[:400]))


def walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item)


def test_the_checks_see_the_collection():
    # Guards against a check that passes because it reads nothing.
    assert len(module_options()) >= 15 and len(role_variables()) >= 10 and len(playbooks()) >= 10
    assert "cpus" in module_options()["libvirt_cputune"] and "kubeconfig" in module_options()["node_admission"]
    assert "recommend_prometheus_url" in role_variables()["recommend"]
    assert "max_body_bytes" in event_source_options()["alertmanager"]
    assert "fleet_found_nowhere" in filter_names()


def test_every_collection_name_in_the_docs_exists():
    known = known_names()
    unknown = []
    for path, text in docs():
        for name in re.findall(r"\bovercommit\.control\.([a-z0-9_]+)", text):
            if name not in known:
                unknown.append("%s: overcommit.control.%s" % (path, name))
    assert not unknown, "the docs name what the collection does not have:\n" + "\n".join(sorted(set(unknown)))


def examples():
    """(path, EXAMPLES as YAML) of every module and event source."""
    for pattern in ("plugins/modules/*.py", "extensions/eda/plugins/event_source/*.py"):
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            for node in ast.parse(read(os.path.relpath(path, ROOT))).body:
                if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["EXAMPLES"]:
                    yield os.path.relpath(path, ROOT), yaml.safe_load(node.value.value)


def wrong_names(block, modules, sources, roles):
    """What one YAML example gives that the collection does not take."""
    wrong = []
    for mapping in walk(block):
        for key, value in mapping.items():
            allowed = None
            if isinstance(key, str) and key.startswith(PREFIX) and isinstance(value, dict):
                allowed = modules.get(key[len(PREFIX):], sources.get(key[len(PREFIX):]))
            if allowed is not None:
                wrong += ["%s has no option %s" % (key, option) for option in value if option not in allowed]
        role = mapping.get("role") or mapping.get("name")
        if isinstance(role, str) and role.startswith(PREFIX) and role[len(PREFIX):] in roles \
                and isinstance(mapping.get("vars"), dict):
            wrong += ["role %s has no variable %s" % (role, var) for var in mapping["vars"]
                      if var not in roles[role[len(PREFIX):]]]
    return wrong


def test_options_and_role_variables_in_the_yaml_examples_exist():
    modules, sources, roles = module_options(), event_source_options(), role_variables()
    blocks = [(path, block) for path, text in docs() for block in yaml_blocks(text, path)] + list(examples())
    assert len(blocks) > 20, "the examples were not found"
    wrong = ["%s: %s" % (path, what) for path, block in blocks for what in wrong_names(block, modules, sources, roles)]
    assert not wrong, "\n".join(sorted(set(wrong)))


@pytest.mark.parametrize("role", sorted(role_variables()))
def test_every_role_variable_the_docs_name_exists(role):
    """A name with the role's prefix that is something else (a filter, a
    rulebook, a playbook's own variable) is not the role's."""
    allowed = role_variables()[role] | known_names()
    books = "\n".join(playbooks().values())
    pattern = re.compile(r"`(%s_[a-z0-9_]+)`" % re.escape(role))
    unknown = ["%s: %s" % (path, name) for path, text in docs() for name in pattern.findall(text)
               if name not in allowed and not re.search(r"\b%s\b" % name, books)]
    assert not unknown, "the docs name variables role %s does not have:\n%s" % (role, "\n".join(sorted(set(unknown))))


def test_every_extra_variable_on_a_playbook_command_line_is_read_by_that_playbook():
    books = playbooks()
    command = re.compile(r"(?:overcommit\.control\.|playbooks/)([a-z_]+)(?:\.yml)?\b(.*)")
    unread = []
    for path, text in docs():
        # A command continued with backslashes is one line.
        for line in text.replace("\\\n", " ").splitlines():
            for match in command.finditer(line):
                name, rest = match.group(1), match.group(2)
                if name not in books:
                    continue
                for var in re.findall(r"-e\s+['\"]?([a-z_][a-z0-9_]*)=", rest):
                    if not re.search(r"\b%s\b" % re.escape(var), books[name]):
                        unread.append("%s: %s.yml does not read %s" % (path, name, var))
    assert not unread, "\n".join(sorted(set(unread)))


def anchors(text):
    """The anchors GitHub gives a page's headings (outside code blocks)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    out = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *$", text, re.M):
        out.add(re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return out


def test_every_relative_link_in_the_docs_reaches_a_file_and_its_heading():
    broken = []
    for path, text in docs():
        for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"```.*?```", "", text, flags=re.S)):
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _hash, anchor = target.partition("#")
            linked = os.path.normpath(os.path.join(ROOT, os.path.dirname(path), file_part)) if file_part \
                else os.path.join(ROOT, path)
            if not os.path.exists(linked):
                broken.append("%s: %s (no such file)" % (path, target))
            elif anchor and linked.endswith(".md") and anchor not in anchors(read(os.path.relpath(linked, ROOT))):
                broken.append("%s: %s (no such heading)" % (path, target))
    assert not broken, "\n".join(broken)


def test_the_readme_lists_all_the_included_content():
    """The README's front page names every module, role, playbook, event
    source, rulebook and inventory plugin the collection ships."""
    section = read("README.md").split("## Included content", 1)[1].split("\n## ", 1)[0]
    shipped = [os.path.splitext(os.path.basename(p))[0] for pattern in (
        "plugins/modules/*.py", "playbooks/*.yml", "extensions/eda/plugins/event_source/*.py",
        "extensions/eda/rulebooks/*.yml", "plugins/inventory/*.py") for p in glob.glob(os.path.join(ROOT, pattern))]
    shipped += os.listdir(os.path.join(ROOT, "roles"))
    missing = sorted(name for name in set(shipped) - {"lab_demo"} if not re.search(r"`%s`" % re.escape(name), section)
                     and "playbooks/%s.yml" % name not in section)
    assert len(shipped) > 40 and not missing, missing


def test_the_event_sources_guide_is_the_one_the_plugins_make():
    """docs/event-sources.md ships the event sources' and rulebooks' own
    documentation (ansible-doc does not read event sources); it is written
    by scripts/docsite.py from them and must not drift."""
    spec = importlib.util.spec_from_file_location("docsite", os.path.join(ROOT, "scripts", "docsite.py"))
    docsite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(docsite)
    expected = docsite.event_sources_markdown()
    assert "## overcommit.control.host_pressure" in expected and "### overcommit.control.closed_loop_polling" in expected
    assert read("docs/event-sources.md") == expected, \
        "docs/event-sources.md is not what the plugins say: run python scripts/docsite.py --event-sources-md"


def test_every_guide_is_in_the_documentation_sites_table_of_contents():
    """The site's build fails on a page no toctree includes (Sphinx -W)."""
    index = read(os.path.join("docs", "docsite", "index.rst"))
    listed = set(re.findall(r"^\s+guides/([a-z0-9-]+)\s*$", index, re.M))
    guides = set(os.path.basename(path)[:-3] for path in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    assert len(listed) > 10 and guides <= listed, sorted(guides - listed)
