"""What runs inside the grading sandbox: a pre-loaded *zygote* and the workers it forks.

The grader's sandbox (on the instructor's side) starts this module under bubblewrap, in fresh
user, PID, mount, network, IPC and UTS namespaces, where the filesystem holds only the
Python runtime, the public ``attnkit``/``attnkit_data`` packages, the lesson text and a
size-capped private ``/tmp``. Nothing a worker says is trusted: the grader decides every
verdict from the values the student's code returned, for inputs the grader chose.

The zygote is the namespace's PID 1. It imports numpy, torch and IPython once, then serves
a control socket from the grader:

* ``spawn``: receives two pipe ends by SCM_RIGHTS and forks one worker that talks over
  them; the worker closes the control socket before any student code runs;
* ``reset``: kills every other process in the namespace, reaps them, empties ``/tmp``
  and ``/dev/shm`` (the only writable mounts: the zygote refuses to start otherwise), so
  nothing of one submission is left for the next, and reports how each worker ended
  (exit status or signal, CPU time, whether the reset itself killed it).

Student code cannot reach the zygote: PID 1 ignores signals it has no handler for, the
zygote is not dumpable (no ptrace, no ``/proc/1/mem``), and every worker runs under a
seccomp filter that refuses new processes, ptrace, new namespaces, memfds, SysV IPC and
sockets, and that confines signals, resource limits and scheduling calls to the worker
itself: nothing a worker changes outlives it, and every worker starts from the zygote's
state. One worker is one process, so its address-space limit bounds all its memory.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import errno
import json
import os
import resource
import shutil
import signal
import socket
import stat
import struct
import sys
import time
from typing import Any

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
    "process_mrelease", "kcmp", "ioprio_set", "migrate_pages", "move_pages",
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
    for name, pid in SIGNAL_CALLS.items():
        rules.append((name, (seccomp.Arg(pid, seccomp.NE, me),)))
        rules.append((name, (seccomp.Arg(SIGNAL_ARGUMENT[name], seccomp.EQ, signal.SIGKILL),)))
    # Own process is pid 0 here (glibc and Python pass 0 for "this process").
    rules += [(name, (seccomp.Arg(0, seccomp.NE, 0),)) for name in OWN_PROCESS_CALLS]
    cpu = resource.RLIMIT_CPU
    rules.append(("prlimit64", (seccomp.Arg(1, seccomp.EQ, cpu), seccomp.Arg(2, seccomp.NE, 0))))
    rules.append(("setrlimit", (seccomp.Arg(0, seccomp.EQ, cpu),)))
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
    return {"seccomp": seccomp_on, "memory_limit": "address space of the one worker process"}


# -- the worker ---------------------------------------------------------------------------------


class Worker:
    """Runs one submission's cells and answers adapter calls, one request at a time."""

    def __init__(self, requests: int, replies: int) -> None:
        from .notebook_code import kernel_shell

        self.requests, self.replies = requests, replies
        self.shell = kernel_shell()
        self.run: Any = None

    def serve(self) -> None:
        from .notebook_code import NotebookRun, fresh_namespace
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
        from .notebook_code import Cell, run_cell

        cell = Cell(int(request["index"]), str(request["source"]), request.get("grade_id"))
        watch = tuple(request.get("watch", ()))
        if cell.grade_id is not None:
            self.run.live_at_cell[cell.grade_id] = {
                n: self.run.namespace[n] for n in watch if n in self.run.namespace
            }
        if request.get("skip"):
            return {"status": "ok", "error_type": "", "message": "", "line": None}
        outcome = run_cell(self.shell, cell, request.get("timeout"))
        return {
            "status": outcome.status,
            "error_type": outcome.error_type,
            "message": outcome.message,
            "line": outcome.line,
        }

    def variants(self) -> list[str]:
        """Graded cells at which some exercise was bound to another object than at the end."""
        final = self.run.namespace
        return sorted(
            grade_id
            for grade_id, live in self.run.live_at_cell.items()
            if any(final.get(name) is not value for name, value in live.items())
        )

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        from .implementation import call_recorded

        namespace: dict[str, Any] = self.run.namespace
        # The definitions live at a graded cell are put back into the namespace itself for
        # the call, so that the helpers an exercise calls are those of that moment too.
        live = self.run.live_at_cell.get(request.get("variant"), {})
        saved = {name: namespace.get(name, _MISSING) for name in live}
        namespace.update(live)
        try:
            forbidden = request.get("forbidden", ())
            result = call_recorded(
                namespace, request["adapter"], forbidden, request["kwargs"], other_threads
            )
            return {"ok": result}
        except BaseException as exc:  # everything is reported; the grader decides
            name = getattr(exc, "name", None) if type(exc).__name__ == "MissingDefinition" else None
            return {"error": {"type": type(exc).__name__, "message": str(exc)[:500], "name": name}}
        finally:
            for name, value in saved.items():
                if value is _MISSING:
                    namespace.pop(name, None)
                else:
                    namespace[name] = value


_MISSING = object()


THREAD_GRACE = 0.5
"""Seconds a call waits for threads that are finishing before it counts them as running."""


def other_threads() -> str | None:
    """Why the recorder cannot vouch for a call: threads beside the one running the
    exercise (started by the notebook's cells), whose PyTorch calls it does not see."""
    deadline = time.monotonic() + THREAD_GRACE
    while True:
        try:
            count = len(os.listdir("/proc/self/task")) - 1
        except OSError:
            return "the worker could not count its threads"
        if count <= 0:
            return None
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)  # threads that were told to stop are given a moment to finish
    return (
        f"the notebook left {count} other thread(s) running, and the check that no library "
        "softmax or attention is called only sees the exercise's own thread: don't start "
        "threads in the notebook, or stop them before the exercises run"
    )


# -- the zygote ---------------------------------------------------------------------------------


def preload() -> None:
    """Import what every submission needs once, before any fork."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot
    import numpy  # noqa: F401
    import pyseccomp  # noqa: F401
    import torch

    torch.set_num_threads(1)
    from . import adapters, forbidden, notebook, notebook_code, wire  # noqa: F401

    notebook_code.kernel_shell()
    # The recorder's first use imports PyTorch's mode machinery (seconds): pay it once here,
    # with a softmax and an attention so every lazily loaded kernel path is warm.
    x = torch.ones(1, 2, 3, requires_grad=True)
    with forbidden.Recorder(forbidden.FAMILIES):
        torch.softmax(x, -1).sum().backward()
        torch.nn.functional.scaled_dot_product_attention(x, x, x)
    try:
        from attnkit_data import gpt2_tokenizer

        gpt2_tokenizer()
    except Exception:  # the lessons' own cells report a missing tokenizer
        pass


def receive_spawn(control: socket.socket) -> tuple[dict[str, Any], list[int]]:
    fds = array.array("i")
    message, ancillary, _, _ = control.recvmsg(65536, socket.CMSG_SPACE(8 * fds.itemsize))
    if not message:
        raise EOFError
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    return json.loads(message), list(fds)


def writable_mounts(mountinfo: str = "/proc/self/mountinfo") -> list[tuple[str, str]]:
    """(mount point, super options) of every writable mount that can hold files: device
    nodes bound from the host (/dev/null, ...) store nothing and are left out."""
    found = []
    with open(mountinfo) as lines:
        for line in lines:
            fields = line.split()
            separator = fields.index("-")
            point = fields[4].encode().decode("unicode_escape")  # \040 and friends
            options = fields[5].split(",")
            if "ro" in options:
                continue
            with contextlib.suppress(OSError):
                if stat.S_ISCHR(os.stat(point).st_mode):
                    continue
            found.append((point, fields[separator + 3]))
    return found


def unreset_mounts() -> list[str]:
    """Writable mounts that a reset would not empty, or that have no size cap: a sandbox
    with one would carry files from one submission to the next, uncounted."""
    return [
        point
        for point, options in writable_mounts()
        if point not in SCRATCH_MOUNTS or "size=" not in options
    ]


def _empty(folder: str) -> None:
    """Remove everything in ``folder``; a submission's read-only folders are opened up first."""
    for root, folders, _ in os.walk(folder):
        for name in folders:
            path = os.path.join(root, name)
            if not os.path.islink(path):  # every worker is dead: nothing swaps it now
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o700)
    for entry in os.listdir(folder):
        path = os.path.join(folder, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def _ending(pid: int, status: int, usage: Any, by_sandbox: bool) -> dict[str, Any]:
    return {
        "pid": pid,
        "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3),
        "by_sandbox": by_sandbox,
    }


def _reap(endings: dict[int, dict[str, Any]], by_sandbox: bool) -> bool:
    """Reap every child that has ended; False once none is left."""
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        endings.setdefault(pid, _ending(pid, status, usage, by_sandbox))


def reset(scratch: str, children: dict[int, int], grace: float = 0.0) -> list[dict[str, Any]]:
    """Kill every worker, reap them, and empty the scratch folder (and /dev/shm). Returns
    how each worker forked since the last reset ended, with its CPU limit (``cpu_limit``).

    A worker that had already ended (or ends within ``grace`` seconds: the grader saw its
    pipes close) is reported as it ended; the rest are killed here, ``by_sandbox``.
    As PID 1 of the sandbox's namespace, ``kill(-1)`` reaches every other process in it,
    whatever a worker did to hide one. Without a sandbox (``--no-sandbox``, trusted code)
    only the workers this zygote forked are killed.
    """
    sandboxed = os.getpid() == 1
    endings: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + min(max(grace, 0.0), 2.0)
    while _reap(endings, False) and not set(children) <= set(endings):
        if time.monotonic() >= deadline:
            break
        time.sleep(0.005)
    targets = [-1] if sandboxed else sorted(set(children) - set(endings))
    for target in targets:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(target, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _reap(endings, True) and time.monotonic() < deadline:
        time.sleep(0.002)
    report = [
        {**endings[pid], "cpu_limit": limit} for pid, limit in children.items() if pid in endings
    ]
    children.clear()
    for folder in SCRATCH_MOUNTS if sandboxed else (scratch,):
        try:
            _empty(folder)
        except Exception:
            # Something a submission left cannot be removed (nested too deep, say):
            # this sandbox is no longer clean, so it ends, and the grader starts anew.
            os._exit(75)
    return report


def zygote(scratch: str = "/tmp", control_fd: int = 3) -> None:
    children: dict[int, int] = {}  # worker pid -> its CPU limit
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("MPLBACKEND", "Agg")
    preload()
    # Move everything loaded so far out of the collector's reach: otherwise each worker's
    # first collections write to every object's header, copying the zygote's pages.
    import gc

    gc.collect()
    gc.freeze()
    set_not_dumpable()
    # What the imports above left in /tmp (IPython's and matplotlib's folders) goes, so the
    # first worker starts from the same state as every worker after a reset.
    reset(scratch, children)
    control = socket.socket(fileno=control_fd)
    unreset = unreset_mounts() if os.getpid() == 1 else []
    if unreset:
        control.sendall(json.dumps({"ready": False, "unreset": unreset}).encode())
        os._exit(78)
    control.sendall(json.dumps({"ready": True, "pid": os.getpid()}).encode())
    while True:
        try:
            request, fds = receive_spawn(control)
        except (EOFError, OSError, ValueError):
            os._exit(0)
        if request.get("op") == "reset":
            for fd in fds:
                os.close(fd)
            grace = request.get("grace", 0.0)
            ended = reset(scratch, children, grace if isinstance(grace, float) else 0.0)
            control.sendall(json.dumps({"clean": True, "ended": ended}).encode())
            continue
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            control.sendall(b'{"error": "spawn needs two descriptors"}')
            continue
        pid = os.fork()
        if pid == 0:
            control.close()
            try:
                requests, replies = fds
                info = confine(request.get("limits", {}), scratch)
                worker = Worker(requests, replies)
                from .wire import encode

                write_frame(replies, encode({"ready": info}))
                worker.serve()
            finally:
                os._exit(70)
        children[pid] = int(request.get("limits", {}).get("cpu_seconds", 0))
        for fd in fds:
            os.close(fd)
        control.sendall(json.dumps({"spawned": pid}).encode())


if __name__ == "__main__":
    sys.exit(zygote(*sys.argv[1:2]))
