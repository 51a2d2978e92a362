"""Start the grading sandbox with bubblewrap, and talk to the zygote inside it.

The sandbox is one bubblewrap (``bwrap``) process per grader, started once and reused for
every submission that grader takes (see :mod:`attnkit.student_process` for what runs
inside). It
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
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .bwrap import find_bubblewrap
from .layout import (
    WORKER_ENVIRONMENT,
    SandboxSettings,
    SandboxUnavailable,
    bootstrap_code,
    bwrap_command,
    explain_failure,
    package_dir,
    python_paths,
    site_dirs,
)
from .user import (
    SandboxAccount,
    account_of,
    check_sandbox_user,
    public_path,
    setpriv_prefix,
)

START_TIMEOUT = 120.0
SHARE_TIMEOUT = 90.0
"""Seconds the zygote may take to compute a lesson's shareable cells (twice each)."""
CONTROL_TIMEOUT = 15.0


class SandboxDied(Exception):
    """The sandbox's zygote stopped answering (the grader starts a new one)."""


STOP_REASONS = {
    "files": "the sandbox stopped the submission's process: it made more than 20,000 files "
    "in /tmp and /dev/shm, which costs the grading machine memory that no limit counts",
}
"""Why the sandbox's zygote stops a worker itself (see attnkit.student_process.zygote)."""


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
    stopped: str | None = None
    """Why the sandbox stopped it while it ran (a key of STOP_REASONS), if it did."""
    pid: int | None = None
    """Its process id in the sandbox (what the worker's ready message names)."""
    peak_rss: int | None = None
    """The most memory it held resident at once, in bytes: the kernel's account (wait4),
    read by the zygote as it reaped the worker."""

    @classmethod
    def parse(cls, data: dict[str, Any]) -> WorkerEnd:
        def number(key: str) -> Any:
            value = data.get(key)
            return value if isinstance(value, int | float) and not isinstance(value, bool) else None

        peak = number("max_rss_kib")
        return cls(
            signal=number("signal"),
            exit=number("exit"),
            cpu_seconds=float(number("cpu_seconds") or 0.0),
            cpu_limit=int(number("cpu_limit") or 0),
            by_sandbox=data.get("by_sandbox") is True,
            stopped=data["stopped"] if data.get("stopped") in STOP_REASONS else None,
            pid=int(number("pid")) if number("pid") is not None else None,
            peak_rss=int(peak) * 1024 if peak is not None and peak >= 0 else None,
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

    def __init__(self, settings: SandboxSettings, wait: bool = True) -> None:
        """Start the sandbox; with ``wait`` False, return at once and let the first
        :meth:`wait_ready` (or spawn or reset) wait for it, so that the grader's own start-up
        runs while the sandbox imports PyTorch."""
        self.settings = settings
        self.startup_seconds: float | None = None
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # Every send and receive on the control socket has a deadline: a zygote that stops
        # reading is a dead sandbox (socket.timeout is an OSError), never a wait without end.
        self.control.settimeout(CONTROL_TIMEOUT)
        self._scratch: str | None = None
        self._public: str | None = None
        self._account: SandboxAccount | None = None
        """--sandbox-user's account: what it can write is emptied after every student."""
        self.offered: set[str] = set()
        """Released cells sent to the zygote to compute once (see :meth:`share`)."""
        command = self._command(settings, theirs.fileno())
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
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Wait until the zygote says it is ready (once); raises SandboxUnavailable, saying
        why, when it cannot start."""
        if self.startup_seconds is not None:
            return
        try:
            ready = self._receive(START_TIMEOUT)
        except SandboxDied:
            self._stderr.seek(0)
            stderr = self._stderr.read().decode("utf-8", "replace")
            self.close()
            raise explain_failure(stderr) from None
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

    def _command(self, settings: SandboxSettings, control_fd: int) -> list[str]:
        """How the zygote starts: under bubblewrap, or as the sandbox user, or (for
        --no-sandbox) as a plain child process with its own scratch folder."""
        if settings.enabled and not settings.user:
            return bwrap_command(settings, control_fd)
        if settings.user:
            # Whatever an earlier sandbox of this run left as that user (a process, files
            # anywhere it can write) ends before this one starts.
            self._account = account_of(settings.user)
            check_sandbox_user(settings.user)
            self._account.end_processes()
            self._account.empty()
        self._scratch = tempfile.mkdtemp(prefix="attnkit-scratch-")
        interpreter, search = python_paths()
        search[0] = os.path.dirname(package_dir("attnkit"))
        if settings.user:
            # Only the public packages and site-packages' own, from a folder the
            # user cannot change (the scratch folder is the user's own).
            self._public = public_path(tempfile.mkdtemp(prefix="attnkit-path-"))
            sites = set(site_dirs())
            search = [self._public, *(p for p in search[1:] if p not in sites)]
        bootstrap = bootstrap_code(
            search, self._scratch, control_fd, own_user=bool(settings.user), plots=settings.plots
        )
        command = [interpreter, "-I", "-S", "-c", bootstrap]
        if settings.user:
            command = [*setpriv_prefix(settings.user), *command]
            import pwd

            entry = pwd.getpwnam(settings.user)
            os.chown(self._scratch, entry.pw_uid, entry.pw_gid)
            os.chmod(self._scratch, 0o700)
        return command

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
        self.wait_ready()
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

    def share(self, cells: tuple[dict[str, Any], ...]) -> frozenset[str]:
        """Have the zygote compute these released cells once (see
        attnkit_autograder.grading.shared_cells), each at most once per sandbox; the sources
        offered so far. Whether a cell can be shared the zygote decides, and a worker
        runs any other as usual. Raises SandboxDied if the zygote does not answer."""
        new = [cell for cell in cells if cell["source"] not in self.offered]
        if new:
            self.wait_ready()
            try:
                self.control.sendmsg([json.dumps({"op": "share", "cells": new}).encode()])
                answer = self._receive(SHARE_TIMEOUT)
            except OSError as exc:
                raise SandboxDied(f"the sandbox is gone ({exc})") from None
            if not isinstance(answer.get("shareable"), int):
                raise SandboxDied("the sandbox did not answer a request to share cells")
            self.offered |= {cell["source"] for cell in new}
        return frozenset(self.offered)

    def measure(self) -> dict[int, int]:
        """Each live worker's VmPeak (the most address space it ever mapped) as the zygote
        reads it from ``/proc``, in bytes, by pid. Raises SandboxDied if the zygote does not
        answer."""
        self.wait_ready()
        try:
            self.control.sendmsg([json.dumps({"op": "measure"}).encode()])
            answer = self._receive(CONTROL_TIMEOUT)
        except OSError as exc:
            raise SandboxDied(f"the sandbox is gone ({exc})") from None
        found = answer.get("measured")
        if not isinstance(found, dict):
            raise SandboxDied("the sandbox did not answer a request to measure")
        return {
            int(pid): sizes["VmPeak"]
            for pid, sizes in found.items()
            if pid.isdigit() and isinstance(sizes, dict) and isinstance(sizes.get("VmPeak"), int)
        }

    def reset(self, grace: float = 0.0) -> list[WorkerEnd]:
        """Kill every worker and empty /tmp; how each worker since the last reset ended.
        ``grace``: seconds to let a dying worker end by itself first (its pipes closed).
        Raises SandboxDied if the zygote does not confirm."""
        self.wait_ready()
        try:
            self.control.sendmsg([json.dumps({"op": "reset", "grace": float(grace)}).encode()])
            answer = self._receive(CONTROL_TIMEOUT)
        except OSError as exc:
            raise SandboxDied(f"the sandbox is gone ({exc})") from None
        if answer.get("clean") is not True:
            raise SandboxDied("the sandbox did not confirm its reset")
        if self._account is not None:
            # The zygote ended its workers and emptied its scratch folder; the account may
            # have written elsewhere too: every place it can write is emptied from here.
            self._account.end_processes(spare=(self.process.pid,))
            self._account.empty(keep=(self._scratch or "",))
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
        if self._account is not None:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                self._account.end_processes()
                self._account.empty()


def level_of(settings: SandboxSettings) -> str:
    """How a submission is isolated, in words (recorded in every result)."""
    if settings.user:
        return f"separate user {settings.user} (seccomp; no namespaces)"
    return "bubblewrap" if settings.enabled else "none (--no-sandbox)"


def _fds(*fds: int) -> bytes:
    import array

    return array.array("i", fds).tobytes()


def _plain_environment(settings: SandboxSettings) -> dict[str, str]:
    return {
        **WORKER_ENVIRONMENT,
        **({"ATTNKIT_VERDICT": settings.verdict} if settings.verdict else {}),
        **settings.extra_env,
    }


# One sandbox per grader process, started on first use and replaced if it dies.
_current: Zygote | None = None


def shared_zygote(settings: SandboxSettings, wait: bool = True) -> Zygote:
    """This grader's sandbox, started if there is none (``wait``: see :class:`Zygote`)."""
    global _current
    if _current is not None and (not _current.alive() or _current.settings != settings):
        _current.close()
        _current = None
    if _current is None:
        _current = Zygote(settings, wait=wait)
    if wait:
        try:
            _current.wait_ready()
        except SandboxUnavailable:
            _current = None
            raise
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
        raise explain_failure(probe.stderr.decode("utf-8", "replace"))
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
