# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Certificate verification failures told apart from other connection errors,
so that every client names them and the options that decide them instead of
a bare SSL error (and never retries them: a certificate does not pass)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ssl


def certificate_refused(exc):
    """Whether exc is, or was caused by, a failed TLS certificate
    verification (the cause may be wrapped by urllib, urllib3 or the
    kubernetes client, in __cause__, __context__ or reason)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(exc):
            return True
        reason = getattr(exc, "reason", None)
        exc = exc.__cause__ or exc.__context__ or (reason if isinstance(reason, BaseException) else None)
    return False


def certificate_hint(exc, ca_option, validate_option):
    """" (TLS certificate verification failed: ...)" naming the options that
    decide it (ca_option None: the system's trusted CAs) when exc is a
    certificate refusal, else ""."""
    if not certificate_refused(exc):
        return ""
    trust = ("give the CA that signed it with %s" % ca_option if ca_option
             else "add the CA that signed it to the system's trusted CAs")
    return (" (TLS certificate verification failed: the server's certificate is not signed by a trusted CA; "
            "%s, or set %s: false to skip the verification)" % (trust, validate_option))
