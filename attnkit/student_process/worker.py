"""One worker: the process, forked by the zygote (:mod:`.zygote`), that runs one
submission's cells and answers the grader's calls to its exercises.

Nothing a worker says is trusted: the grader decides every verdict from the values the
student's code returned, for inputs the grader chose. Before any student code runs, the
worker confines itself: a seccomp filter refuses new processes, ptrace, new namespaces,
memfds, SysV IPC and sockets, and confines signals, resource limits and scheduling calls to
the worker itself, so nothing a worker changes outlives it; an address-space limit bounds
all its memory (one worker is one process).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import resource
import signal
import struct
import sys
import time
from typing import Any

from .withheld import lent, reached

HEADER = struct.Struct(">Q")
MAX_REQUEST_BYTES = 256 * 1024**2

# Syscalls no exercise needs and an attack would: new processes, other processes' memory,
# namespaces and mounts, kernel interfaces with a history of exploits, anonymous shared
# memory that no limit would count, and sockets (the network namespace is empty anyway).
DENIED_SYSCALLS = (
    "fork", "vfork", "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "bpf", "perf_event_open",
    "userfaultfd", "keyctl", "add_key", "request_key", "io_uring_setup", "memfd_create",
    "shmget", "msgget", "semget", "mq_open", "socket", "socketpair", "kexec_load",
    "init_module", "finit_module", "swapon", "reboot", "setpriority", "personality",
    "tkill", "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "process_madvise",
    "process_mrelease", "kcmp", "ioprio_set", "migrate_pages", "move_pages", "timer_create",
)  # fmt: skip
# Calls that take a process id, and the argument that holds it. Each is refused for any
# process but the worker itself: otherwise a worker could signal its classmates' workers
# (under --sandbox-user they share a uid), or lower the zygote's limits and priority, which
# every later worker would inherit.
SIGNAL_CALLS = {"kill": 0, "tgkill": 0, "rt_sigqueueinfo": 0, "rt_tgsigqueueinfo": 0}
OWN_PROCESS_CALLS = ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam",
                     "sched_setattr")  # fmt: skip
# Where each signal call takes its signal number: SIGKILL, even to itself, is refused, so
# that a worker that dies of SIGKILL was killed by its CPU limit, the reset, or something
# outside the sandbox (see reset()).
SIGNAL_ARGUMENT = {"kill": 1, "tgkill": 2, "rt_sigqueueinfo": 1, "rt_tgsigqueueinfo": 2}
CLONE_THREAD = 0x00010000
SIGNALING_FCNTL = (8, 10, 15)
"""F_SETOWN, F_SETSIG and F_SETOWN_EX: who gets a signal on I/O, and which."""
SCRATCH_MOUNTS = ("/tmp", "/dev/shm")
"""The only writable mounts of the bubblewrap sandbox: size-capped, emptied by every reset."""


# -- framing -----------------------------------------------------------------------------------


def write_frame(fd: int, payload: bytes) -> None:
    data = memoryview(HEADER.pack(len(payload)) + payload)
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _read_exact(fd: int, count: int) -> bytes:
    chunks, remaining = [], count
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> bytes:
    (length,) = HEADER.unpack(_read_exact(fd, HEADER.size))
    if length > MAX_REQUEST_BYTES:
        raise EOFError
    return _read_exact(fd, length)


# -- the worker's confinement -------------------------------------------------------------------


def set_not_dumpable() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_dumpable = 4
    libc.prctl(pr_set_dumpable, 0, 0, 0, 0)


def install_seccomp(full: bool = True) -> None:
    """Refuse the syscalls in DENIED_SYSCALLS, clone() of anything but a thread, signals to
    any other process (and SIGKILL to any), changes to another process's limits or
    scheduling, and lowering the worker's own CPU limit (its SIGKILL would look external)."""
    import pyseccomp as seccomp

    me = os.getpid()
    refuse = seccomp.ERRNO(errno.EPERM)
    # Without isolation (``--no-sandbox``, trusted code) only the rules that keep workers
    # from reaching each other and the zygote apply (full=False).
    rules: list[tuple[str, tuple[Any, ...]]] = [(n, ()) for n in DENIED_SYSCALLS if full]
    # The kernel reads these arguments as 32-bit ints: a rule compares the low 32 bits
    # (MASKED_EQ), or 9 + 2**32 would pass an equality test with SIGKILL and still be SIGKILL.
    # A NE rule needs no mask: it refuses every value but the exact one.
    for name, pid in SIGNAL_CALLS.items():
        rules.append((name, (seccomp.Arg(pid, seccomp.NE, me),)))
        rules.append((name, (_low32(seccomp, SIGNAL_ARGUMENT[name], signal.SIGKILL),)))
    # Own process is pid 0 here (glibc and Python pass 0 for "this process").
    rules += [(name, (seccomp.Arg(0, seccomp.NE, 0),)) for name in OWN_PROCESS_CALLS]
    # fcntl can make the kernel signal a process on I/O (F_SETOWN, F_SETOWN_EX), with any
    # signal (F_SETSIG): a signal no kill() rule sees, to itself or to another process.
    rules += [("fcntl", (_low32(seccomp, 1, command),)) for command in SIGNALING_FCNTL]
    cpu = resource.RLIMIT_CPU
    rules.append(("prlimit64", (_low32(seccomp, 1, cpu), seccomp.Arg(2, seccomp.NE, 0))))
    rules.append(("setrlimit", (_low32(seccomp, 0, cpu),)))
    policy = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name, arguments in rules:
        try:
            policy.add_rule(refuse, name, *arguments)
        except (OSError, ValueError, RuntimeError):
            continue  # not a syscall on this architecture
    if full:
        policy.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
        # glibc tries clone3 first and falls back to clone, whose flags the rule above sees.
        policy.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    policy.load()


def _low32(seccomp: Any, index: int, value: int) -> Any:
    """A rule's test that argument ``index``, read as the kernel reads an int, is ``value``."""
    return seccomp.Arg(index, seccomp.MASKED_EQ, 0xFFFFFFFF, value)


def confine(limits: dict[str, Any], scratch: str) -> dict[str, Any]:
    """Limits for one worker, applied after the fork and before any student code."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    with open("/proc/self/statm") as statm:
        mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    # The zygote's mappings (torch is large) count towards the address space, so the
    # limit is what the worker may add on top of them.
    address_space = mapped + int(limits["memory_bytes"])
    cpu = int(limits["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    file_bytes = int(limits["max_file_bytes"])
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    workdir = os.path.join(scratch, f"work-{os.getpid()}")
    os.makedirs(workdir, exist_ok=True)
    os.chdir(workdir)
    # The kernel's working folder is importable, as in Jupyter: a module one cell writes
    # (%%writefile helper.py) is imported by another.
    sys.path.insert(0, workdir)
    os.environ["TMPDIR"] = workdir
    seccomp_on = bool(limits.get("seccomp", True))
    install_seccomp(full=seccomp_on)
    return {
        "seccomp": seccomp_on,
        "memory_limit": "address space of the one worker process",
        "mapped_at_start": mapped,
    }


# -- the worker ---------------------------------------------------------------------------------


class Worker:
    """Runs one submission's cells and answers adapter calls, one request at a time."""

    def __init__(
        self, requests: int, replies: int, seal: bool = False, withheld: str | None = None
    ) -> None:
        from ..implementation import recorded_caller
        from ..ipython_shell import kernel_shell

        # Bound before any student code runs (see recorded_caller).
        self.call_recorded = recorded_caller()
        self.requests, self.replies = requests, replies
        self.shell = kernel_shell()
        self.run: Any = None
        self.seal = seal
        """Whether the first call the recorder alone must vouch for seals thread creation
        (see :func:`seal_threads`)."""
        self.sealed = False
        self.withheld = withheld
        """The family of kernels this worker goes without, in every thread (withheld.py)."""
        installed("scipy")  # asked now, before any student code can shadow it
        self.watch: tuple[str, ...] = ()
        """The exercises of the lesson (the grader names them with each cell)."""

    def serve(self) -> None:
        from ..ipython_shell import fresh_namespace
        from ..notebook_run import NotebookRun
        from .wire import decode, encode

        self.run = NotebookRun(fresh_namespace(self.shell))
        # This process is the notebook's kernel: its namespace is __main__ for good, so an
        # exercise that runs `from __main__ import softmax` when called finds it.
        sys.modules["__main__"] = self.shell.user_module
        while True:
            try:
                request = decode(read_frame(self.requests))
            except EOFError:
                os._exit(0)
            reply = self.handle(request)
            write_frame(self.replies, encode(reply))

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        nonce = request.get("nonce")
        if op == "cell":
            return {"nonce": nonce, "cell": self.run_cell(request)}
        if op == "call":
            return {"nonce": nonce, **self.call(request)}
        if op == "variants":
            return {"nonce": nonce, "differs": self.variants()}
        return {"nonce": nonce, "error": {"type": "ProtocolError", "message": f"unknown op {op}"}}

    def run_cell(self, request: dict[str, Any]) -> dict[str, Any]:
        from ..notebook_code import Cell
        from .shared_cells import SHARED, hand_over

        cell = Cell(int(request["index"]), str(request["source"]), request.get("grade_id"))
        self.watch = tuple(str(n) for n in request.get("watch", ()))
        if cell.grade_id is not None:
            self.run.remember(cell.grade_id)
        if request.get("skip"):
            return {
                "status": "ok",
                "error_type": "",
                "message": "",
                "line": None,
                "withheld": reached(),
            }
        shared = SHARED.get(cell.source) if request.get("shared") else None
        if shared is not None and hand_over(shared, self.run.namespace):
            return {
                "status": "ok",
                "error_type": "",
                "message": "",
                "line": None,
                "threads": python_threads(),
                "shared": True,
                "withheld": reached(),
            }
        skipped = {n for n in request.get("skip_lines", ()) if isinstance(n, int)}
        if skipped:
            from ..notebook_run import without_statements

            cell = Cell(
                cell.index, without_statements(self.shell, cell.source, skipped), cell.grade_id
            )
        outcome = self.run_whole_cell(cell, request.get("timeout"))
        return {
            "status": outcome.status,
            "error_type": outcome.error_type,
            "message": outcome.message,
            "line": outcome.line,
            "statement": outcome.top_line,
            "threads": python_threads(),
            # Withheld kernels reached so far: the grader lends this worker's answers to a
            # laxer worker's exercises only while its cells reached none (see withholding).
            "withheld": reached(),
        }

    def run_whole_cell(self, cell: Any, timeout: Any) -> Any:
        """Run the cell as Jupyter would, except where a top-level statement cannot run
        here: one that stopped at a withheld kernel (see withheld.py: a comparison with the
        library, which Jupyter would have run), or ran past the cell's time limit (which
        Jupyter would have waited for). The statements after it still run, each such
        statement costing at most one limit, so every later definition is made: also past
        a later statement that fails, which may fail only for want of what the left-out one
        would have made (a name it would have bound). The first stop is reported, with its
        line (which a later run of the cells leaves out)."""
        from ..notebook_code import Cell
        from ..notebook_run import rest_of_cell, run_cell
        from .wire import CELL_LIMITS
        from .withheld import WITHHELD_TYPE

        # The rest of a cell after a statement stopped at the limit has one more limit.
        deadline = time.monotonic() + CELL_LIMITS * timeout if timeout else None
        first = outcome = run_cell(self.shell, cell, timeout)
        if not (first.error_type == WITHHELD_TYPE or first.status == "timeout"):
            return first
        while outcome.top_line and outcome.status != "ok":
            rest = rest_of_cell(self.shell, cell.source, outcome.top_line)
            left = deadline - time.monotonic() if deadline else None
            if rest is None or (left is not None and left <= 0):
                break
            cell = Cell(cell.index, rest, cell.grade_id)
            outcome = run_cell(self.shell, cell, min(timeout, left) if left else timeout)
        return first

    def variants(self) -> list[str]:
        """Graded cells at which an exercise, or anything it reads, was bound to another
        object than at the end (see NotebookRun.variants)."""
        return self.run.variants(self.watch)

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        forbidden = request.get("forbidden", ())
        # No thread can reach a kernel this worker withholds: the recorder, which watches
        # the exercise's own thread, must vouch only for the forbidden calls it does not
        # withhold (a library's Python code, e.g. scipy's). Only a call that has such a
        # forbidden call is made where no thread can start, and threads the cells left
        # running make its verdict unverified; every other call may use threads as the
        # notebook does in Jupyter (a thread pool over the heads).
        covered = withheld_in(self.withheld, forbidden)
        if self.seal and not self.sealed and not covered:
            self.sealed = True
            # Where kernels are withheld, the guard may refuse the foreign calls sealing
            # needs: the call then runs unsealed.
            with contextlib.suppress(PermissionError):
                seal_threads()
        namespace: dict[str, Any] = self.run.namespace
        # The bindings at a graded cell are put back into the namespace itself for the
        # call, so that the helpers, constants and modules the exercise reads are those of
        # that moment too.
        try:
            alone = other_threads if not covered else None
            with lent(request.get("lent") is True), self.run.as_at(request.get("variant")):
                result = self.call_recorded(
                    namespace, request["adapter"], forbidden, request["kwargs"], alone
                )
            return {"ok": result}
        except BaseException as exc:  # everything is reported; the grader decides
            name = getattr(exc, "name", None) if type(exc).__name__ == "MissingDefinition" else None
            return {"error": {"type": type(exc).__name__, "message": str(exc)[:500], "name": name}}


_python_frames = sys._current_frames  # bound before any student code runs
THREAD_GRACE = 0.5
"""Seconds a call waits for threads that are finishing before it counts them as running."""


@functools.cache
def installed(module: str) -> bool:
    """Whether the library ``module`` is installed where workers import from (asked before
    any student code runs: the zygote warms it up)."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return True


def withheld_in(profile: str | None, forbidden: Any) -> bool:
    """Whether no thread of this worker can make a forbidden call: each is one of PyTorch's
    that the worker withholds, or of a library that is not installed (scipy)."""
    from .withheld import PROFILES

    pattern = PROFILES[profile] if profile is not None else None
    for name in map(str, forbidden):
        top, last = name.partition(".")[0], name.rsplit(".", 1)[-1]
        if top == "torch" and pattern is not None and pattern.search(last):
            continue
        if top != "torch" and not installed(top):
            continue
        return False
    return True


def python_threads(grace: float = THREAD_GRACE) -> int:
    """Threads beside this one that run Python (only those can call a library's Python
    code), once those told to stop have had ``grace`` seconds to finish."""
    deadline = time.monotonic() + grace
    while True:
        count = len(_python_frames()) - 1
        if count <= 0 or time.monotonic() > deadline:
            return max(count, 0)
        time.sleep(0.01)


def other_threads() -> str | None:
    """Why the recorder cannot vouch for a call to a forbidden function it alone watches
    (a library's Python code, which no worker withholds): threads beside the one running
    the exercise, which it does not see."""
    count = python_threads()
    if count <= 0:
        return None
    return (
        f"the notebook left {count} other thread(s) running, and the check that no library "
        "softmax or attention is called only sees the exercise's own thread: don't start "
        "threads in the notebook, or stop them before the exercises run"
    )


def seal_threads() -> None:
    """From now on this process cannot start a thread: an exercise whose forbidden calls
    the worker does not withhold runs where no other thread can appear, so the recorder,
    which watches the calling thread, sees all its work. Irrevocable (a seccomp filter).
    PyTorch's pool goes back to one thread first, so that none of its kernels needs a new
    one."""
    import pyseccomp as seccomp
    import torch

    torch.set_num_threads(1)
    policy = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    policy.add_rule(seccomp.ERRNO(errno.EAGAIN), "clone")
    policy.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    policy.load()
