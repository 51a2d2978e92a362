"""Linux Landlock, through ctypes: let a process give up file, network and signal access.

Landlock (Linux 5.13+) lets an unprivileged process restrict *itself*, irrevocably:
after :func:`restrict_self`, it can only touch the paths it listed, and neither it nor
its children can undo that. The grader's worker calls this just before it runs student
code. :func:`abi_version` returns 0 where the kernel has no Landlock.
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Iterable

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # x86-64 and arm64
RULE_PATH_BENEATH = 1
CREATE_RULESET_VERSION = 1
PR_SET_NO_NEW_PRIVS = 38

FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_ALL_V1 = (1 << 13) - 1  # execute .. make_sym
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ_ONLY = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
FILE_ACCESS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV


class RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class LandlockError(OSError):
    pass


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
        return 0
    version = _libc().syscall(SYS_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)
    return max(int(version), 0)


def handled_fs(abi: int) -> int:
    access = FS_ALL_V1
    if abi >= 2:
        access |= FS_REFER
    if abi >= 3:
        access |= FS_TRUNCATE
    if abi >= 5:
        access |= FS_IOCTL_DEV
    return access


def restrict_self(
    read_only: Iterable[str], read_write: Iterable[str], list_only: Iterable[str] = ()
) -> int:
    """Allow only these paths (and their contents) from now on; block TCP and outside signals.

    ``list_only`` folders may be listed but their files not read (unless a ``read_only``
    rule allows them): the import system needs to list site-packages.

    Returns the ABI version used. Raises LandlockError if the kernel refuses.
    """
    abi = abi_version()
    if abi < 1:
        raise LandlockError("Landlock is not available on this kernel")
    libc = _libc()
    fs_access = handled_fs(abi)
    attr = RulesetAttr(
        handled_access_fs=fs_access,
        handled_access_net=(NET_BIND_TCP | NET_CONNECT_TCP) if abi >= 4 else 0,
        scoped=(SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0,
    )
    size = ctypes.sizeof(RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        raise LandlockError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        rules = ((read_only, READ_ONLY), (read_write, fs_access), (list_only, FS_READ_DIR))
        for paths, access in rules:
            for path in paths:
                _add_path(libc, ruleset, path, access & fs_access)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise LandlockError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) failed")
        if libc.syscall(SYS_RESTRICT_SELF, ruleset, 0) != 0:
            raise LandlockError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return abi


def _add_path(libc: ctypes.CDLL, ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path that does not exist needs no rule
    try:
        if not os.path.isdir(path):
            access &= FILE_ACCESS  # only file rights apply to a file
        rule = PathBeneathAttr(allowed_access=access, parent_fd=fd)
        if libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise LandlockError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)
