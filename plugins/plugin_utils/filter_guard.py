# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one guard of the collection's filters: bad input fails the template
with an error naming the filter and what was wrong, never a traceback."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools

from ansible.errors import AnsibleFilterError

# ValueError covers the collection's own ValueRangeError (which names the
# field); the others are what input of the wrong shape raises in pure code.
BAD_INPUT = (ValueError, TypeError, KeyError, AttributeError)


def filter_guard(function):
    """The filter `function`, whose bad input raises AnsibleFilterError
    "<filter name>: <what was wrong>"."""
    @functools.wraps(function)
    def guarded(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except BAD_INPUT as exc:
            raise AnsibleFilterError("%s: %s" % (function.__name__, exc))
    return guarded
