"""The sandboxed side of grading: load one submission's definitions, answer adapter calls.

A worker is forked from a *zygote* (multiprocessing's forkserver) that has imported
numpy, torch and this module, and nothing else of the kit: no references and no hidden
suites, so there is nothing in memory a submission could borrow. Right after the fork,
before any student code runs, :func:`enter_sandbox`:

1. moves the worker into its own process group (so the grader can kill all of it);
2. sends stdin/stdout/stderr to /dev/null (printing megabytes costs nothing);
3. sets resource limits: address space, CPU seconds, processes, file size, no core dumps;
4. drops root privileges to a per-slot uid when the grader runs as root (keeping only
   the right to read files that Landlock allows, see :mod:`.privileges`);
5. applies Landlock: read-only access to the interpreter and its libraries (minus the
   kit's references and hidden suites), writes only in a private temp folder, no TCP,
   no signals or abstract sockets outside the sandbox.

Requests and replies travel as :mod:`.wire` messages over a pipe; the grader decides
every verdict, so whatever a submission does in here it can only affect its own answers.
"""

from __future__ import annotations

import os
import resource
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Any

from attnkit.adapters import ADAPTERS
from attnkit.forbidden import tripwires
from attnkit.notebook_code import Definitions, Statement, execute_definitions
from attnkit.wire import decode, encode

from . import landlock, privileges

# Bound at import (in the zygote), before any submission can patch the modules.
_ADAPTERS = dict(ADAPTERS)
_tripwires = tripwires
_encode, _decode = encode, decode
_execute_definitions = execute_definitions

HIDDEN_PACKAGES = ("attnkit_solutions", "attnkit_autograder")


def _modules_to_guard() -> list[Any]:
    import builtins
    import json

    import numpy
    import numpy.testing
    import torch
    import torch.nn.functional
    import torch.testing

    return [
        builtins,
        json,
        numpy,
        numpy.testing,
        torch,
        torch.testing,
        torch.nn.functional,
        torch.Tensor,
    ]


class Snapshot:
    """The attributes of the modules a submission might patch, as the zygote had them.

    Restored before every call, so ``numpy.allclose = lambda *a: True`` or a patched
    ``builtins.isinstance`` can neither fool the adapters nor break their answers.
    """

    def __init__(self) -> None:
        self.saved = [(m, dict(vars(m))) for m in _modules_to_guard()]

    def restore(self) -> None:
        for owner, attributes in self.saved:
            current = vars(owner)
            # Plain try/except rather than contextlib.suppress: nothing here may depend on
            # a module the submission could have patched.
            for name in [n for n in current if n not in attributes]:
                try:  # noqa: SIM105
                    delattr(owner, name)
                except (AttributeError, TypeError):
                    pass
            for name, value in attributes.items():
                if current.get(name, _MISSING) is not value:
                    try:  # noqa: SIM105
                        setattr(owner, name, value)
                    except (AttributeError, TypeError):
                        pass


_MISSING = object()


@dataclass(frozen=True)
class SandboxLimits:
    memory_bytes: int = 2 * 1024**3
    cpu_seconds: int = 120
    max_processes: int = 32
    max_file_bytes: int = 16 * 1024**2
    uid: int | None = None
    tmpdir: str = ""
    readable: tuple[str, ...] = field(default_factory=tuple)
    listable: tuple[str, ...] = field(default_factory=tuple)


def site_packages() -> list[str]:
    return sorted(
        site
        for site in {sysconfig.get_paths()[k] for k in ("purelib", "platlib")} | set(sys.path)
        if site and os.path.isdir(site) and site.rstrip("/").endswith("-packages")
    )


def readable_paths() -> tuple[str, ...]:
    """What a worker may read: the interpreter, its libraries and the public kit package.

    Site-packages folders are allowed entry by entry so that the kit's references and
    hidden suites can be left out even when they are installed there.
    """
    import attnkit
    import attnkit_data

    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")}
    paths |= {
        "/usr/lib",
        "/usr/lib64",
        "/lib",
        "/lib64",
        "/usr/share/zoneinfo",
        "/proc",
        "/sys",
        os.path.dirname(attnkit.__file__),
        os.path.dirname(attnkit_data.__file__),  # public: lessons import the dataloader
    }
    # Only the few files of /etc a Python process reads: never all of it (/etc/shadow).
    etc = ("ld.so.cache", "localtime", "timezone", "passwd", "group", "nsswitch.conf")
    paths |= {f"/etc/{name}" for name in etc}
    for site in site_packages():
        for entry in os.listdir(site):
            if not entry.startswith(HIDDEN_PACKAGES) and not entry.startswith("__editable__"):
                paths.add(os.path.join(site, entry))
    return tuple(sorted(paths))


def enter_sandbox(limits: SandboxLimits) -> dict[str, Any]:
    os.setpgid(0, 0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)

    import torch

    torch.set_num_threads(1)
    # The zygote's mappings (torch is large) count towards the address-space limit, so
    # the cap is what the worker may add on top of them.
    with open("/proc/self/statm") as statm:
        mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    address_space = mapped + limits.memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.max_file_bytes, limits.max_file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limits.uid is not None:
        if limits.tmpdir:
            os.chown(limits.tmpdir, limits.uid, limits.uid)
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.max_processes, limits.max_processes))
        privileges.drop_to(limits.uid)
    else:
        own = sum(1 for p in os.listdir("/proc") if p.isdigit() and _owned(p))
        cap = own + limits.max_processes
        resource.setrlimit(resource.RLIMIT_NPROC, (cap, cap))

    if limits.tmpdir:
        os.environ["TMPDIR"] = limits.tmpdir
        os.chdir(limits.tmpdir)
    abi = 0
    if landlock.abi_version() >= 1:
        writable = [limits.tmpdir] if limits.tmpdir else []
        abi = landlock.restrict_self(limits.readable, [*writable, os.devnull], limits.listable)
    return {"landlock_abi": abi, "uid": os.getuid()}


def _owned(pid: str) -> bool:
    try:
        return os.stat(f"/proc/{pid}").st_uid == os.getuid()
    except OSError:
        return False


def serve(conn: Any, limits: SandboxLimits) -> None:
    """The worker's main loop (the target the zygote forks)."""
    snapshot = Snapshot()
    info = enter_sandbox(limits)
    conn.send_bytes(_encode({"ready": info}))
    namespace: dict[str, Any] = {"__name__": "submission"}
    while True:
        try:
            request = _decode(conn.recv_bytes())
        except EOFError:
            return
        # Undo whatever the submission patched when it loaded or in its previous call.
        snapshot.restore()
        conn.send_bytes(_encode(handle(request, namespace)))


def handle(request: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
    if request.get("op") == "load":
        statements = [Statement(**s) for s in request["statements"]]
        notes = _execute_definitions(Definitions(statements=statements), namespace)
        return {"notes": notes, "defined": sorted(k for k in namespace if not k.startswith("__"))}
    call_id = request.get("id")
    try:
        adapter = _ADAPTERS[request["adapter"]]
        with _tripwires(request.get("forbidden", ())) as used:
            result = adapter(namespace, **request["kwargs"])
        result["forbidden_used"] = sorted(set(used))
        return {"id": call_id, "ok": result}
    except BaseException as exc:  # everything is reported; the grader decides
        name = getattr(exc, "name", None) if type(exc).__name__ == "MissingDefinition" else None
        return {
            "id": call_id,
            "error": {"type": type(exc).__name__, "message": str(exc)[:500], "name": name},
        }
