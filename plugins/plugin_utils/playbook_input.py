# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The variables a playbook is run with, checked before anything runs: each
value against its kind, named as the user typed it; targets and reasons that
would do nothing refused; a variable the playbook does not read but whose
name is close to one it does named beside it; the host groups the playbook
needs matched by at least one host. Pure: no I/O.

A spec is {variable: kind} or {variable: {kind: ..., choices: [...],
about: "what it is"}}, the kinds in KINDS."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import math

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ValueRangeError
from ansible_collections.overcommit.control.plugins.module_utils.common.names import MAX_NAME_CHARS, MAX_NAMES
from ansible_collections.overcommit.control.plugins.module_utils.domain.cpu import CPUS_ALLOWED, parse_cpus

# Booleans as Ansible reads them from -e key=value.
_TRUE = ("true", "yes", "on", "1", "y", "t")
_FALSE = ("false", "no", "off", "0", "n", "f")
# How close an unknown name must be to a known one to be taken for a typo of it.
TYPO_CUTOFF = 0.75


def _names(field, value, choices=None):
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValueRangeError(field, value, "a list of names, such as [\"web-17\", \"web-18\"]")
    if not value:
        raise ValueRangeError(field, value, "at least one name (an empty list targets nothing)")
    if len(value) > MAX_NAMES:
        raise ValueRangeError(field, "%d names" % len(value), "at most %d names in one run" % MAX_NAMES)
    seen = set()
    for name in value:
        if not isinstance(name, str) or not name.strip():
            raise ValueRangeError(field, name, "names as non-empty text")
        if len(name) > MAX_NAME_CHARS:
            raise ValueRangeError(field, name[:16] + "...", "names of at most %d characters" % MAX_NAME_CHARS)
        if choices and name not in choices:
            raise ValueRangeError(field, name, ", ".join(choices))
        if name in seen:
            raise ValueRangeError(field, name, "each name once (it is given twice)")
        seen.add(name)
    return list(value)


def _number(field, value, allowed):
    if isinstance(value, bool):
        raise ValueRangeError(field, value, allowed)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueRangeError(field, value, allowed)
    if not math.isfinite(number) or abs(number) >= 2 ** 63:
        raise ValueRangeError(field, value, allowed)
    return number


def _text(field, value):
    if not isinstance(value, str) or not value.strip():
        raise ValueRangeError(field, value, "a non-empty text")
    return value


def _optional_text(field, value):
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueRangeError(field, value, "a text (empty: not set)")
    return value


def _bool(field, value):
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueRangeError(field, value, "true or false")


def _count(field, value):
    number = _number(field, value, "a whole number, at least 1")
    if number != int(number) or number < 1:
        raise ValueRangeError(field, value, "a whole number, at least 1")
    return int(number)


def _seconds(field, value):
    number = _number(field, value, "a number of seconds above 0")
    if number <= 0:
        raise ValueRangeError(field, value, "a number of seconds above 0")
    return number


def _seconds_or_zero(field, value):
    number = _number(field, value, "a number of seconds, 0 or more")
    if number < 0:
        raise ValueRangeError(field, value, "a number of seconds, 0 or more")
    return number


def _share(field, value):
    number = _number(field, value, "a share from 0 to 1")
    if not 0 <= number <= 1:
        raise ValueRangeError(field, value, "a share from 0 to 1")
    return number


def _mapping(field, value):
    if not isinstance(value, dict):
        raise ValueRangeError(field, value, "a mapping of names to values")
    return value


def _choice(field, value, choices):
    if not isinstance(value, str) or value not in choices:
        raise ValueRangeError(field, value, ", ".join(choices))
    return value


def _hosts(field, value):
    return _text(field, value)


KINDS = {
    "names": _names,
    "cpus": parse_cpus,
    "text": _text,
    # A text whose empty value means "not set", as the rulebooks hand such variables on.
    "optional_text": _optional_text,
    "bool": _bool,
    "count": _count,
    "seconds": _seconds,
    "seconds_or_zero": _seconds_or_zero,
    "share": _share,
    "mapping": _mapping,
    "choice": _choice,
    # A host pattern (a group name, or "a:&b"); checked for hosts by the caller.
    "hosts": _hosts,
    # Read as given: its role checks it.
    "any": lambda field, value: value,
}


# What each kind allows, in words, for "needs X (...)".
ALLOWED_WORDS = {
    "names": "a list of names", "cpus": CPUS_ALLOWED, "text": "a non-empty text", "optional_text": "a text",
    "bool": "true or false", "count": "a whole number, at least 1", "seconds": "a number of seconds above 0",
    "seconds_or_zero": "a number of seconds, 0 or more", "share": "a share from 0 to 1", "mapping": "a mapping",
    "hosts": "a group or host pattern", "choice": "one of its choices", "any": "see the playbook's header",
}


def _rule(field, rule):
    if isinstance(rule, str):
        rule = {"kind": rule}
    if not isinstance(rule, dict) or rule.get("kind") not in KINDS:
        raise ValueRangeError("variables.%s" % field, rule, "one of " + ", ".join(sorted(KINDS)))
    return rule


def check_value(field, value, rule):
    """The value as the playbook may use it; raises ValueRangeError naming
    `field` (the variable as the user typed it)."""
    rule = _rule(field, rule)
    if rule.get("choices") is not None:
        if rule["kind"] == "names":
            return _names(field, value, rule["choices"])
        return _choice(field, value, rule["choices"])
    return KINDS[rule["kind"]](field, value)


def close_name(name, known):
    """The known variable an unknown one is most likely a typo of, or None."""
    matches = difflib.get_close_matches(name, sorted(known), n=1, cutoff=TYPO_CUTOFF)
    return matches[0] if matches else None


def check(playbook, variables, given, typed=(), required=(), one_of=()):
    """Every problem with the variables of a run of `playbook`, one line
    each, and the values as checked.

    variables: the spec; given: {name: value} of the spec's variables the
    run has; typed: every name the user passed (-e), to find typos of the
    spec's names in; required: names that must be given; one_of: lists of
    names of which at least one must be given. A spec the check cannot
    follow raises ValueRangeError naming it."""
    for name, rule in variables.items():
        _rule(name, rule)
    for name in list(required) + [name for names in one_of for name in names]:
        if name not in variables:
            raise ValueRangeError("required|one_of", name, "variables of the spec: %s" % ", ".join(sorted(variables)))
    errors, values = [], {}
    for name in sorted(set(typed) - set(variables)):
        if name.startswith("ansible_"):
            continue
        known = close_name(name, variables)
        if known is not None:
            errors.append("%s is not a variable of %s: did you mean %s?" % (name, playbook, known))
    for name in required:
        if name not in given:
            errors.append("%s needs %s (%s); pass it with -e" % (playbook, name, _about(variables[name])))
    for names in one_of:
        # An empty text is a variable not set: a target it cannot be.
        if not any(name in given and given[name] not in ("", None) for name in names):
            errors.append("%s needs one of %s; pass it with -e"
                          % (playbook, ", ".join(_named(name, variables[name]) for name in names)))
    for name in sorted(given):
        if name not in variables:
            continue
        try:
            values[name] = check_value(name, given[name], variables[name])
        except ValueRangeError as exc:
            errors.append(str(exc))
    return errors, values


def _named(name, rule):
    """A variable's name, with what it is when the spec says so."""
    rule = _rule(name, rule)
    return "%s (%s)" % (name, rule["about"]) if rule.get("about") else name


def _about(rule):
    """What a variable is or allows, in words, for "needs X (...)"."""
    rule = _rule("variable", rule)
    if rule.get("about"):
        return rule["about"]
    if rule.get("choices"):
        return "one of " + ", ".join(rule["choices"])
    return ALLOWED_WORDS[rule["kind"]]


def host_patterns(playbook, groups, given, former_members):
    """The host pattern each group of a run resolves to, and the deprecation
    notes it earns: a group's `variable` when given, else its `default`. A
    group may name the group it `formerly` defaulted to (stage 1 ran its
    Kubernetes, KubeVirt and vSphere plays on `controllers`; every stage now
    calls those APIs from localhost): that group is still used, with a
    deprecation note, when the inventory puts a host other than localhost in
    it, so an inventory written for the old default keeps working.
    former_members: {group: [host names]}."""
    patterns, notes = {}, []
    for group in groups:
        variable = group.get("variable")
        if variable and variable in given:
            patterns[variable] = given[variable]
            continue
        pattern = group["default"]
        former = group.get("formerly")
        if former and set(former_members.get(former) or []) - set(["localhost"]):
            pattern = former
            if _needed(group, given):
                notes.append("%s: the %s group as the hosts of -e %s is deprecated: the Kubernetes, KubeVirt "
                             "and vSphere plays of every playbook run on %s now; pass -e %s=%s to keep these hosts"
                             % (playbook, former, variable, group["default"], variable, former))
        patterns[variable or group["default"]] = pattern
    return patterns, notes


def _needed(group, given):
    """A group is needed when any of its `when` names is given, or always without `when`."""
    needed_by = group.get("when")
    return not needed_by or any(name in given for name in needed_by)


def empty_host_groups(playbook, groups, given, patterns, matched):
    """Problems with the host groups a run needs: groups is a list of
    {variable, default, formerly, when: [names]} (without `variable` the
    group is fixed); patterns: what host_patterns resolved them to;
    matched: {pattern: number of hosts it matches}. One line per needed
    group that matches no host."""
    errors = []
    for group in groups:
        if not _needed(group, given):
            continue
        variable = group.get("variable")
        pattern = patterns[variable or group["default"]]
        if matched.get(pattern):
            continue
        if variable:
            errors.append("no host of the inventory is in %s, the hosts %s acts on (choose them with -e %s=GROUP)"
                          % (pattern, playbook, variable))
        else:
            errors.append("no host of the inventory is in the group %s, the hosts %s acts on" % (pattern, playbook))
    return errors
