"""The code layout of docs/code-layout.md, checked: which folder of
plugins/module_utils/ may import which, that the pure layers do no I/O, and
that the filters and the module files stay thin. A new import that points
the wrong way fails here, naming the file and the import."""

import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)
PLUGINS = os.path.join(ROOT, "plugins")
PREFIX = "ansible_collections.overcommit.control.plugins."

# Folder of module_utils -> the folders it may import from (itself included).
MAY_IMPORT = {
    "common": {"common"},
    "domain": {"common", "domain"},
    "simulate": {"common", "domain", "simulate"},
    "control": {"common", "domain", "control"},
    "monitoring": {"common", "domain", "monitoring"},
    "host": {"common", "host"},
    "prometheus": {"common", "prometheus"},
    "libvirt": {"common", "domain", "libvirt"},
    "k8s": {"common", "domain", "k8s"},
    "vsphere": {"common", "domain", "vsphere"},
}
# The pure layers: no client, no socket, no subprocess, no file system.
PURE = ("common", "domain", "simulate", "control", "monitoring")
IO_MODULES = {"socket", "subprocess", "ssl", "urllib", "http", "libvirt", "kubernetes", "pyVmomi", "pyVim",
              "requests", "urllib3"}
# common/ may hold the module base (AnsibleModule) and the retry and TLS helpers the clients share.
PURE_EXCEPTIONS = {("common", "tls.py"): {"ssl"}}


def python_files(folder):
    for base, _dirs, files in os.walk(folder):
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(base, name)


def imports(path):
    """Every module `path` imports, as dotted names."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
            found.extend("%s.%s" % (node.module, alias.name) for alias in node.names)
    return found


def module_utils_files():
    folder = os.path.join(PLUGINS, "module_utils")
    for path in python_files(folder):
        layer = os.path.relpath(path, folder).split(os.sep)[0]
        yield layer, path


def test_every_folder_of_module_utils_is_in_the_map():
    folders = set(name for name in os.listdir(os.path.join(PLUGINS, "module_utils"))
                  if os.path.isdir(os.path.join(PLUGINS, "module_utils", name)) and not name.startswith("__"))
    assert folders == set(MAY_IMPORT), folders ^ set(MAY_IMPORT)


@pytest.mark.parametrize("layer", sorted(MAY_IMPORT))
def test_each_layer_imports_only_the_layers_below_it(layer):
    wrong = []
    for found_layer, path in module_utils_files():
        if found_layer != layer:
            continue
        for name in imports(path):
            if name.startswith(PREFIX + "module_utils."):
                target = name[len(PREFIX + "module_utils."):].split(".")[0]
                if target not in MAY_IMPORT[layer]:
                    wrong.append("%s imports %s" % (os.path.relpath(path, ROOT), name))
            elif name.startswith(PREFIX):
                wrong.append("%s imports %s (module_utils imports no other plugin type)" % (
                    os.path.relpath(path, ROOT), name))
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("layer", PURE)
def test_the_pure_layers_do_no_io(layer):
    wrong = []
    for found_layer, path in module_utils_files():
        if found_layer != layer:
            continue
        allowed = PURE_EXCEPTIONS.get((layer, os.path.basename(path)), set())
        for name in imports(path):
            top = name.split(".")[0]
            if top in IO_MODULES - allowed or name in ("os.system", "builtins.open"):
                wrong.append("%s imports %s" % (os.path.relpath(path, ROOT), name))
    assert not wrong, "\n".join(wrong)


# The files of a pure layer that do I/O, apart by name: the simulator's trace
# files and reports, and the module base, which opens and closes a task's client.
PURE_IO_FILES = {("simulate", "files.py"), ("common", "module.py")}
# Calls that reach the file system, a process or the network.
IO_CALL_PREFIXES = ("os.", "tempfile.", "shutil.", "subprocess.", "socket.", "io.open")
PURE_OS_CALLS = ("os.path.join", "os.path.basename", "os.path.dirname", "os.path.splitext", "os.path.normpath",
                 "os.sep", "os.environ.get")


def dotted(node):
    """a.b.c for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def io_calls(path):
    """Calls in `path` that do I/O: open(), the os/tempfile/shutil/subprocess/
    socket functions that touch the system, and any call on a client."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = dotted(node.func) or ""
        parts = name.split(".")
        if name == "open" or (name.startswith(IO_CALL_PREFIXES) and not name.startswith(PURE_OS_CALLS)) \
                or "client" in parts[:-1]:
            found.append("%s:%d calls %s" % (os.path.relpath(path, ROOT), node.lineno, name))
    return found


@pytest.mark.parametrize("layer", PURE)
def test_the_pure_layers_call_nothing_that_does_io(layer):
    """Beyond imports: no open(), no file, process or network call, no call
    on a client in the pure layers, but in the one file apart by name."""
    wrong = []
    for found_layer, path in module_utils_files():
        if found_layer == layer and (layer, os.path.basename(path)) not in PURE_IO_FILES:
            wrong.extend(io_calls(path))
    assert not wrong, "\n".join(wrong)


def test_the_io_check_finds_io():
    """The check above can fail: it finds each kind of call it looks for."""
    sample = os.path.join(PLUGINS, "module_utils", "simulate", "files.py")
    found = " ".join(io_calls(sample))
    assert "calls open" in found and "calls os.makedirs" in found and "calls tempfile.mkstemp" in found


# In a platform folder the files that may do I/O, by name; the rest is pure.
PLATFORM_IO_NAMES = ("client", "module", "events", "lock")


@pytest.mark.parametrize("layer", ("libvirt", "k8s", "vsphere"))
def test_in_a_platform_folder_only_runners_readers_and_the_client_do_io(layer):
    """Pure planning and I/O apart by name in every platform folder: calls on
    a client, open() and the file, process and network calls only in
    client.py, module.py, events.py (Kubernetes events), lock.py (libvirt's
    lock files) and the *runner.py and *reader.py files."""
    wrong = []
    for found_layer, path in module_utils_files():
        name = os.path.basename(path)[:-3]
        if found_layer != layer or name in PLATFORM_IO_NAMES or name.endswith(("runner", "reader")):
            continue
        wrong.extend(io_calls(path))
    assert not wrong, "\n".join(wrong)


def test_in_k8s_only_runners_and_readers_use_the_client():
    """k8s/ keeps pure planning and I/O apart by name: only client.py,
    module.py, events.py and the *runner.py / *reader.py files import the
    client; every other file is pure."""
    folder = os.path.join(PLUGINS, "module_utils", "k8s")
    wrong = []
    for path in python_files(folder):
        name = os.path.basename(path)[:-3]
        if name in ("client", "module", "events") or name.endswith(("runner", "reader")):
            continue
        for found in imports(path):
            if found.startswith(PREFIX + "module_utils.k8s.client"):
                wrong.append("%s imports %s" % (os.path.relpath(path, ROOT), found))
    assert not wrong, "\n".join(wrong)


def test_filters_use_no_client():
    wrong = []
    for path in python_files(os.path.join(PLUGINS, "filter")):
        for name in imports(path):
            platform_io = name.endswith((".client", ".module")) or ".client." in name
            if name.startswith(PREFIX + "module_utils.") and platform_io:
                wrong.append("%s imports %s" % (os.path.relpath(path, ROOT), name))
            if name.split(".")[0] in IO_MODULES:
                wrong.append("%s imports %s" % (os.path.relpath(path, ROOT), name))
    assert not wrong, "\n".join(wrong)


def test_module_files_are_their_docs_their_spec_and_a_few_lines():
    """main() of every module stays short: the work is in module_utils."""
    long_mains = []
    for path in python_files(os.path.join(PLUGINS, "modules")):
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "main":
                length = node.end_lineno - node.lineno + 1
                if length > 40:
                    long_mains.append("%s: main() has %d lines" % (os.path.relpath(path, ROOT), length))
    assert not long_mains, "\n".join(long_mains)


def runner_classes():
    for path in python_files(os.path.join(PLUGINS, "module_utils")):
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Runner"):
                yield os.path.relpath(path, ROOT), node


def test_every_runner_keeps_the_runner_contract():
    """Runner(client, request, ...), run() without arguments and one() per
    object, as docs/code-layout.md says; and a free check_request beside
    each runner's pure code."""
    found, wrong = [], []
    for path, node in runner_classes():
        found.append(node.name)
        methods = dict((item.name, item) for item in node.body if isinstance(item, ast.FunctionDef))
        init = [arg.arg for arg in methods["__init__"].args.args[:3]] if "__init__" in methods else []
        if init != ["self", "client", "request"]:
            wrong.append("%s %s.__init__ takes %s, not (self, client, request, ...)" % (path, node.name, init))
        run = methods.get("run")
        if run is None or [arg.arg for arg in run.args.args] != ["self"]:
            wrong.append("%s %s.run must take no arguments" % (path, node.name))
        if "one" not in methods:
            wrong.append("%s %s has no one() for one object" % (path, node.name))
        for name in ("validate", "run_one", "run_over", "handle", "plan_one"):
            if name in methods:
                wrong.append("%s %s.%s: the contract's names are check_request, run and one" % (path, node.name, name))
    assert len(found) >= 9 and len(set(found)) == len(found), found
    assert not wrong, "\n".join(wrong)


def test_modules_check_the_request_before_they_connect():
    """Every module that builds a runner gets its request from
    module.checked(...) first: bad input fails before any connection."""
    runners = set(node.name for _path, node in runner_classes())
    wrong = []
    for path in python_files(os.path.join(PLUGINS, "modules")):
        with open(path) as handle:
            text = handle.read()
        used = [name for name in runners if name + "(client, request" in text]
        if not used and any(name + "(" in text for name in runners):
            wrong.append("%s builds a runner without (client, request)" % os.path.relpath(path, ROOT))
        if used and "request = module.checked(" not in text:
            wrong.append("%s runs %s without request = module.checked(...)" % (os.path.relpath(path, ROOT), used))
    assert not wrong, "\n".join(wrong)


def test_every_error_of_module_utils_is_a_field_error_or_an_object_refusal():
    """One base each, so that a runner catches errors.PER_OBJECT and a new
    error is reported on its object without any runner listing it: no class
    derives from a bare Exception or ValueError but the two bases."""
    wrong = []
    for _layer, path in module_utils_files():
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name not in ("ValueRangeError", "ObjectRefusal"):
                bases = [getattr(base, "id", getattr(base, "attr", None)) for base in node.bases]
                if set(bases) & {"Exception", "ValueError", "RuntimeError", "KeyError", "TypeError"}:
                    wrong.append("%s: class %s(%s)" % (os.path.relpath(path, ROOT), node.name, ", ".join(bases)))
    assert not wrong, "\n".join(wrong)


def test_the_k8s_features_do_not_import_each_other():
    """k8s/ is grouped by feature (brake, gate, nodes, static); what more
    than one reads (names, keys, the records under them) lives beside them
    in k8s/, so a feature can change without reaching into another."""
    folder = os.path.join(PLUGINS, "module_utils", "k8s")
    features = sorted(name for name in os.listdir(folder) if os.path.isdir(os.path.join(folder, name))
                      and not name.startswith("__"))
    assert {"brake", "gate", "nodes", "static"} <= set(features), features
    wrong = []
    for feature in features:
        for path in python_files(os.path.join(folder, feature)):
            for name in imports(path):
                parts = name[len(PREFIX + "module_utils.k8s."):].split(".") if name.startswith(
                    PREFIX + "module_utils.k8s.") else []
                if parts and parts[0] in features and parts[0] != feature:
                    wrong.append("%s imports %s" % (os.path.relpath(path, ROOT), name))
    assert not wrong, "\n".join(wrong)


def test_the_map_of_tests_is_the_one_the_tests_make():
    """tests/MAP.md finds a module's, role's or playbook's tests from its
    name; scripts/test_map.py writes it from the tests, and it must not drift."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("test_map", os.path.join(ROOT, "scripts", "test_map.py"))
    test_map = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(test_map)
    rows = test_map.rows()
    # Guards against a map that finds nothing: every module is run by some test.
    unrun = [name for kind, name, used, _code in rows if kind == "module" and not used]
    assert len(rows) > 40 and not unrun, unrun
    with open(os.path.join(ROOT, "tests", "MAP.md")) as handle:
        assert handle.read() == test_map.render(), "tests/MAP.md is stale: run python scripts/test_map.py"


def test_the_unit_tests_of_module_utils_mirror_its_folders():
    """A unit test of module_utils code sits in the folder of that code
    (tests/unit/plugins/module_utils/k8s/brake/ tests k8s/brake/), so a
    file's tests are found from its path."""
    tests = os.path.join(ROOT, "tests", "unit", "plugins", "module_utils")
    wrong = []
    for path in python_files(tests):
        folder = os.path.relpath(os.path.dirname(path), tests)
        if folder == "." or not os.path.isdir(os.path.join(PLUGINS, "module_utils", folder)):
            wrong.append(os.path.relpath(path, ROOT))
    assert len(list(python_files(tests))) > 30 and not wrong, "\n".join(wrong)
