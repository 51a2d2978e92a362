"""The grader's side of isolation: run a submission in sandboxed workers, one call at a time.

:class:`IsolatedSubmission` implements the same ``run(adapter, **kwargs)`` interface as
code in this process, so the hidden suites run unchanged against it. Each call goes to
a worker (see :mod:`.worker`) with a deadline. A call that overruns its deadline, or a
worker that dies (``os._exit``, a segfault, the memory limit), costs only that call:
the worker's whole process group is killed, the failure becomes the test's verdict, and
a fresh worker is started for the next test. A budget per submission bounds the total.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from attnkit.adapters import MissingDefinition
from attnkit.notebook_code import Definitions
from attnkit.wire import WireError, decode, encode

from . import worker

PRELOAD = [
    "numpy",
    "torch",
    "attnkit.adapters",
    "attnkit.forbidden",
    "attnkit.notebook_code",
    "attnkit.wire",
    "attnkit_autograder.landlock",
    "attnkit_autograder.privileges",
    "attnkit_autograder.worker",
]
SLOT_UID_BASE = 61_000
CLEAN_ENVIRONMENT = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"}


class WorkerTimeout(Exception):
    """A call (or the submission's whole budget) ran out of time."""


class WorkerCrashed(Exception):
    """The worker process died while answering."""


class SubmissionError(Exception):
    """The submission's code raised an exception; ``type_name`` is its class name."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


@contextlib.contextmanager
def clean_environment() -> Iterator[None]:
    """Start the zygote with a minimal environment: no instructor secrets to read."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(CLEAN_ENVIRONMENT)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def bare_main_module() -> Iterator[None]:
    """Hide the grader's ``__main__`` while a worker starts.

    multiprocessing otherwise re-imports the parent's main module in the child (before
    the sandbox is up), which would load grader code into the worker's memory.
    """
    import sys
    import types

    saved = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = saved


_context: multiprocessing.context.BaseContext | None = None


def zygote() -> multiprocessing.context.BaseContext:
    """This process's forkserver context, started once with the worker's modules preloaded."""
    global _context
    if _context is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        from multiprocessing import forkserver

        with clean_environment():
            forkserver.ensure_running()
        _context = context
    return _context


def describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "stopped responding"
    if exitcode < 0:
        name = signal.Signals(-exitcode).name
        reasons = {
            "SIGSEGV": "crashed (segmentation fault)",
            "SIGKILL": "was killed (memory or process limit, or an infinite loop)",
            "SIGXCPU": "used up its CPU time limit",
            "SIGABRT": "aborted",
        }
        return reasons.get(name, f"was killed by {name}")
    return f"exited with status {exitcode} (os._exit or sys.exit during a call)"


class IsolatedSubmission:
    """One submission, answered by sandboxed workers."""

    def __init__(
        self,
        definitions: Definitions,
        *,
        slot: int = 0,
        call_timeout: float = 10.0,
        budget: float = 60.0,
        memory_bytes: int = 2 * 1024**3,
        label: str = "submission",
    ) -> None:
        self.definitions = definitions
        self.label = label
        self.call_timeout = call_timeout
        self.deadline = time.monotonic() + budget
        self.slot = slot
        self.memory_bytes = memory_bytes
        self.notes: list[str] = []
        self.sandbox: dict[str, Any] = {}
        self._process: Any = None
        self._conn: Any = None
        self._tmpdir: str | None = None
        self._next_id = 0
        self.spawned = 0
        self.timed_out: set[str] = set()

    # -- lifecycle ----------------------------------------------------------------------------

    def _remaining(self) -> float:
        return self.deadline - time.monotonic()

    def _uid(self) -> int | None:
        return SLOT_UID_BASE + self.slot if os.geteuid() == 0 else None

    def _spawn(self) -> None:
        context = zygote()
        self._tmpdir = tempfile.mkdtemp(prefix="attnkit-sandbox-")
        limits = worker.SandboxLimits(
            memory_bytes=self.memory_bytes,
            cpu_seconds=max(5, int(self._remaining()) + 5),
            uid=self._uid(),
            tmpdir=self._tmpdir,
            readable=worker.readable_paths(),
            listable=tuple(worker.site_packages()),
        )
        parent_end, child_end = context.Pipe(duplex=True)
        process = context.Process(target=worker.serve, args=(child_end, limits), daemon=True)
        with bare_main_module():
            process.start()
        child_end.close()
        self._process, self._conn = process, parent_end
        self.spawned += 1
        ready = self._receive(min(30.0, max(self._remaining(), 1.0)), "start")
        self.sandbox = ready.get("ready", {}) if isinstance(ready, dict) else {}
        statements = [
            {"cell": s.cell, "line": s.line, "names": list(s.names), "code": s.code}
            for s in self.definitions.statements
        ]
        self._conn.send_bytes(encode({"op": "load", "statements": statements}))
        loaded = self._receive(self._call_deadline(), "loading the definitions")
        if self.spawned == 1 and isinstance(loaded, dict):
            self.notes = [str(n) for n in loaded.get("notes", [])][:50]

    def _call_deadline(self) -> float:
        remaining = self._remaining()
        if remaining <= 0:
            raise WorkerTimeout("the submission used up its total time budget")
        return min(self.call_timeout, remaining)

    def _receive(self, timeout: float, doing: str) -> Any:
        assert self._conn is not None
        try:
            ready = self._conn.poll(timeout)
        except (EOFError, OSError):
            ready = True
        if not ready:
            self.kill()
            raise WorkerTimeout(f"no answer after {timeout:.1f} s while {doing}")
        try:
            message = self._conn.recv_bytes(maxlength=256 * 1024 * 1024)
        except (EOFError, OSError):
            exitcode = self._reap()
            raise WorkerCrashed(f"the submission's process {describe_exit(exitcode)}") from None
        try:
            return decode(message)
        except WireError as exc:
            self.kill()
            raise WorkerCrashed(
                f"the submission's process sent a malformed reply ({exc})"
            ) from None

    def _reap(self) -> int | None:
        process = self._process
        self.kill()
        return None if process is None else process.exitcode

    def kill(self) -> None:
        """Kill the worker's whole process group (and, as root, everything of its uid)."""
        process, self._process = self._process, None
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.close()
            self._conn = None
        if process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.join(timeout=5)
        uid = self._uid()
        if uid is not None:
            sweep_uid(uid)
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    close = kill

    # -- the Implementation interface --------------------------------------------------------

    def run(
        self, adapter: str, *, forbidden: tuple[str, ...] = (), **kwargs: Any
    ) -> dict[str, Any]:
        if self._remaining() <= 0:
            raise WorkerTimeout("the submission used up its total time budget")
        target = str(kwargs.get("name", adapter))
        if target in self.timed_out:
            # One overrun per exercise is enough evidence; don't pay the timeout again.
            raise WorkerTimeout(f"not run: an earlier call of {target} ran out of time")
        if self._process is None:
            self._spawn()
        self._next_id += 1
        call_id = self._next_id
        request = {
            "op": "call",
            "id": call_id,
            "adapter": adapter,
            "forbidden": list(forbidden),
            "kwargs": kwargs,
        }
        try:
            self._conn.send_bytes(encode(request))
        except (OSError, ValueError):
            exitcode = self._reap()
            raise WorkerCrashed(f"the submission's process {describe_exit(exitcode)}") from None
        try:
            reply = self._receive(self._call_deadline(), f"running {target}")
        except WorkerTimeout:
            self.timed_out.add(target)
            raise
        if not isinstance(reply, dict) or reply.get("id") != call_id:
            self.kill()
            raise WorkerCrashed("the submission's process sent an unexpected reply")
        if "error" in reply:
            raise raised_in_submission(reply["error"])
        result = reply.get("ok")
        if not isinstance(result, dict):
            raise WorkerCrashed("the submission's process sent an unexpected reply")
        return result


def raised_in_submission(error: Any) -> Exception:
    """The local exception that stands for what the submission raised."""
    if not isinstance(error, dict):
        return WorkerCrashed("the submission's process sent an unexpected reply")
    type_name, message = str(error.get("type", "Exception")), str(error.get("message", ""))
    if type_name == "NotImplementedError":
        return NotImplementedError(message)
    if type_name == "MissingDefinition":
        return MissingDefinition(str(error.get("name") or message))
    if type_name == "MemoryError":
        return SubmissionError("MemoryError", "used more memory than the grader allows")
    return SubmissionError(type_name, message)


def sweep_uid(uid: int) -> None:
    """Kill every process owned by ``uid`` (a sandbox slot's uid): escaped forks included."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the short-lived helper
        try:
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
