# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-domain locks, so that a read-check-write of one domain by one module
run is never interleaved with another's: fcntl.flock on a file named by the
domain's UUID in a lock folder.

Locks hold only among processes on the machine that runs the module and use
the same folder; they do not reach other machines that talk to the same
libvirtd over a remote URI."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fcntl
import os
import stat
import tempfile
import time
from contextlib import contextmanager

from ansible_collections.overcommit.control.plugins.module_utils.common.errors import ObjectRefusal

DEFAULT_LOCK_DIR = "/run/lock/overcommit-control"
# How long a domain's lock is waited for before that domain fails.
TIMEOUT_SECONDS = 60.0
POLL_SECONDS = 0.05


class LockError(ObjectRefusal):
    """The lock folder cannot be used, or a domain's lock was not had in time."""


def fallback_dir():
    return os.path.join(tempfile.gettempdir(), "overcommit-control-locks")


def _usable(path):
    """Creates the folder (0700) when missing and checks it is a real folder
    of this user that nobody else may write to; returns why not, or None."""
    try:
        os.makedirs(path, 0o700)
    except OSError as exc:
        if exc.errno != errno.EEXIST:
            return "cannot create %s: %s" % (path, exc.strerror)
    try:
        info = os.lstat(path)
    except OSError as exc:
        return "cannot read %s: %s" % (path, exc.strerror)
    if not stat.S_ISDIR(info.st_mode):
        return "%s is not a folder" % path
    if info.st_uid != os.geteuid():
        return "%s belongs to uid %d, not to this user" % (path, info.st_uid)
    if info.st_mode & 0o022:
        return "%s may be written by others (mode %o)" % (path, stat.S_IMODE(info.st_mode))
    if not os.access(path, os.W_OK | os.X_OK):
        return "%s is not writable" % path
    return None


def lock_dir(requested):
    """The folder locks are kept in: `requested`, or when that is the
    default and cannot be used (/run/lock not writable), a folder in the
    system's temp dir. Raises LockError naming the folder and why."""
    why = _usable(requested)
    if why is None:
        return requested
    if requested == DEFAULT_LOCK_DIR:
        fallback = fallback_dir()
        why_fallback = _usable(fallback)
        if why_fallback is None:
            return fallback
        raise LockError("lock_dir: %s; and %s" % (why, why_fallback))
    raise LockError("lock_dir: %s" % why)


class DomainLocks(object):
    """Locks by domain UUID in one folder, created on first use."""

    def __init__(self, requested_dir, timeout=TIMEOUT_SECONDS, clock=time.monotonic, sleep=time.sleep):
        self.requested_dir = requested_dir
        self.timeout = timeout
        self.clock = clock
        self.sleep = sleep
        self.path = None

    def folder(self):
        if self.path is None:
            self.path = lock_dir(self.requested_dir)
        return self.path

    @contextmanager
    def hold(self, uuid, name):
        """Holds the lock of the domain `uuid` (named `name` in errors) for
        the with block; raises LockError when not had within the timeout."""
        path = os.path.join(self.folder(), "%s.lock" % uuid)
        try:
            handle = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError as exc:
            raise LockError("cannot open the lock %s of %s: %s" % (path, name, exc.strerror))
        try:
            deadline = self.clock() + self.timeout
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except (IOError, OSError) as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                        raise LockError("cannot lock %s of %s: %s" % (path, name, exc.strerror))
                if self.clock() >= deadline:
                    raise LockError("another run held the lock of %s (%s) for more than %g s"
                                    % (name, path, self.timeout))
                self.sleep(POLL_SECONDS)
            yield path
        finally:
            # Closing the file releases the lock; the file stays for the next run.
            os.close(handle)
