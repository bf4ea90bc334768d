# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Retries of transient faults with jittered exponential back-off, as a
decorator (in the manner of amazon.aws's AWSRetry.jittered_backoff), bounded
both in tries and in total time, and recorded in a RetryLog that the caller
reports in its result. Pure: the only effects are the injected sleep, clock
and random."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import random as random_module
import time

# Distinct transient faults kept in a log; the count of retries covers all.
ERRORS_KEPT = 10


class Transient(object):
    """What is_transient(exc) answers for a fault worth retrying: a short
    label for the log and messages ("HTTP 429", "connection dropped"), and
    the wait the server asked for (Retry-After), if it did."""

    def __init__(self, label, retry_after=None):
        self.label = label
        self.retry_after = retry_after


class RetryLog(object):
    """What the retries of one client did, over all its calls: attempts
    (calls made again after a transient fault), the seconds waited between
    them, and the transient faults met (the last ERRORS_KEPT, without
    repeats in a row). gave_up: (fault, tries, seconds) of the last call
    that ran out of tries or time."""

    def __init__(self):
        self.attempts = 0
        self.waited = 0.0
        self.errors = []
        self.gave_up = None

    def record(self, label, waited):
        self.attempts += 1
        self.waited += waited
        if not self.errors or self.errors[-1] != label:
            self.errors.append(label)
            del self.errors[:-ERRORS_KEPT]

    def report(self):
        """The `retries` entry of a module's result, or None when no call was retried."""
        if not self.attempts:
            return None
        return {"attempts": self.attempts, "waited_seconds": round(self.waited, 3), "errors": list(self.errors)}


def _as_transient(answer, exc):
    if not answer:
        return None
    if isinstance(answer, Transient):
        return answer
    return Transient(answer if isinstance(answer, str) else type(exc).__name__)


def given_up_message(tries, elapsed):
    """How long a call was retried, for the message of a fault it gave up on."""
    if tries <= 1:
        return "not retried"
    return "tried %d times over %.1f s" % (tries, elapsed)


def _mark(exc, tries, elapsed, label):
    try:
        exc.retry_tries, exc.retry_seconds, exc.retry_label = tries, elapsed, label
    except (AttributeError, TypeError):  # e.g. pyVmomi faults take only their declared properties
        pass


def retry_note(exc, log=None):
    """"; tried N times over S s" for a fault that was retried until the
    tries or the time ran out, else "". Faults that take no new attributes
    (pyVmomi's) are found in the log of the retries."""
    tries, seconds = getattr(exc, "retry_tries", 1), getattr(exc, "retry_seconds", 0.0)
    if log is not None and log.gave_up is not None and log.gave_up[0] is exc:
        tries, seconds = log.gave_up[1:]
    return "" if tries <= 1 else "; %s" % given_up_message(tries, seconds)


def jittered_backoff(retries=6, delay=0.5, max_delay=10.0, total_seconds=30.0, is_transient=None, log=None,
                     sleep=time.sleep, clock=time.monotonic, random=random_module.random):
    """A decorator that calls the function again after a transient fault.

    is_transient(exc) -> falsy (the fault is raised at once), True, a label,
    or a Transient (label and the Retry-After the server asked for).
    Between tries it sleeps a "full jitter" back-off: a random time between 0
    and min(max_delay, delay * 2**n) for the n-th retry, or at least the
    server's Retry-After. It stops after `retries` retries, or when the next
    sleep would end past `total_seconds` after the first try; then the last
    fault is raised, with `retry_tries` (the tries made) and `retry_seconds`
    (the time since the first) set on it. Every retry goes in `log`.
    """
    def decorator(function):
        @functools.wraps(function)
        def retrying(*args, **kwargs):
            started = clock()
            tries = 0
            while True:
                tries += 1
                try:
                    return function(*args, **kwargs)
                except Exception as exc:
                    transient = _as_transient(is_transient(exc) if is_transient else None, exc)
                    elapsed = clock() - started
                    if transient is None:
                        raise
                    pause = random() * min(max_delay, delay * 2 ** (tries - 1))
                    if transient.retry_after is not None:
                        pause = max(pause, transient.retry_after)
                    if tries > retries or elapsed + pause > total_seconds:
                        _mark(exc, tries, elapsed, transient.label)
                        if log is not None:
                            log.gave_up = (exc, tries, elapsed)
                        raise
                    sleep(pause)
                    if log is not None:
                        log.record(transient.label, pause)
        return retrying
    return decorator


class ReportsRetries(object):
    """Mixin for a module class (before AnsibleModule in its bases): the
    result of the task, success or failure, carries `retries` when a call
    of its client (whose RetryLog is kept as `retry_log`) was tried again."""

    retry_log = None

    def _with_retries(self, result):
        report = self.retry_log.report() if self.retry_log is not None else None
        if report and "retries" not in result:
            result["retries"] = report
        return result

    def exit_json(self, **kwargs):
        super(ReportsRetries, self).exit_json(**self._with_retries(kwargs))

    def fail_json(self, msg, **kwargs):
        super(ReportsRetries, self).fail_json(msg, **self._with_retries(kwargs))
