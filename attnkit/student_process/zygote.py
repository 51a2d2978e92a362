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
import gc
import json
import os
import select
import shutil
import signal
import socket
import stat
import sys
import time
from typing import Any

from .shared_cells import share
from .startup import frozen_when_loaded, into_huge_pages, preload
from .worker import SCRATCH_MOUNTS, Worker, confine, set_not_dumpable, write_frame


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
    """Remove everything in ``folder``; a submission's read-only folders are opened up first.
    A tree too deep for Python's recursion (or its path lengths) is left to coreutils'
    ``chmod -R`` and ``rm -rf``, which walk any depth."""
    try:
        _empty_here(folder)
    except (RecursionError, OSError):
        import subprocess

        entries = [os.path.join(folder, entry) for entry in os.listdir(folder)]
        if entries:
            subprocess.run(["chmod", "-R", "u+rwx", *entries], check=False, capture_output=True)
            subprocess.run(["rm", "-rf", "--", *entries], check=False, capture_output=True)
        if os.listdir(folder):
            raise OSError(f"{folder} could not be emptied") from None


def _empty_here(folder: str) -> None:
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
        # The kernel's account of the most memory the worker held resident at once (KiB),
        # read here as the zygote reaps it: no worker can write it (the sandbox's /proc,
        # where clear_refs would reset it, is read-only).
        "max_rss_kib": int(usage.ru_maxrss),
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
    whatever a worker did to hide one. Elsewhere (``--sandbox-user``, ``--no-sandbox``) the
    workers this zygote forked are killed (a worker cannot fork: seccomp); under
    ``--sandbox-user`` the grader then ends whatever else of that user it started and
    empties every place the user can write.
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
    for pid, why in STOPPED.items():  # the zygote stopped these: not a kill from outside
        if pid in endings:
            endings[pid].update(by_sandbox=True, stopped=why)
    STOPPED.clear()
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


def answer_share(
    request: dict[str, Any], scratch: str, children: dict[int, int], own_user: bool
) -> dict[str, Any]:
    """Compute the released cells the grader sends, once each (see shared_cells)."""
    from ..ipython_shell import kernel_shell

    cells = request.get("cells") if isinstance(request.get("cells"), list) else []
    mounts = SCRATCH_MOUNTS if os.getpid() == 1 else (scratch,)
    shareable = share(cells, mounts)
    # Every released cell's static IPython transformation, once: exactly what the shell
    # keeps per text (see attnkit.ipython_shell), not the namespace-dependent step after it.
    transform = kernel_shell().input_transformer_manager.transform_cell
    for cell in cells:
        if isinstance(cell, dict) and isinstance(cell.get("source"), str):
            with contextlib.suppress(Exception):
                transform(cell["source"])
    gc.freeze()  # the shared results join what workers never collect
    _HugePages.done = False  # what the cells made joins the huge pages at the next reset
    return {"shareable": len(shareable)}


def answer_measure(
    request: dict[str, Any], scratch: str, children: dict[int, int], own_user: bool
) -> dict[str, Any]:
    """The memory of each live worker, read from outside it (``/proc/<pid>/status``): the
    most address space it ever mapped (VmPeak, which no interface lets a process lower) and
    the most it held resident (VmHWM, which only a write to its clear_refs could lower: the
    sandbox's /proc is read-only). In bytes, by pid; a worker that has ended is left out."""
    found: dict[str, dict[str, int]] = {}
    for pid in children:
        # A worker that has ended (a zombie, until the reset reaps it) has no memory left.
        with contextlib.suppress(OSError, ValueError, IndexError, KeyError):
            with open(f"/proc/{pid}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
            found[str(pid)] = {
                key: int(fields[key].split()[0]) * 1024 for key in ("VmPeak", "VmHWM")
            }
    return {"measured": found}


def answer_reset(
    request: dict[str, Any], scratch: str, children: dict[int, int], own_user: bool
) -> dict[str, Any]:
    grace = request.get("grace", 0.0)
    ended = reset(scratch, children, grace if isinstance(grace, float) else 0.0)
    if _HugePages.spawned >= HUGE_PAGES_AFTER and not _HugePages.done:
        # No worker is alive now: nothing the collapse moves is still shared with one.
        into_huge_pages()
        _HugePages.done = True
    return {"clean": True, "ended": ended}


ANSWERS = {"share": answer_share, "reset": answer_reset, "measure": answer_measure}
"""The zygote's answers to the grader's requests other than ``spawn``."""

HUGE_PAGES_AFTER = 16
"""Workers a sandbox forks before its memory moves onto huge pages (into_huge_pages): the
move costs about 0.45 s once and saves about 5 to 10 ms a worker, so a sandbox that grades
a handful of submissions (a small class, a test) does not pay for it."""


class _HugePages:
    spawned = 0
    done = False


FILE_CAP = 20_000
"""Files and folders one submission may make in the sandbox's /tmp and /dev/shm together.
A tmpfs caps bytes, not files: each empty file still takes the machine's memory, which no
limit of the worker counts."""
WATCH_EVERY = 0.1
"""Seconds between the zygote's counts of those files while a worker runs."""
STOPPED: dict[int, str] = {}
"""Workers the zygote stopped itself, and why ("files"): told to the grader at the reset."""


def files_in_scratch() -> int:
    """Files and folders in the sandbox's writable mounts (counted by their tmpfs)."""
    total = 0
    for mount in SCRATCH_MOUNTS:
        with contextlib.suppress(OSError):
            found = os.statvfs(mount)
            total += found.f_files - found.f_ffree
    return total


def next_request(
    control: socket.socket, children: dict[int, int], baseline: int
) -> tuple[dict[str, Any], list[int]]:
    """The grader's next request. Meanwhile, in the bubblewrap sandbox (private mounts, so
    every file there is the worker's), a worker that makes more than FILE_CAP files is
    stopped: the count runs every WATCH_EVERY seconds while a worker lives."""
    watching = os.getpid() == 1
    while watching and children and not select.select([control], [], [], WATCH_EVERY)[0]:
        if files_in_scratch() - baseline > FILE_CAP:
            for pid in children:
                STOPPED.setdefault(pid, "files")
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)
    return receive_spawn(control)


def start_worker(limits: dict[str, Any], fds: list[int], scratch: str) -> None:
    """In the forked child: withhold kernels, confine, then serve (see Worker)."""
    requests, replies = fds
    profile = limits.get("withhold")
    if profile is not None:  # before any student code: see withheld.py
        from .withheld import guard, withhold

        withhold(str(profile))
    info = confine(limits, scratch)
    if profile is not None:
        guard(str(profile))  # last: confine's own calls (seccomp) go through ctypes
    worker = Worker(requests, replies, seal=bool(info.get("seccomp")), withheld=profile)
    from .wire import encode

    # Sent before any of the notebook's code runs, so the grader may believe it: which
    # process it is (the zygote measures its memory from outside, against where it started).
    info |= {"pid": os.getpid()}
    write_frame(replies, encode({"ready": info}))
    worker.serve()


def zygote(
    scratch: str = "/tmp", control_fd: int = 3, own_user: bool = False, plots: bool = True
) -> None:
    children: dict[int, int] = {}  # worker pid -> its CPU limit
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("MPLBACKEND", "Agg")
    # Everything loaded here is out of the collector's reach: otherwise each worker's first
    # collections would write to every object's header, copying the zygote's pages.
    with frozen_when_loaded():
        preload(plots)
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
    baseline = files_in_scratch()
    while True:
        try:
            request, fds = next_request(control, children, baseline)
        except (EOFError, OSError, ValueError):
            os._exit(0)
        if request.get("op") in ANSWERS:
            for fd in fds:
                os.close(fd)
            answer = ANSWERS[request["op"]](request, scratch, children, own_user)
            control.sendall(json.dumps(answer).encode())
            if request["op"] != "measure":  # a worker may be running: its files still count
                baseline = files_in_scratch()
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
                start_worker(request.get("limits", {}), fds, scratch)
            finally:
                os._exit(70)
        children[pid] = int(request.get("limits", {}).get("cpu_seconds", 0))
        _HugePages.spawned += 1
        for fd in fds:
            os.close(fd)
        control.sendall(json.dumps({"spawned": pid}).encode())


if __name__ == "__main__":
    sys.exit(zygote(*sys.argv[1:2]))
