"""Principle: nothing one submission does in the sandbox reaches another submission.

Every writable place is emptied between submissions (a file planted under /dev, or in a
folder that covers the references, is gone for the next student); signals, resource
limits and scheduling reach no process but the worker itself, so a submission can
neither kill a classmate's worker nor slow or starve the zygote that every later worker
is forked from. Each case is an escape attempt: the sandbox holds when the attempt
returns "" and the submission keeps full marks.
"""

from __future__ import annotations

import textwrap

from .classic import GUARDED_V2, KEEPS_ALL, V2_CELL, Case, Targets, _preamble

ATTEMPTS = {
    "plants_files_in_every_writable_mount": """
        import os
        planted = []
        for folder in TMPFS_FOLDERS():
            try:
                with open(os.path.join(folder, "attnkit-planted"), "w") as f:
                    f.write("for the next student")
                planted.append(folder)
            except OSError:
                pass
        return " ".join(planted)
    """,
    "then_finds_files_a_classmate_planted": """
        import os
        found = [f for f in TMPFS_FOLDERS() if os.path.exists(os.path.join(f, "attnkit-planted"))]
        return " ".join(found)
    """,
    "signals_other_processes": """
        import ctypes, os, signal
        libc = ctypes.CDLL(None, use_errno=True)
        reached = []
        others = {-1, 0, 1, os.getppid()}
        others |= {int(p) for p in os.listdir("/proc") if p.isdigit()} - {os.getpid()}
        for pid in sorted(others):
            try:
                os.kill(pid, 0)
                reached.append(f"kill {pid}")
            except OSError:
                pass
            if libc.syscall(234, pid, pid, 0) == 0:  # tgkill
                reached.append(f"tgkill {pid}")
            if libc.syscall(200, pid, 0) == 0:  # tkill
                reached.append(f"tkill {pid}")
            try:
                os.close(os.pidfd_open(pid))
                reached.append(f"pidfd {pid}")
            except (OSError, ValueError):
                pass
        try:
            os.kill(os.getpid(), signal.SIGKILL)  # would pass for a kill from outside
            reached.append("SIGKILL to itself")
        except OSError:
            pass
        return " ".join(reached)
    """,
    "lowers_the_zygotes_limits_and_priority": """
        import ctypes, os, resource
        libc = ctypes.CDLL(None, use_errno=True)
        changed = []
        for pid in (1, os.getppid()):
            for name in ("RLIMIT_NOFILE", "RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE"):
                try:
                    resource.prlimit(pid, getattr(resource, name), (16, 16))
                    changed.append(f"{name} of {pid}")
                except (OSError, ValueError):
                    pass
            for attempt in (
                lambda: os.sched_setaffinity(pid, {0}),
                lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)),
                lambda: os.setpriority(os.PRIO_PROCESS, pid, 19),
            ):
                try:
                    attempt()
                    changed.append(f"scheduling of {pid}")
                except OSError:
                    pass
            if libc.syscall(251, 1, pid, 7 | (3 << 13)) == 0:  # ioprio_set: idle class
                changed.append(f"io priority of {pid}")
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (1, 1))  # its own SIGKILL, then
            changed.append("its own CPU limit")
        except (OSError, ValueError):
            pass
        return " ".join(changed)
    """,
}


# Every folder of every in-memory mount but the two that each reset empties: bubblewrap's
# root, /dev, the folders that cover the references. Mounts below one are not entered.
TMPFS_FOLDERS = """
def TMPFS_FOLDERS():
    import os
    folders = []
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        point = fields[4]
        if fields[fields.index("-") + 1] != "tmpfs" or point in ("/tmp", "/dev/shm"):
            continue
        for folder, names, _ in os.walk(point):
            folders.append(folder)
            names[:] = [n for n in names if not os.path.ismount(os.path.join(folder, n))]
    return folders
"""


def _attempt(name: str, targets: Targets) -> Case:
    body = textwrap.indent(textwrap.dedent(ATTEMPTS[name]), "    ")
    helper = _preamble(targets) + TMPFS_FOLDERS + "def attempt():\n" + body
    bodies: dict[str, str | None] = {"SelfAttention_v2": GUARDED_V2}
    return Case(name, "escape", KEEPS_ALL, V2_CELL, "passed", "", bodies, helper, first=True)


def cases(targets: Targets) -> list[Case]:
    return [_attempt(name, targets) for name in ATTEMPTS]
