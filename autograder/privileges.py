"""Drop root to a sandbox uid while keeping the one capability a worker needs.

A worker forked from a grader running as root becomes an unprivileged uid, so that
per-user process limits apply to it (they never apply to root) and it cannot signal or
out-limit anything else. It keeps CAP_DAC_READ_SEARCH: Python's own files may live
somewhere that uid cannot traverse (a pyenv under /root, say). That capability only
bypasses file *permissions*; Landlock still decides which paths can be read at all.
"""

from __future__ import annotations

import ctypes
import os

PR_SET_KEEPCAPS = 8
LINUX_CAPABILITY_VERSION_3 = 0x20080522
CAP_DAC_READ_SEARCH = 2


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_to(uid: int) -> None:
    """Become ``uid`` (and gid), keeping only CAP_DAC_READ_SEARCH. Must start as root."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_KEEPCAPS) failed")
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    keep = 1 << CAP_DAC_READ_SEARCH
    header = CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (CapData * 2)(CapData(keep, keep, 0), CapData(0, 0, 0))
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
