# -*- coding: utf-8 -*-
"""Every event source is documented as ansible.eda documents its sources:
DOCUMENTATION with each argument the code reads, and EXAMPLES that use only
documented arguments."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import glob
import os

import pytest
import yaml

from ansible_collections.overcommit.control.plugins.module_utils.common import rounds

SOURCES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "..", "..", "extensions", "eda", "plugins",
                                        "event_source", "*.py")))


def strings_and_arguments(path):
    tree = ast.parse(open(path).read())
    strings, read = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    strings[target.id] = node.value.value
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "args" and node.args
                and isinstance(node.args[0], ast.Constant)):
            read.add(node.args[0].value)
        if isinstance(node, ast.Name) and node.id == "put_rounds":
            read.update(rounds.ARGUMENTS)
    return strings, read


@pytest.mark.parametrize("path", SOURCES, ids=os.path.basename)
def test_source_documents_every_argument_it_reads(path):
    strings, read = strings_and_arguments(path)
    documentation = yaml.safe_load(strings["DOCUMENTATION"])
    assert documentation["short_description"] and documentation["description"]
    assert set(documentation["options"]) == read
    for option in documentation["options"].values():
        assert option["description"] and option["type"]
    name = "overcommit.control." + os.path.basename(path)[:-3]
    for example in yaml.safe_load(strings["EXAMPLES"]):
        assert set(example) == {name} and set(example[name]) <= read


def test_there_is_a_source():
    assert SOURCES
