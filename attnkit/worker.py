"""What runs inside the grading sandbox: a pre-loaded *zygote* and the workers it forks.

The grader (``attnkit_autograder.sandbox``) starts this module under bubblewrap, in fresh
user, PID, mount, network, IPC and UTS namespaces, where the filesystem holds only the
Python runtime, the public ``attnkit``/``attnkit_data`` packages, the lesson text and a
size-capped private ``/tmp``. Nothing a worker says is trusted: the grader decides every
verdict from the values the student's code returned, for inputs the grader chose.

The zygote is the namespace's PID 1. It imports numpy, torch and IPython once, then serves
a control socket from the grader:

* ``spawn``: receives two pipe ends by SCM_RIGHTS and forks one worker that talks over
  them; the worker closes the control socket before any student code runs;
* ``reset``: kills every other process in the namespace, reaps them and empties ``/tmp``
  and ``/dev/shm``, so nothing of one submission is left for the next.

Student code cannot reach the zygote: PID 1 ignores signals it has no handler for, the
zygote is not dumpable (no ptrace, no ``/proc/1/mem``), and every worker runs under a
seccomp filter that refuses new processes, ptrace, new namespaces, memfds, SysV IPC and
sockets. One worker is one process, so its address-space limit bounds all its memory.
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
)  # fmt: skip
CLONE_THREAD = 0x00010000


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


def install_seccomp() -> None:
    """Refuse the syscalls in DENIED_SYSCALLS, and clone() of anything but a thread."""
    import pyseccomp as seccomp

    policy = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in DENIED_SYSCALLS:
        try:
            policy.add_rule(seccomp.ERRNO(errno.EPERM), name)
        except (OSError, ValueError, RuntimeError):
            continue  # not a syscall on this architecture
    policy.add_rule(
        seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0)
    )
    # glibc tries clone3 first and falls back to clone, whose flags the rule above can see.
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
    if seccomp_on:
        install_seccomp()
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
        from .adapters import ADAPTERS
        from .forbidden import Recorder

        namespace: dict[str, Any] = self.run.namespace
        # The definitions live at a graded cell are put back into the namespace itself for
        # the call, so that the helpers an exercise calls are those of that moment too.
        live = self.run.live_at_cell.get(request.get("variant"), {})
        saved = {name: namespace.get(name, _MISSING) for name in live}
        namespace.update(live)
        try:
            adapter = ADAPTERS[request["adapter"]]
            with Recorder(request.get("forbidden", ())) as recorder:
                result = adapter(namespace, **request["kwargs"])
            result["forbidden_used"] = list(recorder.used)
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


def reset(scratch: str, children: set[int]) -> None:
    """Kill every worker, reap them, and empty the scratch folder (and /dev/shm).

    As PID 1 of the sandbox's namespace, ``kill(-1)`` reaches every other process in it,
    whatever a worker did to hide one. Without a sandbox (``--no-sandbox``, trusted code)
    only the workers this zygote forked are killed.
    """
    sandboxed = os.getpid() == 1
    targets = [-1] if sandboxed else sorted(children)
    for target in targets:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(target, signal.SIGKILL)
    children.clear()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break  # no children left
        if pid == 0:
            time.sleep(0.002)
    for folder in (scratch, "/dev/shm") if sandboxed else (scratch,):
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            path = os.path.join(folder, entry)
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                else:
                    os.unlink(path)
            except Exception:
                # Something a submission left cannot be removed (nested too deep, say):
                # this sandbox is no longer clean, so it ends, and the grader starts anew.
                os._exit(75)


def zygote(scratch: str = "/tmp", control_fd: int = 3) -> None:
    children: set[int] = set()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("MPLBACKEND", "Agg")
    preload()
    # Move everything loaded so far out of the collector's reach: otherwise each worker's
    # first collections write to every object's header, copying the zygote's pages.
    import gc

    gc.collect()
    gc.freeze()
    set_not_dumpable()
    control = socket.socket(fileno=control_fd)
    control.sendall(json.dumps({"ready": True, "pid": os.getpid()}).encode())
    while True:
        try:
            request, fds = receive_spawn(control)
        except (EOFError, OSError, ValueError):
            os._exit(0)
        if request.get("op") == "reset":
            for fd in fds:
                os.close(fd)
            reset(scratch, children)
            control.sendall(b'{"clean": true}')
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
        children.add(pid)
        for fd in fds:
            os.close(fd)
        control.sendall(json.dumps({"spawned": pid}).encode())


if __name__ == "__main__":
    sys.exit(zygote(*sys.argv[1:2]))
