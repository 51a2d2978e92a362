"""``--sandbox-user``: isolation by a separate unprivileged user, for hosts without user
namespaces (Gradescope's containers). With no namespaces, file permissions are what keep the
references, the other students' files and OUT from a submission: the run refuses to start
unless the kernel's own checks, made as that user, say they do.

Everything here is derived, never listed:

* the account must be the kit's alone (:func:`unfit_account`): not root, not a shared or
  system account, running no process and owning no file the kit did not make;
* what the account can write (:class:`SandboxAccount`) is found by walking the filesystem
  as that user; a file it could change that the kit cannot empty refuses the run, and every
  folder it can write is emptied of what it made after each student;
* the account's processes are ended by what this grader started: the processes of that
  uid below this process (a child subreaper, so nothing re-parents away), never every
  process of the uid on the machine.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shutil
import signal
import stat
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from .layout import (
    HIDDEN_PACKAGES,
    PUBLIC_PACKAGES,
    SandboxUnavailable,
    package_dir,
    python_paths,
    site_dirs,
)


def setpriv_prefix(user: str) -> list[str]:
    """setpriv's prefix that runs a command as ``user`` with no privileges left."""
    import pwd

    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise SandboxUnavailable(
            f"--sandbox-user {user}: there is no such user.",
            f"Create it first, e.g. `sudo useradd --system --no-create-home {user}`.",
        ) from None
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            "--sandbox-user needs the grader to run as root (to switch to that user)."
        )
    if shutil.which("setpriv") is None:
        raise SandboxUnavailable("--sandbox-user needs setpriv (util-linux), which is missing.")
    return [
        "setpriv",
        f"--reuid={entry.pw_uid}",
        f"--regid={entry.pw_gid}",
        "--clear-groups",
        "--no-new-privs",
        "--inh-caps=-all",
        "--bounding-set=-all",
    ]


# Shell conditions run as the sandbox user, one path at a time ($p).
CAN_REACH = (
    '{ [ -d "$p" ] && { [ -r "$p" ] || [ -x "$p" ]; }; } || { [ ! -d "$p" ] && [ -r "$p" ]; }'
)
CANNOT_USE = '! { [ -r "$p" ] && { [ ! -d "$p" ] || [ -x "$p" ]; }; }'


def paths_where(user: str, condition: str, paths: list[str]) -> list[str]:
    """Those of ``paths`` for which the shell ``condition`` holds when tested as ``user``
    (with no supplementary groups, as the workers run): the kernel's own permission checks."""
    if not paths:
        return []
    script = f'for p; do if {condition}; then printf "%s\\0" "$p"; fi; done'
    found = subprocess.run(
        [*setpriv_prefix(user), "xargs", "-0", "-r", "sh", "-c", script, "sh"],
        input=b"\0".join(os.fsencode(p) for p in paths),
        capture_output=True,
        cwd="/",
        timeout=300,
        check=False,
    )
    return [os.fsdecode(p) for p in found.stdout.split(b"\0") if p]


def _tree(root: str) -> list[str]:
    """A folder and everything below it (links are not followed), or a file."""
    found = [root]
    for folder, folders, files in os.walk(root):
        found += [os.path.join(folder, name) for name in folders + files]
    return found


def check_sandbox_user(user: str, private: tuple[str | os.PathLike[str], ...] = ()) -> None:
    """Refuse --sandbox-user, naming the path and what to do, unless ``user`` can run the
    grader's Python and can read none of the kit's references and hidden tests, nor any of
    ``private`` (the submissions folder, OUT): with no namespaces, file permissions are
    what keeps them from a submission."""
    interpreter, search = python_paths()
    needed = [interpreter, *search[1:], *(package_dir(p) for p in PUBLIC_PACKAGES)]
    for path in paths_where(user, CANNOT_USE, needed)[:1]:
        raise SandboxUnavailable(
            f"--sandbox-user {user}: that user cannot read {path}, which the grader's Python "
            "needs to run submissions.",
            f"Install the kit into a Python that {user} can read (for instance a virtual "
            "environment made with /usr/bin/python3 outside /root), or make that path "
            f"readable for {user}.",
        )
    hidden = [*(package_dir(name) for name in HIDDEN_PACKAGES), *install_sources()]
    for root in [*hidden, *(os.path.abspath(path) for path in private)]:
        readable = readable_below(user, root)
        if readable:
            what = "the kit's references and hidden tests" if root in hidden else "not public"
            raise SandboxUnavailable(
                f"--sandbox-user {user}: that user can read {readable[0]} ({what}).",
                f"Make it unreadable for other users, e.g. `chmod -R o-rwx {root}`, and keep "
                f"{user} out of its owner and group.",
            )


def install_sources() -> list[str]:
    """The references and hidden tests of the checkout the kit was installed from, where pip
    recorded one (a non-editable install of a local folder, in ``direct_url.json``): as
    secret as the installed copies, and found without a list to keep."""
    import json
    from importlib.metadata import PackageNotFoundError, distribution
    from urllib.parse import unquote, urlparse

    try:
        recorded = json.loads(distribution("attention-kit").read_text("direct_url.json") or "{}")
    except (PackageNotFoundError, ValueError):
        return []
    url = recorded.get("url", "") if isinstance(recorded, dict) else ""
    if not isinstance(url, str) or not url.startswith("file://"):
        return []
    root = unquote(urlparse(url).path)
    found = (os.path.join(root, folder) for folder in ("solutions", "autograder"))
    return [folder for folder in found if os.path.isdir(folder)]


def readable_below(user: str, root: str) -> list[str]:
    """What ``user`` can read or list of ``root`` and everything below it."""
    return paths_where(user, CAN_REACH, _tree(os.path.abspath(root)))


def public_path(folder: str) -> str:
    """``folder``, filled with links to what a worker may import under --sandbox-user: the
    public packages and everything in site-packages but the hidden packages, editable
    finders and .pth files (which could map the hidden packages back in)."""
    os.chmod(folder, 0o755)
    entries = {name: package_dir(name) for name in PUBLIC_PACKAGES}
    for site in site_dirs():
        for name in os.listdir(site):
            hidden = name.startswith((*HIDDEN_PACKAGES, "__editable__", "_attnkit"))
            if not hidden and not name.endswith(".pth") and name not in entries:
                entries[name] = os.path.join(site, name)
    for name, target in entries.items():
        os.symlink(target, os.path.join(folder, name))
    return folder


# -- the account --------------------------------------------------------------------------


SHARED_ACCOUNTS = ("nobody", "nfsnobody", "nogroup")
"""Accounts that other software runs as by convention."""
LOGIN_DEFS = "/etc/login.defs"


def first_regular_uid(login_defs: str = LOGIN_DEFS) -> int:
    """UID_MIN of login.defs (1000 when it says none): below it are system accounts."""
    with (
        contextlib.suppress(OSError, ValueError),
        open(login_defs, encoding="utf-8", errors="replace") as handle,
    ):
        for line in handle:
            words = line.split()
            if len(words) >= 2 and words[0] == "UID_MIN":
                return int(words[1])
    return 1000


def processes_of(uid: int) -> list[tuple[int, int, str]]:
    """(pid, parent pid, command) of every process any of whose uids (real, effective,
    saved, filesystem) is ``uid``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{name}/status", encoding="utf-8", errors="replace") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
            uids = {int(u) for u in fields["Uid"].split()}
            if uid in uids and not fields.get("State", "").strip().startswith("Z"):
                command = fields.get("Name", "?").strip()
                found.append((int(name), int(fields["PPid"].split()[0]), command))
    return found


def unfit_account(entry: Any, running: list[tuple[int, int, str]]) -> str | None:
    """Why ``entry`` (a pwd entry) cannot be the sandbox's account, or None: the account's
    processes are ended and its files removed after every student, so it must be the
    kit's alone. ``running``: the account's processes this run did not start."""
    if entry.pw_uid == 0:
        return "it is root"
    if entry.pw_name in SHARED_ACCOUNTS or entry.pw_uid in (65534, 4294967294):
        return "it is a shared account that other software runs as"
    floor = first_regular_uid()
    if entry.pw_uid < floor:
        return f"it is a system account (uid {entry.pw_uid}, below UID_MIN {floor})"
    if running:
        pid, _, command = running[0]
        return (
            f"it runs {len(running)} process(es) the kit did not start (pid {pid}, {command}); "
            "another grading run may be using it"
        )
    return None


def create_hint(user: str) -> str:
    return (
        "Give the sandbox an account of its own, made for it: e.g. `sudo useradd "
        f"--no-create-home --shell /usr/sbin/nologin {user}` (not --system), used by "
        "nothing else and by one grading run at a time."
    )


# -- what the account can write -------------------------------------------------------------


@dataclass(frozen=True)
class SandboxAccount:
    """The account of ``--sandbox-user``, and every folder it can write (``places``)."""

    name: str
    uid: int
    gid: int
    places: tuple[str, ...]

    def empty(self, keep: tuple[str, ...] = ()) -> None:
        """Remove what the account made in every place it can write (but ``keep``: the
        running zygote's scratch folder, which it empties itself). Only the account's own
        entries go: in a folder with the sticky bit it can touch nothing else."""
        for place in self.places:
            with contextlib.suppress(OSError):
                for entry in os.scandir(place):
                    with contextlib.suppress(OSError):
                        if (
                            entry.path in keep
                            or entry.stat(follow_symlinks=False).st_uid != self.uid
                        ):
                            continue
                        if entry.is_dir(follow_symlinks=False):
                            _remove_tree(entry.path)
                        else:
                            os.unlink(entry.path)

    def end_processes(self, spare: tuple[int, ...] = ()) -> None:
        """Kill every process of the account below this grader (see :func:`adopt_orphans`),
        but ``spare`` (a live zygote), until none is left: what this run started, and
        nothing else of that uid."""
        me = os.getpid()
        for _ in range(50):
            mine = [p for p in _descendants(processes_of(self.uid), me) if p not in spare]
            if not mine:
                return
            for pid in mine:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)
            for pid in mine:  # those re-parented here are this process's to reap
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)


def _descendants(processes: list[tuple[int, int, str]], root: int) -> list[int]:
    """The pids of ``processes`` that descend from ``root``."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            with (
                contextlib.suppress(OSError, ValueError, IndexError),
                open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as handle,
            ):
                parents[int(name)] = int(handle.read().rsplit(")", 1)[1].split()[1])
    found = []
    for pid, _, _ in processes:
        at, seen = pid, set()
        while at not in (0, 1, root) and at not in seen:
            seen.add(at)
            at = parents.get(at, 0)
        if at == root:
            found.append(pid)
    return found


def _remove_tree(path: str) -> None:
    """Remove a folder a submission made, however it set its modes or nested it."""
    subprocess.run(["chmod", "-R", "u+rwx", "--", path], capture_output=True, check=False)
    subprocess.run(["rm", "-rf", "--", path], capture_output=True, check=False, timeout=300)


def adopt_orphans() -> None:
    """Make this process a child subreaper: a process below it whose parent ends is
    re-parented here, never to init, so :meth:`SandboxAccount.end_processes` still finds it."""
    import ctypes

    pr_set_child_subreaper = 36
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 1, 0, 0, 0)


def walk(uid: int) -> list[str]:
    """find's command line, run as the account: everything it may write (the kernel's own
    check) or owns, but links, with its type, owner, mode and path."""
    return [
        "find", "/", "(", "-path", "/proc", "-o", "-path", "/sys", ")", "-prune", "-o",
        "(", "-writable", "-o", "-uid", str(uid), ")", "!", "-type", "l",
        "-printf", "%y %U %m %p\\0",
    ]  # fmt: skip


def writable_by(user: str, uid: int) -> list[tuple[str, int, int, str]]:
    """(type letter, owner, mode bits, path) of every file and folder ``user`` can write or
    owns, found by walking the filesystem as that user (/proc and /sys aside)."""
    done = subprocess.run(
        [*setpriv_prefix(user), *walk(uid)],
        capture_output=True,
        cwd="/",
        timeout=600,
        check=False,
    )
    found = []
    for item in done.stdout.split(b"\0"):
        parts = item.split(b" ", 3)
        if len(parts) == 4 and parts[1].isdigit():
            with contextlib.suppress(ValueError):
                found.append(
                    (parts[0].decode(), int(parts[1]), int(parts[2], 8), os.fsdecode(parts[3]))
                )
    return found


def places_of(user: str, uid: int) -> tuple[str, ...]:
    """The folders ``user`` can write, or a refusal naming something it could change that
    the kit cannot empty between students: a file not its own, a folder without the
    sticky bit where others' files live, a block device, or files it owned before the run
    (in a folder of its own, such as a home directory)."""
    found = writable_by(user, uid)
    owned_folders = {path for kind, owner, _, path in found if kind == "d" and owner == uid}
    places = []
    for kind, owner, mode, path in found:
        if kind == "d":
            if owner != uid and not mode & stat.S_ISVTX and os.listdir(path):
                raise SandboxUnavailable(
                    f"--sandbox-user {user}: that user can write {path}, a folder without the "
                    "sticky bit where other accounts' files live (it could remove or rename "
                    "them, and so pass something to the next student).",
                    f"Take write access away (e.g. `chmod o-w {path}`) or set the sticky bit.",
                )
            places.append(path)
        elif kind in ("f", "b") and owner != uid:
            raise SandboxUnavailable(
                f"--sandbox-user {user}: that user can write {path}, which the kit cannot "
                "empty between students (a submission could leave something there for the "
                "next one).",
                f"Take write access away, e.g. `chmod o-w {path}`.",
            )
        elif owner == uid and os.path.dirname(path) in owned_folders:
            raise SandboxUnavailable(
                f"--sandbox-user {user}: that account already owns {path}; the kit empties "
                "everything the account makes after each student.",
                create_hint(user),
            )
    return tuple(places)


def claim(user: str, private: tuple[str | os.PathLike[str], ...] = ()) -> SandboxAccount:
    """The account held for this run (see :func:`hold`), once the grader's Python is proved
    usable by it and ``private`` (what the instructor handed the run) and the kit's
    references unreadable to it (see :func:`check_sandbox_user`); or a refusal naming why."""
    account = hold(user)
    check_sandbox_user(user, private)
    return account


def hold(user: str) -> SandboxAccount:
    """The account, checked fit for the sandbox and held by this run, with every place it
    can write found and emptied of an earlier run's leftovers; or a refusal naming why.
    The run's first hold takes a lock on the account that a second run cannot take; the
    run's own grader processes (below the holder) may hold it again."""
    import pwd

    setpriv_prefix(user)  # refuses a missing account, a grader not root, no setpriv
    entry = pwd.getpwnam(user)
    holder = _lock(user, entry.pw_uid)
    running = processes_of(entry.pw_uid)
    ours = set(_descendants(running, holder))
    why = unfit_account(entry, [p for p in running if p[0] not in ours])
    if why:
        raise SandboxUnavailable(f"--sandbox-user {user}: {why}.", create_hint(user))
    account = SandboxAccount(user, entry.pw_uid, entry.pw_gid, places_of(user, entry.pw_uid))
    adopt_orphans()
    account.end_processes()
    account.empty()
    return account


_HELD: dict[int, int] = {}
"""The lock of each account this process holds (an open descriptor, kept for its life)."""


def _lock(user: str, uid: int) -> int:
    """Hold the account for this run: an exclusive lock, in a folder only root can write,
    that records its holder. The pid of the holder: this process, or the ancestor of it
    (the run's coordinator) that already holds it."""
    folder = "/run/attnkit" if os.access("/run", os.W_OK) else "/var/lock/attnkit-root"
    os.makedirs(folder, mode=0o700, exist_ok=True)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
        raise SandboxUnavailable(f"--sandbox-user: {folder} is not a folder only root can write.")
    if uid in _HELD:
        return os.getpid()
    path = f"{folder}/sandbox-user-{uid}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode("ascii", "replace").strip()
        os.close(fd)
        if holder.isdigit() and int(holder) in _ancestors():
            return int(holder)
        raise SandboxUnavailable(
            f"--sandbox-user {user}: another grading run (pid {holder or '?'}) is using that "
            "account.",
            "Wait for it to finish, or give this run an account of its own.",
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    _HELD[uid] = fd
    return os.getpid()


def _ancestors() -> set[int]:
    """The pids above this process."""
    found, at = set(), os.getppid()
    while at > 1 and at not in found:
        found.add(at)
        try:
            with open(f"/proc/{at}/stat", encoding="utf-8", errors="replace") as handle:
                at = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return found


@functools.cache
def account_of(user: str) -> SandboxAccount:
    """This process's hold on ``user``, made once (see :func:`hold`); the zygote's start
    (Zygote._command) checks the grader's Python itself."""
    return hold(user)
