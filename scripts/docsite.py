"""Adds to the documentation site's RST tree (the `docs` stage of scripts/test)
what antsibull-docs does not write:

- guides/: the guides of docs/*.md, read by Sphinx through MyST. Links between
  guides stay links between pages; a link to a file elsewhere in the
  repository (../playbooks/x.yml, rbac/y.yaml) points to that file in the
  repository named by galaxy.yml, since the site does not hold it; a code
  block without a language is marked as text.
- ../ansible_devel.inv: the part of the Ansible docsite's Sphinx inventory the
  pages refer to (antsibull-docs' pages link to ansible-core's reference and
  the pages of ansible.builtin plugins the docs mention), written here since
  the build fetches nothing; an ansible.builtin plugin ansible-doc does not
  know fails the build.
- eda/: a page per Event-Driven Ansible source of extensions/eda/plugins/
  event_source/, from its DOCUMENTATION and EXAMPLES (ansible-doc does not know
  event sources, so antsibull-docs does not render them). Their markup is
  parsed strictly: an error fails the build.

Also docs/event-sources.md, the same pages as one Markdown guide that ships
with the collection, with the rulebooks' own header comments; a unit test
checks it is what this script writes.

Usage: python scripts/docsite.py RST_DIR  (run after antsibull-docs wrote it)
       python scripts/docsite.py --event-sources-md  (rewrites docs/event-sources.md)
"""

import ast
import glob
import json
import os
import re
import subprocess
import sys
import zlib

import yaml
from antsibull_docs_parser.parser import Context, parse
from antsibull_docs_parser.rst import to_rst_plain

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTION = "overcommit.control"
LINK = re.compile(r"\]\((?!https?://|mailto:|#)([^)\s]+)\)")


def repository_url():
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)["repository"].rstrip("/") + "/blob/main/"


def rewrite_link(target, base):
    """A guide's link as the site needs it: guide to guide unchanged, anything
    else to the file in the repository."""
    path, anchor = (target.split("#", 1) + [""])[:2]
    if "/" not in path and path.endswith(".md"):
        return target
    resolved = os.path.normpath(os.path.join("docs", path))
    if resolved.startswith(".."):
        raise SystemExit("link out of the repository: %s" % target)
    return base + resolved + ("#" + anchor if anchor else "")


def write_guides(dest):
    base = repository_url()
    os.makedirs(dest, exist_ok=True)
    names = []
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        lines, fenced = [], False
        with open(path) as handle:
            for line in handle:
                if line.lstrip().startswith("```"):
                    if not fenced and line.strip() == "```":
                        line = line.replace("```", "```text")
                    fenced = not fenced
                elif not fenced:
                    line = LINK.sub(lambda match: "](%s)" % rewrite_link(match.group(1), base), line)
                lines.append(line)
        with open(os.path.join(dest, os.path.basename(path)), "w") as handle:
            handle.writelines(lines)
        names.append(os.path.basename(path)[:-3])
    return names


def markup(text):
    """Ansible markup (C(), O(), M(), ...) as plain RST; errors raise. Parsed
    without a current plugin, so that the source's own options read as names,
    not as "(of event_source plugin ...)"."""
    return to_rst_plain(parse(text, Context(), errors="exception", strict=True))


def indent(text, prefix):
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def option_rows(options):
    rows = []
    for name in sorted(options):
        spec = options[name]
        kind = spec.get("type", "str")
        if spec.get("elements"):
            kind += " of " + spec["elements"]
        facts = [kind]
        if spec.get("required"):
            facts.append("required")
        if "default" in spec:
            default = yaml.safe_dump(spec["default"], default_flow_style=True).strip().removesuffix("...").strip()
            facts.append("default: ``%s``" % (default or '""'))
        if spec.get("choices"):
            facts.append("choices: " + ", ".join("``%s``" % choice for choice in spec["choices"]))
        description = spec.get("description", [])
        rows.append("   * - ``%s``\n\n       %s\n     - %s" % (
            name, "; ".join(facts), indent(markup(description), "       ").lstrip()))
    return rows


def source_strings(path):
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    return {node.targets[0].id: node.value.value for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def event_source_page(path):
    strings = source_strings(path)
    if "DOCUMENTATION" not in strings:
        raise SystemExit("%s has no DOCUMENTATION" % path)
    doc = yaml.safe_load(strings["DOCUMENTATION"])
    name = os.path.basename(path)[:-3]
    fqcn = "%s.%s" % (COLLECTION, name)
    title = "%s event source -- %s" % (fqcn, markup(doc["short_description"]))
    page = [".. _ansible_collections.%s_event_source:" % fqcn, "", title, "=" * len(title), "",
            "An Event-Driven Ansible source of the collection, for rulebooks (``source: %s``)." % fqcn, "",
            "Synopsis", "--------", ""]
    for paragraph in doc.get("description", []):
        page += ["- " + indent(markup(paragraph), "  ").lstrip(), ""]
    if doc.get("requirements"):
        page += ["Requirements", "------------", ""]
        page += ["- " + markup(requirement) for requirement in doc["requirements"]] + [""]
    if doc.get("options"):
        page += ["Parameters", "----------", "", ".. list-table::", "   :header-rows: 1", "   :widths: 30 70", "",
                 "   * - Parameter", "     - Description"]
        page += option_rows(doc["options"]) + [""]
    if strings.get("EXAMPLES"):
        yaml.safe_load(strings["EXAMPLES"])  # valid YAML, or the build fails
        page += ["Examples", "--------", "", ".. code-block:: yaml", "",
                 indent(strings["EXAMPLES"].strip("\n"), "    "), ""]
    return name, "\n".join(page) + "\n"


def write_event_sources(dest):
    os.makedirs(dest, exist_ok=True)
    names = []
    for path in sorted(glob.glob(os.path.join(ROOT, "extensions", "eda", "plugins", "event_source", "*.py"))):
        if os.path.basename(path).startswith("_"):
            continue
        name, page = event_source_page(path)
        with open(os.path.join(dest, name + ".rst"), "w") as handle:
            handle.write(page)
        names.append(name)
    title = "Event-Driven Ansible sources of %s" % COLLECTION
    index = [".. _ansible_collections.%s.eda_index:" % COLLECTION, "", title, "=" * len(title), "",
             "Rulebooks name them as ``%s.NAME``; the collection's rulebooks are in ``extensions/eda/rulebooks/``."
             % COLLECTION, "", ".. toctree::", "   :maxdepth: 1", ""] + ["   " + name for name in names]
    with open(os.path.join(dest, "index.rst"), "w") as handle:
        handle.write("\n".join(index) + "\n")
    return names


ANSIBLE_DOCS = "https://docs.ansible.com/projects/ansible/devel/"
# Labels of ansible-core's reference pages that antsibull-docs' pages use.
ANSIBLE_LABELS = {
    "common_return_values": ("reference_appendices/common_return_values.html#common-return-values",
                             "Return Values"),
    "ansible_configuration_settings": ("reference_appendices/config.html#ansible-configuration-settings",
                                       "Ansible Configuration Settings"),
    # The page of a module with an action plugin (playbook_input) links the docsite's action plugins.
    "action_plugins": ("plugins/action.html#action-plugins", "Action plugins"),
}
BUILTIN_REF = re.compile(r"<ansible_collections\.ansible\.builtin\.(\w+)_(module|filter|test|lookup|callback|connection|"
                         r"become|cache|inventory|shell|strategy|vars)>`")


ENVVAR_REF = re.compile(r":envvar:`([A-Z0-9_\\]+)`")
ENVVAR_DEFINED = re.compile(r"^\.\. envvar:: ([A-Z0-9_\\]+)$", re.M)


def write_ansible_inventory(rst, path):
    """A Sphinx inventory (version 2) of the Ansible docsite's labels the
    pages use, and of the environment variables of Ansible's own
    configuration they name (the inventory cache's, for example) that the
    site's environment variable index does not define."""
    entries = dict(ANSIBLE_LABELS)
    referenced, envvars, defined = set(), set(), set()
    for page in glob.glob(os.path.join(rst, "**", "*.rst"), recursive=True):
        with open(page) as handle:
            text = handle.read()
        referenced.update(BUILTIN_REF.findall(text))
        envvars.update(name.replace("\\", "") for name in ENVVAR_REF.findall(text))
        defined.update(name.replace("\\", "") for name in ENVVAR_DEFINED.findall(text))
    envvar_entries = dict((name, "reference_appendices/config.html#envvar-%s" % name)
                          for name in sorted(envvars - defined))
    for kind in sorted({plugin_kind for plugin, plugin_kind in referenced}):
        listing = subprocess.run(["ansible-doc", "-t", kind, "-l", "--json", "ansible.builtin"], check=True,
                                 capture_output=True, text=True).stdout
        known = {name.rpartition(".")[2] for name in json.loads(listing)}
        for name in sorted(plugin for plugin, plugin_kind in referenced if plugin_kind == kind):
            if name not in known:
                raise SystemExit("the docs refer to ansible.builtin.%s (%s), which ansible-doc does not know"
                                 % (name, kind))
            label = "ansible_collections.ansible.builtin.%s_%s" % (name, kind)
            anchor = label.replace(".", "-").replace("_", "-")
            entries[label] = ("collections/ansible/builtin/%s_%s.html#%s" % (name, kind, anchor),
                              "ansible.builtin.%s %s" % (name, kind))
    body = "".join("%s std:label -1 %s %s\n" % (label, uri, title) for label, (uri, title) in sorted(entries.items()))
    body += "".join("%s std:envvar -1 %s -\n" % (name, uri) for name, uri in sorted(envvar_entries.items()))
    with open(path, "wb") as handle:
        handle.write(b"# Sphinx inventory version 2\n# Project: Ansible\n# Version: devel\n"
                     b"# The remainder of this file is compressed using zlib.\n")
        handle.write(zlib.compress(body.encode()))
    return len(entries) + len(envvar_entries)


MD_MARKUP = ((re.compile(r"[COVMER]V?\(([^)]*)\)"), r"`\1`"), (re.compile(r"B\(([^)]*)\)"), r"**\1**"),
             (re.compile(r"I\(([^)]*)\)"), r"*\1*"), (re.compile(r"U\(([^)]*)\)"), r"<\1>"),
             (re.compile(r"L\(([^,)]*), *([^)]*)\)"), r"[\1](\2)"))


def markdown(text):
    """Ansible markup as Markdown; checked by the strict parser first."""
    parse(text, Context(), errors="exception", strict=True)
    for pattern, replacement in MD_MARKUP:
        text = pattern.sub(replacement, text)
    return text


def event_sources_markdown():
    """docs/event-sources.md: every event source from its DOCUMENTATION and
    EXAMPLES, then every rulebook from its header comment."""
    out = ["# Event sources and rulebooks", "",
           "Generated from the plugins' documentation by `python scripts/docsite.py --event-sources-md`; "
           "do not edit by hand.", "",
           "`ansible-doc` does not know Event-Driven Ansible sources, so their documentation is here. Rulebooks "
           "name a source as `%s.NAME`; where the rulebooks run and what they need is in [eda.md](eda.md)."
           % COLLECTION, ""]
    for path in sorted(glob.glob(os.path.join(ROOT, "extensions", "eda", "plugins", "event_source", "*.py"))):
        if os.path.basename(path).startswith("_"):
            continue
        strings = source_strings(path)
        doc = yaml.safe_load(strings["DOCUMENTATION"])
        name = os.path.basename(path)[:-3]
        out += ["## %s.%s" % (COLLECTION, name), "", markdown(doc["short_description"]) + ".", ""]
        out += ["- " + markdown(paragraph) for paragraph in doc.get("description", [])] + [""]
        if doc.get("requirements"):
            out += ["Requirements: " + "; ".join(markdown(r) for r in doc["requirements"]) + ".", ""]
        if doc.get("options"):
            out += ["| option | type | default | description |", "|---|---|---|---|"]
            for option in sorted(doc["options"]):
                spec = doc["options"][option]
                kind = spec.get("type", "str") + (" of " + spec["elements"] if spec.get("elements") else "")
                default = "required" if spec.get("required") else (
                    "`%s`" % yaml.safe_dump(spec["default"], default_flow_style=True).strip().removesuffix(
                        "...").strip() if "default" in spec else "")
                description = spec.get("description", [])
                description = description if isinstance(description, list) else [description]
                if spec.get("choices"):
                    description = description + ["Choices: %s." % ", ".join("C(%s)" % c for c in spec["choices"])]
                out.append("| `%s` | %s | %s | %s |" % (option, kind, default, " ".join(
                    markdown(d) for d in description).replace("|", "\\|")))
            out.append("")
        if strings.get("EXAMPLES"):
            yaml.safe_load(strings["EXAMPLES"])
            out += ["```yaml", strings["EXAMPLES"].strip("\n"), "```", ""]
    out += ["## Rulebooks", ""]
    for path in sorted(glob.glob(os.path.join(ROOT, "extensions", "eda", "rulebooks", "*.yml"))):
        name = os.path.basename(path)[:-4]
        comment = []
        with open(path) as handle:
            for line in handle:
                if line.startswith("---"):
                    continue
                if not line.startswith("#"):
                    break
                comment.append(line[1:].rstrip("\n")[1:] if line.startswith("# ") else line[1:].rstrip("\n"))
        out += ["### %s.%s" % (COLLECTION, name), "", "```text", "\n".join(comment).strip("\n"), "```", ""]
    return "\n".join(out).rstrip("\n") + "\n"


EVENT_SOURCES_MD = os.path.join(ROOT, "docs", "event-sources.md")


def main():
    if sys.argv[1:] == ["--event-sources-md"]:
        with open(EVENT_SOURCES_MD, "w") as handle:
            handle.write(event_sources_markdown())
        print("wrote %s" % EVENT_SOURCES_MD)
        return
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    rst = sys.argv[1]
    guides = write_guides(os.path.join(rst, "guides"))
    sources = write_event_sources(os.path.join(rst, "eda"))
    labels = write_ansible_inventory(rst, os.path.join(os.path.dirname(os.path.abspath(rst)), "ansible_devel.inv"))
    print("%d guides, %d event sources, %d labels of the Ansible docsite" % (len(guides), len(sources), labels))


if __name__ == "__main__":
    main()
