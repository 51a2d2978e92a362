"""The classic hostile corpus: submissions written by someone who read the kit's source.

Every case is the released lesson-2 notebook answered correctly (see
:func:`attnkit_autograder.authoring.corpus.fill_notebook`), with one attack planted in one exercise
or in an extra code cell, and with its exact expected outcome: the graded cells it loses
(its score follows from the rubric), the
status of the attacked graded cell, words its message contains and, where the attack
can only be seen by reading the code, words an instructor note contains.

Escape attempts follow one pattern: a helper cell defines ``attempt()``, which returns
a description of whatever it managed to do that the sandbox should have prevented (an
empty string when everything was refused). ``SelfAttention_v2.forward`` raises
``ESCAPED: <what>`` when the attempt succeeded and otherwise computes the right answer,
so a sandbox that holds gives full marks and a hole shows up as an error naming itself.

The classes are those of the threat model: evasions of the from-scratch rule, forged and
partial replies, escapes from the sandbox, resource limits, and broken files.
"""

from __future__ import annotations

import copy
import json
import os
import textwrap
from dataclasses import dataclass, field
from typing import Any

from attnkit_autograder.authoring.corpus import (
    add_cell,
    drop_cells,
    fill_notebook,
    to_nbformat3,
)
from attnkit_autograder.lessons.rubric import graded_cells  # the demo's hostile student
from attnkit_autograder.platforms.demo import SABOTAGE, ZEROS_V2

SLUG = "02_self_attention"
SOFTMAX_CELL, V2_CELL, TRANSFER_CELL = (
    "test_softmax_values",
    "test_v2_forward",
    "test_weight_transfer",
)
CELL_POINTS = {cell.grade_id: cell.points for cell in graded_cells(SLUG)}


def scored(*lost: str) -> float:
    """The score of a submission that loses exactly the graded cells ``lost``."""
    return sum(CELL_POINTS.values()) - sum(CELL_POINTS[grade_id] for grade_id in lost)


KEEPS_ALL: tuple[str, ...] = ()
LOSES_V2 = (V2_CELL,)
LOSES_TRANSFER = (TRANSFER_CELL,)
LOSES_V2_AND_TRANSFER = (V2_CELL, TRANSFER_CELL)
LOSES_SOFTMAX = (SOFTMAX_CELL, "test_softmax_stability")
LOSES_ALL = tuple(CELL_POINTS)
LOSES_UNCHECKED = (*LOSES_SOFTMAX, "test_v1_forward", "test_v1_batched", V2_CELL)
"""Every exercise whose from-scratch check cannot run: a recorder switched off."""
LOSES_SOFTMAX_USERS = tuple(c for c in CELL_POINTS if c != TRANSFER_CELL)
"""Every exercise that calls the student's softmax (all but the weight transfer)."""
MAX_SCORE = scored()
CANARY_NAME = f"attnkit-hostile-canary-{os.getuid()}-{os.getpid()}"  # /dev/shm is shared
"""A file the grader owns in the machine's /dev/shm, which a submission tries to delete."""

CORRECT_V2 = (
    "queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)\n"
    "weights = softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-1)\n"
    "return weights @ values"
)

# Where kernels are withheld, a guard refuses foreign calls (ctypes) before seccomp is asked:
# that refusal is the attempt failing too. tests/test_sandbox.py runs every attempt that uses
# them where no guard is, so that seccomp's own refusals are checked as well.
GUARDED_V2 = (
    "try:\n"
    "    leak = attempt()\n"
    "except PermissionError as refused:\n"
    "    if 'where kernels are withheld' not in str(refused):\n"
    "        raise\n"
    "    leak = ''\n"
    'if leak:\n    raise RuntimeError("ESCAPED: " + leak)\n' + CORRECT_V2
)
QKV = "q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)\n"


@dataclass(frozen=True)
class Targets:
    """Paths outside the sandbox that the attacks go after (all must stay out of reach)."""

    secrets: tuple[str, ...]
    """Files a submission must not read: hidden suites, references, other submissions, OUT."""
    writable: tuple[str, ...]
    """Grader-owned files a submission must not change."""
    repo: str
    """The kit's checkout (its path must not exist inside the sandbox)."""
    grader_cwd: str = "."


@dataclass(frozen=True)
class Case:
    """One hostile submission and the outcome it must get."""

    name: str
    kind: str
    """evasion | reply | escape | limit | file (the threat model's classes)."""
    lost: tuple[str, ...]
    """The graded cells the attack costs (its expected score follows from the rubric)."""
    cell: str
    """The attacked graded cell (its grade id)."""
    status: str
    words: str = ""
    """Words the attacked cell's message contains."""
    bodies: dict[str, str | None] = field(default_factory=dict)
    """Exercise answers that replace the reference's (None: the stub stays)."""
    extra: str | None = None
    """An extra code cell, appended after the last cell (``{targets}`` etc. are filled in)."""
    note: str = ""
    """Words one of the record's instructor notes must contain."""
    first: bool = False
    """Put the extra cell first (so the demo cells that call the exercise find its helper)."""

    @property
    def score(self) -> float:
        """The exact expected score: the rubric's total less the points of ``lost``."""
        return scored(*self.lost)


def _softmax_evasion(name: str, expr: str, extra: str | None = None, note: str = "") -> Case:
    """Softmax taken from the library: both softmax cells are forbidden (3 points lost).

    ``nan_to_num`` turns a fully masked row's NaN into zeros, so the evasion would pass
    every value check if the recorder missed it: only a ``forbidden`` verdict stops it.
    """
    body = f"return torch.nan_to_num({expr}, nan=0.0)"
    return Case(
        name, "evasion", LOSES_SOFTMAX, SOFTMAX_CELL, "forbidden", "softmax", {"softmax": body},
        extra, note,
    )  # fmt: skip


def _attention_evasion(name: str, body: str, extra: str | None = None) -> Case:
    """Attention taken from the library in SelfAttention_v2 (2 points lost)."""
    return Case(
        name,
        "evasion",
        LOSES_V2,
        V2_CELL,
        "forbidden",
        "write yourself",
        {"SelfAttention_v2": QKV + body},
        extra,
    )


def _v2(
    name: str,
    kind: str,
    lost: tuple[str, ...],
    status: str,
    words: str,
    body: str,
    extra: str | None = None,
    note: str = "",
) -> Case:
    """A case whose attack is in SelfAttention_v2.forward (or reached from it)."""
    return Case(name, kind, lost, V2_CELL, status, words, {"SelfAttention_v2": body}, extra, note)


# -- helpers planted in extra cells ------------------------------------------------------------

# The worker's reply pipe and the current request's nonce, found by walking the frames of
# the process the submission runs in (it knows the kit's source).
STEAL_CHANNEL = """
import json as _json, os as _os, struct as _struct, sys as _sys

def channel():
    frame = _sys._getframe()
    while frame is not None:
        if frame.f_code.co_name == "serve" and "request" in frame.f_locals:
            return frame.f_locals["self"].replies, frame.f_locals["request"].get("nonce")
        frame = frame.f_back
    raise RuntimeError("no worker frame")

def frame_of(document, arrays=b""):
    body = _json.dumps(document).encode()
    message = _struct.pack(">Q", len(body)) + body + arrays
    return _struct.pack(">Q", len(message)) + message

def writable_pipes():
    import fcntl
    found = []
    for name in _os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            target = _os.readlink(f"/proc/self/fd/{fd}")
            mode = fcntl.fcntl(fd, fcntl.F_GETFL) & 3
        except OSError:
            continue
        if target.startswith("pipe:") and mode == _os.O_WRONLY:
            found.append(fd)
    return found
"""

REPLIES_ONCE = "_forged = set()\n"  # shapes already forged once, so the run stays predictable


def _forge(name: str, words: str, write: str, status: str = "error") -> Case:
    """SelfAttention_v2 writes to the reply pipe itself, on the first [2, 5, 4] input only."""
    body = (
        "if tuple(x.shape) == (2, 5, 4) and 'done' not in _forged:\n"
        "    _forged.add('done')\n"
        "    fd, nonce = channel()\n"
        + "\n".join("    " + line for line in write.splitlines())
        + "\n"
        + CORRECT_V2
    )
    return _v2(name, "reply", LOSES_V2, status, words, body, STEAL_CHANNEL + REPLIES_ONCE)


FORGED_ADAPTER = """
import sys as _sys
import numpy as _np

def forged_transfer(ns, d_in, d_out, seed=0, qkv_bias=False, name="", v2_state=None):
    # Claims that the copy worked and that biases were refused, without running anything.
    if qkv_bias:
        return {"raised": "ValueError"}
    fake = {n: _np.ones((d_in, d_out), _np.float32) for n in ("W_query", "W_key", "W_value")}
    return {"v1": fake, "v2": {}, "returned_v1": True}

_sys.modules["attnkit.adapters"].ADAPTERS["transfer_weights"] = forged_transfer
"""

DISABLE_RECORDER = """
import importlib as _importlib
_module = _importlib.import_module("attnkit.student_process." + "recorder")
_recorder = getattr(_module, "Rec" + "order")
_recorder.__enter__ = lambda self: self
_recorder.__exit__ = lambda self, *exc: None
"""

GC_RECORDER = """
import gc as _gc

def blind_recorders():
    for obj in _gc.get_objects():
        if type(obj).__name__ == "Recorder":
            obj.kernels, obj.functions = frozenset(), {}
"""


# -- escape and limit attempts ------------------------------------------------------------------
#
# Each is the body of ``attempt()``: it returns what it managed to do that the sandbox should
# have refused ("" when everything was refused). The helper cell first binds SECRETS,
# WRITABLE, REPO, GRADER_CWD and CANARY (see :func:`_preamble`).

ATTEMPTS: dict[str, tuple[str, str]] = {
    "read_hidden_files": (
        "escape",
        """
        found = []
        for path in SECRETS:
            try:
                open(path, "rb").read(1)
                found.append(path)
            except OSError:
                pass
        return " ".join(found)
    """,
    ),
    "import_references": (
        "escape",
        """
        import importlib
        found = []
        # Where the packages are installed, the sandbox covers them with empty folders, which
        # import as empty namespace packages: what must fail is reaching their modules.
        for name in ("attnkit_solutions.exercises", "attnkit_solutions.self_attention",
                     "attnkit_autograder.grading.harness",
                     "attnkit_autograder.grading.suite_support"):
            try:
                importlib.import_module(name)
                found.append(name)
            except Exception:
                pass
        return " ".join(found)
    """,
    ),
    "hidden_packages_in_site_packages": (
        "escape",
        """
        import os, sys
        hidden = ("attnkit_autograder", "attnkit_solutions", "__editable__")
        found = []
        for folder in sys.path:
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for path in (os.path.join(folder, n) for n in names if n.startswith(hidden)):
                if os.path.isdir(path) and os.listdir(path):
                    found.append(path)
                elif os.path.isfile(path) and os.path.getsize(path):
                    found.append(path)
        return " ".join(found)
    """,
    ),
    "read_through_proc_1_root": (
        "escape",
        """
        found = []
        for path in SECRETS:
            try:
                open("/proc/1/root" + path, "rb").read(1)
                found.append(path)
            except OSError:
                pass
        return " ".join(found)
    """,
    ),
    "read_through_proc_pid_cwd": (
        "escape",
        """
        import os
        relative = [p[len(GRADER_CWD) + 1 :] for p in SECRETS if p.startswith(GRADER_CWD + "/")]
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            for base in ("cwd", "root"):
                for rel in relative:
                    try:
                        open(f"/proc/{pid}/{base}/{rel}", "rb").read(1)
                        found.append(f"/proc/{pid}/{base}/{rel}")
                    except OSError:
                        pass
        return " ".join(found)
    """,
    ),
    "machine_paths_visible": (
        "escape",
        """
        import os
        # Folders above the bound Python installation exist as empty skeletons: what
        # matters is whether anything else of the machine is in them.
        paths = (REPO + "/autograder", REPO + "/solutions", REPO + "/README.md",
                 "/etc/shadow", "/etc/passwd", "/home", "/var/run/docker.sock")
        found = [p for p in paths if os.path.exists(p)]
        if os.path.isdir(REPO):
            found += [f"{REPO}/{n}" for n in os.listdir(REPO) if n != ".venv"]
        return " ".join(found)
    """,
    ),
    "write_outside_tmp": (
        "escape",
        """
        found = []
        others = ["/usr/attnkit-x", "/opt/attnkit/attnkit/x.py", "/attnkit-x",
                  "/opt/attnkit/planted.py", "/data/the-verdict.txt"]
        for path in WRITABLE + others:
            try:
                with open(path, "a") as f:
                    f.write("tampered")
                found.append(path)
            except OSError:
                pass
        return " ".join(found)
    """,
    ),
    "signal_the_zygote": (
        "escape",
        """
        import os, signal
        for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGSEGV, signal.SIGSTOP):
            try:
                os.kill(1, sig)
            except OSError:
                pass
        try:
            os.kill(-1, signal.SIGKILL)  # everything this process may signal, but itself
        except OSError:
            pass
        return ""
    """,
    ),
    "ptrace_the_zygote": (
        "escape",
        """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        found = ["ptrace attach"] if libc.ptrace(16, 1, 0, 0) == 0 else []
        for path in ("/proc/1/mem", "/proc/1/environ", "/proc/1/maps"):
            try:
                open(path, "rb").read(1)
                found.append(path)
            except OSError:
                pass
        return " ".join(found)
    """,
    ),
    "fork_and_spawn": (
        "escape",
        """
        import os, subprocess
        found = []
        try:
            if os.fork() == 0:
                os._exit(0)
            found.append("fork")
        except OSError:
            pass
        try:
            subprocess.run(["/bin/true"], check=True)
            found.append("subprocess")
        except (OSError, subprocess.SubprocessError):
            pass
        try:
            os.posix_spawn("/bin/true", ["true"], {})
            found.append("posix_spawn")
        except OSError:
            pass
        return " ".join(found)
    """,
    ),
    "raw_clone_syscalls": (
        "escape",
        """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        found = []
        pid = libc.syscall(56, 17, 0, 0, 0, 0)  # clone(SIGCHLD): a new process
        if pid == 0:
            os._exit(0)
        if pid > 0:
            found.append("clone")
        if libc.syscall(435, 0, 0) >= 0:
            found.append("clone3")
        if libc.unshare(0x10000000) == 0:  # CLONE_NEWUSER
            found.append("unshare")
        return " ".join(found)
    """,
    ),
    "exec_a_program": (
        "escape",
        """
        import os
        try:
            os.execv("/bin/true", ["true"])
        except OSError:
            return ""
        return "exec"
    """,
    ),
    "network_sockets": (
        "escape",
        """
        import socket
        kinds = [(socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET, socket.SOCK_DGRAM),
                 (socket.AF_INET6, socket.SOCK_STREAM), (socket.AF_UNIX, socket.SOCK_STREAM)]
        found = []
        for family, kind in kinds:
            try:
                socket.socket(family, kind).close()
                found.append(f"{family.name}/{kind.name}")
            except OSError:
                pass
        return " ".join(found)
    """,
    ),
    "inherited_descriptors": (
        "escape",
        """
        import os
        found = []
        for name in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{name}")
            except OSError:
                continue
            if target.startswith(("socket:", "/work", "/root", "/home", REPO)):
                found.append(f"{name}->{target}")
        return " ".join(found)
    """,
    ),
    "raise_own_limits": (
        "escape",
        """
        import resource
        found = []
        for limit in (resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_FSIZE,
                      resource.RLIMIT_NOFILE):
            try:
                resource.setrlimit(limit, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
                found.append(str(limit))
            except (ValueError, OSError):
                pass
        return " ".join(found)
    """,
    ),
    "resource_tracker_deletes_grader_files": (
        "escape",
        """
        import os
        from multiprocessing import resource_tracker, shared_memory
        found = []
        try:
            resource_tracker.ensure_running()
            found.append("tracker started")
        except Exception:
            pass
        try:
            shared_memory.SharedMemory(name=CANARY).unlink()
            found.append("canary unlinked")
        except Exception:
            pass
        try:
            os.unlink("/dev/shm/" + CANARY)
            found.append("canary removed")
        except OSError:
            pass
        return " ".join(found)
    """,
    ),
    "leaves_files_and_a_thread_behind": (
        "escape",
        """
        import os, threading, time
        def linger():
            while True:
                for folder in ("/tmp", "/dev/shm"):
                    try:
                        open(os.path.join(folder, "attnkit-leftover"), "w").write("x")
                    except OSError:
                        pass
                time.sleep(0.05)
        threading.Thread(target=linger, daemon=False).start()
        return ""
    """,
    ),
    "finds_what_earlier_submissions_left": (
        "escape",
        """
        import os
        found = []
        for folder in ("/tmp", "/dev/shm"):
            for name in os.listdir(folder):
                if name.startswith(("attnkit-leftover", "fill-", "huge")):
                    found.append(os.path.join(folder, name))
        found += [p for p in ("/attnkit-x", "/opt/attnkit/planted.py") if os.path.exists(p)]
        mine = (1, os.getpid())
        found += [f"process {p}" for p in os.listdir("/proc") if p.isdigit() and int(p) not in mine]
        return " ".join(found)
    """,
    ),
    "shared_memory_outside_limits": (
        "limit",
        """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        found = []
        try:
            os.memfd_create("x")
            found.append("memfd_create")
        except OSError:
            pass
        if libc.syscall(319, b"x", 0) >= 0:
            found.append("memfd syscall")
        if libc.shmget(0, 1 << 20, 0o1000 | 0o600) >= 0:
            found.append("shmget")
        return " ".join(found)
    """,
    ),
    "memory_across_threads": (
        "limit",
        """
        import threading
        held = []
        def grab():
            try:
                held.append(bytearray(300 * 1024 * 1024))
            except MemoryError:
                pass
        threads = [threading.Thread(target=grab) for _ in range(6)]
        started = []
        for t in threads:
            try:
                t.start()  # refused too, once the address-space limit leaves no room
            except RuntimeError:
                break
            started.append(t)
        for t in started:
            t.join()
        got = len(held) * 300
        held.clear()
        return f"{got} MiB held by threads" if got > 1100 else ""
    """,
    ),
    "tmp_disk_filling": (
        "limit",
        """
        import os
        total, chunk = 0, b"x" * (32 * 1024 * 1024)
        for folder in ("/tmp", "/dev/shm"):
            paths = [os.path.join(folder, f"fill-{n}") for n in range(40)]
            for path in paths:
                try:
                    with open(path, "wb") as f:
                        f.write(chunk)
                    total += len(chunk)
                except OSError:
                    break
            for path in paths:
                try:
                    os.unlink(path)
                except OSError:
                    pass
        return f"{total >> 20} MiB written" if total > 400 * 1024 * 1024 else ""
    """,
    ),
    "one_huge_file": (
        "limit",
        """
        import os
        written = 0
        try:
            with open("/tmp/huge", "wb") as f:
                for _ in range(5):
                    f.write(b"x" * (32 * 1024 * 1024))
                    written += 32
        except OSError:
            pass
        os.unlink("/tmp/huge")
        return f"{written} MiB in one file" if written > 64 else ""
    """,
    ),
    "thread_bomb": (
        "limit",
        """
        import threading
        if getattr(attempt, "done", False):
            return ""  # once per process: the memory limit, not the call's timeout, must stop it
        attempt.done = True
        threading.stack_size(64 * 1024)
        stop, started = threading.Event(), 0
        try:
            for _ in range(3000):
                threading.Thread(target=stop.wait, daemon=True).start()
                started += 1
        except (RuntimeError, MemoryError):
            pass
        finally:
            stop.set()
            threading.stack_size(0)
        return f"{started} threads" if started >= 3000 else ""
    """,
    ),
}


def _preamble(targets: Targets) -> str:
    """What the attempts may know: the paths of everything they must not reach."""
    return (
        f"SECRETS = {list(targets.secrets)!r}\n"
        f"WRITABLE = {list(targets.writable)!r}\n"
        f"REPO = {targets.repo!r}\n"
        f"GRADER_CWD = {targets.grader_cwd!r}\n"
        f"CANARY = {CANARY_NAME!r}\n"
    )


def _escape(name: str, targets: Targets) -> Case:
    """An attempt the sandbox must refuse: the submission keeps full marks (a thread the
    attempt leaves running is the submission's own, and dies with its worker)."""
    kind, body = ATTEMPTS[name]
    helper = (
        _preamble(targets) + "def attempt():\n" + textwrap.indent(textwrap.dedent(body), "    ")
    )
    return Case(
        name,
        kind,
        KEEPS_ALL,
        V2_CELL,
        "passed",
        "",
        {"SelfAttention_v2": GUARDED_V2},
        helper,
        first=True,
    )


def _cases(targets: Targets) -> list[Case]:
    """Every hostile case, with its expected outcome."""
    return [
        # -- evasions of the from-scratch rule: softmax -------------------------------------
        _softmax_evasion("sm_torch_softmax", "torch.softmax(x, dim)"),
        _softmax_evasion("sm_captured_at_load", "SM(x, dim)", "SM = torch.softmax\n"),
        _softmax_evasion("sm_log_softmax_exp", "torch.log_softmax(x, dim).exp()"),
        _softmax_evasion(
            "sm_functional_log_softmax_exp",
            "__import__('torch.nn.functional').nn.functional.log_softmax(x, dim=dim).exp()",
        ),
        _softmax_evasion("sm_private_softmax", "torch._softmax(x, dim, False)"),
        _softmax_evasion("sm_aten_softmax", "torch.ops.aten._softmax(x, dim, False)"),
        _softmax_evasion(
            "sm_aten_log_softmax", "torch.ops.aten._log_softmax.default(x, dim, False).exp()"
        ),
        _softmax_evasion("sm_name_from_strings", 'getattr(torch, "soft" + "max")(x, dim)'),
        _softmax_evasion("sm_tensor_method", "x.softmax(dim)"),
        _softmax_evasion("sm_special_softmax", "torch.special.softmax(x, dim)"),
        _softmax_evasion("sm_nn_softmax_module", "torch.nn.Softmax(dim=dim)(x)"),
        _softmax_evasion("sm_eval_name", 'eval("torch." + "soft" + "max")(x, dim)'),
        Case(
            "sm_under_disable_torch_function",
            "evasion",
            LOSES_SOFTMAX,
            SOFTMAX_CELL,
            "forbidden",
            "softmax",
            {
                "softmax": "with torch._C.DisableTorchFunction():\n"
                "    out = torch._softmax(x, dim, False)\n"
                "return torch.nan_to_num(out, nan=0.0)"
            },
        ),
        # Attacks on the recorder itself. Where they defeat it, the instructor is told,
        # naming the line: the expected outcome is the grade the attack gets plus that note.
        # The worker bound its recorder before the cells ran: a class patched afterwards
        # changes nothing it uses, and the library softmax is seen as any other.
        Case(
            "sm_recorder_patched_via_sys_modules",
            "evasion",
            LOSES_SOFTMAX,
            SOFTMAX_CELL,
            "forbidden",
            "torch.softmax",
            {"softmax": "return torch.nan_to_num(torch.softmax(x, dim), nan=0.0)"},
            "import sys\n"
            "_r = sys.modules['attnkit.student_process.recorder'].Recorder\n"
            "_r.__enter__ = lambda self: self\n"
            "_r.__exit__ = lambda self, *exc: None\n",
            "sys.modules",
        ),
        # Where kernels are withheld, the guard refuses the collector's lists: the softmax
        # fails, and every exercise that calls it.
        Case(
            "sm_recorder_found_with_gc",
            "evasion",
            LOSES_SOFTMAX_USERS,
            SOFTMAX_CELL,
            "error",
            "gc.get_objects",
            {
                "softmax": "blind_recorders()\n"
                "return torch.nan_to_num(torch.softmax(x, dim), nan=0.0)"
            },
            GC_RECORDER,
            "gc.get_objects",
        ),
        Case(
            "sm_mode_stack_bypassed",
            "evasion",
            LOSES_UNCHECKED,
            SOFTMAX_CELL,
            "forbidden",
            "aten._softmax, PyTorch's kernel",
            {
                "softmax": "import torch.overrides, torch.utils._python_dispatch as d\n"
                "torch.overrides._push_mode = d._push_mode = lambda *a, **k: None\n"
                "torch.overrides._pop_mode = d._pop_mode = lambda *a, **k: None\n"
                "return torch.nan_to_num(torch.softmax(x, dim), nan=0.0)"
            },
            None,
            "mode stack",
        ),
        # The same defeats, with the module named at run time and the switches imported by
        # name: the instructor must still be told where.
        Case(
            "sm_recorder_patched_by_computed_name",
            "evasion",
            LOSES_SOFTMAX,
            SOFTMAX_CELL,
            "forbidden",
            "torch.softmax",
            {"softmax": "return torch.nan_to_num(torch.softmax(x, dim), nan=0.0)"},
            DISABLE_RECORDER,
            "import_module",
        ),
        Case(
            "sm_modes_disabled_by_from_imports",
            "evasion",
            LOSES_SOFTMAX,
            SOFTMAX_CELL,
            "forbidden",
            "aten._softmax, PyTorch's kernel",
            {
                "softmax": "from torch._C import DisableTorchFunction\n"
                "from torch.utils._python_dispatch import _disable_current_modes\n"
                "with DisableTorchFunction(), _disable_current_modes():\n"
                "    out = torch.softmax(x, dim)\n"
                "return torch.nan_to_num(out, nan=0.0)"
            },
            None,
            "torch._C",
        ),
        # -- evasions: attention --------------------------------------------------------------
        _attention_evasion(
            "sdpa_alias",
            "from torch.nn.functional import scaled_dot_product_attention as mix\n"
            "return mix(q, k, v)",
        ),
        _attention_evasion(
            "sdpa_captured_at_load",
            "return ATTEND(q, k, v)",
            "ATTEND = torch.nn.functional.scaled_dot_product_attention\n",
        ),
        _attention_evasion(
            "sdpa_name_from_strings",
            "import torch.nn.functional as F\n"
            'return getattr(F, "scaled_dot_" + "product_attention")(q, k, v)',
        ),
        _attention_evasion(
            "sdpa_aten_op", "return torch.ops.aten.scaled_dot_product_attention(q, k, v)"
        ),
        _attention_evasion(
            "sdpa_math_kernel",
            "return torch.ops.aten._scaled_dot_product_attention_math(q, k, v)[0]",
        ),
        _attention_evasion(
            "sdpa_under_disable_torch_function",
            "import torch.nn.functional as F\n"
            "with torch._C.DisableTorchFunction():\n"
            "    return F.scaled_dot_product_attention(q, k, v)",
        ),
        _attention_evasion(
            "nn_multihead_attention",
            "d = q.shape[-1]\n"
            "mha = torch.nn.MultiheadAttention(d, 1, bias=False, batch_first=True)\n"
            "with torch.no_grad():\n"
            "    mha.in_proj_weight.copy_(torch.eye(d).repeat(3, 1))\n"
            "    mha.out_proj.weight.copy_(torch.eye(d))\n"
            "single = q.dim() == 2\n"
            "if single:\n"
            "    q, k, v = q[None], k[None], v[None]\n"
            "out = mha(q, k, v, need_weights=False)[0]\n"
            "return out[0] if single else out",
        ),
        # -- forged and partial replies -------------------------------------------------------
        _forge(
            "reply_forged_with_stolen_nonce",
            "wrong values",
            "zeros = bytes(4 * 2 * 5 * 3)\n"
            "ref = {'__nd__': [0, len(zeros)], 'dtype': '<f4', 'shape': [2, 5, 3]}\n"
            "out = {'kind': 'tensor', 'dtype': 'float32', 'array': ref}\n"
            "ok = {'out': out, 'params': {}, 'buffers': {}, 'grads': {}, 'inputs_after': []}\n"
            "_os.write(fd, frame_of({'nonce': nonce, 'ok': ok}, zeros))",
        ),
        _forge(
            "reply_wrong_nonce",
            "another request",
            "_os.write(fd, frame_of({'nonce': '0' * 32, 'ok': {}}))",
        ),
        _forge(
            "reply_breaks_the_schema",
            "malformed reply",
            "bad = {'out': {'kind': 'tensor', 'dtype': 'float32', 'array': 'all good'}}\n"
            "_os.write(fd, frame_of({'nonce': nonce, 'ok': bad}))",
        ),
        _forge(
            "reply_deep_json",
            "malformed reply",
            "body = b'[' * 200000 + b']' * 200000\n"
            "message = _struct.pack('>Q', len(body)) + body\n"
            "_os.write(fd, _struct.pack('>Q', len(message)) + message)",
        ),
        _forge(
            "reply_huge_frame_header",
            "more data than the grader accepts",
            "_os.write(fd, _struct.pack('>Q', 2 ** 62))",
        ),
        _forge(
            "reply_partial_header_then_sleep",
            "no answer after",
            "import time\n_os.write(fd, b'\\x00\\x00\\x00')\ntime.sleep(3600)",
            status="timeout",
        ),
        _forge(
            "reply_partial_body_then_sleep",
            "no answer after",
            "import time\n_os.write(fd, _struct.pack('>Q', 1000) + b'{')\ntime.sleep(3600)",
            status="timeout",
        ),
        _forge(
            "reply_queued_in_advance",
            "another request",
            "for n in range(5):\n    _os.write(fd, frame_of({'nonce': f'{n:032x}', 'ok': {}}))",
        ),
        _forge(
            "reply_pipe_found_in_proc_fd",
            "no answer after",
            "import time\nfor pipe in writable_pipes():\n    _os.write(pipe, b'\\x00' * 5)\n"
            "time.sleep(3600)",
            status="timeout",
        ),
        _v2(
            "reply_returns_huge_tensor",
            "reply",
            LOSES_V2,
            "error",
            "more data than the grader accepts",
            "return torch.zeros(5, 4, 1_000_000)",
        ),
        Case(
            "reply_forged_by_replaced_adapter",
            "reply",
            LOSES_TRANSFER,
            TRANSFER_CELL,
            "failed",
            "after the copy",
            {"copy_v2_weights_into_v1": "return v1"},
            FORGED_ADAPTER,
            "sys.modules",
        ),
        _v2(
            "reply_worker_handle_replaced",
            "reply",
            LOSES_ALL,
            "error",
            "malformed reply",
            CORRECT_V2,
            "import sys\n"
            "sys.modules['attnkit.student_process.worker'].Worker.handle = (\n"
            "    lambda self, request: {'nonce': request.get('nonce'), 'ok': {'passed': True}}\n"
            ")\n",
            "sys.modules",
        ),
        # -- escape attempts and limits -------------------------------------------------------
        *(_escape(name, targets) for name in ATTEMPTS),
        Case(
            "cell_partial_header_then_sleep",
            "reply",
            KEEPS_ALL,
            V2_CELL,
            "passed",
            "",
            {},
            STEAL_CHANNEL + "for pipe in writable_pipes():\n    _os.write(pipe, b'\\x00\\x00')\n"
            "import time\ntime.sleep(3600)\n",
            "was skipped",
        ),
        _v2(
            "cpu_spin_in_c",
            "limit",
            LOSES_V2,
            "timeout",
            "no answer after",
            "a = torch.randn(1200, 1200)\nwhile True:\n    a = (a @ a).clamp(-1, 1)",
        ),
        _v2(
            "c_stack_overflow",
            "limit",
            LOSES_V2,
            "error",
            "the submission's process",
            "import sys\nsys.setrecursionlimit(10**8)\nnested = []\n"
            "for _ in range(2 * 10**5):\n    nested = [nested]\n"
            "import json\nreturn json.dumps(nested, check_circular=False)",
        ),
        # Empty files cost no bytes of /tmp's cap, but each takes the machine's memory:
        # the sandbox counts them, and stops the worker past 20,000.
        _v2(
            "floods_tmp_with_empty_files",
            "limit",
            LOSES_V2,
            "error",
            "made more than 20,000 files",
            "import os\nfor i in range(2 * 10**6):\n"
            "    os.close(os.open(f'/tmp/f{i}', os.O_CREAT | os.O_WRONLY))\n" + CORRECT_V2,
        ),
        Case(
            "cell_loops_ignoring_signals",
            "limit",
            KEEPS_ALL,
            V2_CELL,
            "passed",
            "",
            {},
            "import signal\n"
            "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGINT})\n"
            "signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
            "while True:\n    pass\n",
            "was skipped",
        ),
    ]


# -- the classic cases (kept from the first corpus) ---------------------------------------------


def classic_cases() -> list[Case]:
    return [
        Case("correct", "file", KEEPS_ALL, V2_CELL, "passed"),
        Case("zz_correct_classmate", "file", KEEPS_ALL, V2_CELL, "passed"),
        Case("untouched_stubs", "file", LOSES_ALL, V2_CELL, "failed", "not implemented"),
        _v2(
            "patches_numpy_torch_builtins",
            "evasion",
            LOSES_V2,
            "failed",
            "wrong values",
            "sabotage()\n" + ZEROS_V2,
            SABOTAGE,
        ),
        _v2(
            "infinite_loop",
            "limit",
            LOSES_V2,
            "timeout",
            "no answer after",
            "while True:\n    pass",
        ),
        _v2(
            "infinite_loop_ignoring_signals",
            "limit",
            LOSES_V2,
            "timeout",
            "no answer after",
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass",
        ),
        _v2(
            "unbounded_allocation",
            "limit",
            LOSES_V2,
            "error",
            "memory",
            "blocks = []\nwhile True:\n    blocks.append(bytearray(256 * 1024 * 1024))",
        ),
        _v2("os_exit", "limit", LOSES_V2, "error", "exited", "import os\nos._exit(3)"),
        _v2(
            "segfault", "limit", LOSES_V2, "error", "", "import ctypes\nreturn ctypes.string_at(0)"
        ),
        _v2(
            "fork_bomb",
            "limit",
            LOSES_V2,
            "timeout",
            "no answer after",
            "import os\nwhile True:\n    try:\n        os.fork()\n"
            "    except OSError:\n        pass",
        ),
        _v2(
            "reads_the_references",
            "escape",
            LOSES_V2,
            "error",
            "ModuleNotFoundError",
            "from attnkit_solutions.self_attention import SelfAttention_v2 as Reference\n"
            "return Reference.forward(self, x)",
        ),
        _v2(
            "returns_numpy",
            "file",
            LOSES_V2,
            "failed",
            "NumPy array",
            CORRECT_V2[: CORRECT_V2.rindex("\n")] + "\nreturn (weights @ values).detach().numpy()",
        ),
        _v2(
            "nan_output",
            "file",
            LOSES_V2,
            "failed",
            "NaN",
            "return torch.full((*x.shape[:-1], self.W_query.out_features), float('nan'))",
        ),
        _v2(
            "prints_megabytes",
            "limit",
            KEEPS_ALL,
            "passed",
            "",
            'print("x" * 5_000_000)\n' + CORRECT_V2,
            'print("y" * 20_000_000)\n',
        ),
    ]


def _is_test_cell(cell: dict[str, Any]) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("grade"))


def file_cases(released: dict[str, Any]) -> dict[str, tuple[Case, dict[str, Any] | bytes]]:
    """Cases that are whole files rather than a planted attack: edited notebooks, bad bytes."""
    correct = fill_notebook(released, SLUG)
    wrong_v2 = fill_notebook(released, SLUG, {"SelfAttention_v2": ZEROS_V2})
    edited = copy.deepcopy(wrong_v2)
    for cell in edited["cells"]:
        if _is_test_cell(cell):
            cell["source"] = ["print('all tests passed')\n"]
    wrong_signature = copy.deepcopy(correct)
    for cell in wrong_signature["cells"]:
        cell["source"] = [
            line.replace(
                "def copy_v2_weights_into_v1(v2: SelfAttention_v2, v1: SelfAttention_v1)",
                "def copy_v2_weights_into_v1(v2: SelfAttention_v2)",
            )
            for line in cell["source"]
        ]
    missing = drop_cells(
        correct,
        lambda c: c.get("metadata", {}).get("nbgrader", {}).get("grade_id") != "SelfAttention_v2",
    )
    not_utf8 = b"\xff\xfe\x00\x01" + json.dumps(correct).encode("utf-16")
    broken_json = b'{"cells": [{"cell_type": "code", "source": ["def f('
    table: list[tuple[Case, dict[str, Any] | bytes]] = [
        (Case("deleted_test_cells", "file", LOSES_V2, V2_CELL, "failed", "wrong values"),
         drop_cells(wrong_v2, lambda c: not _is_test_cell(c))),
        (Case("edited_test_cells", "file", LOSES_V2, V2_CELL, "failed", "wrong values"), edited),
        (Case("missing_class", "file", LOSES_V2_AND_TRANSFER, V2_CELL, "error", "not defined"),
         missing),
        (Case("wrong_signature", "file", LOSES_TRANSFER, TRANSFER_CELL, "error", "TypeError"),
         wrong_signature),
        (Case("nbformat3", "file", KEEPS_ALL, V2_CELL, "passed"), to_nbformat3(correct)),
        (Case("malformed_json", "file", LOSES_ALL, V2_CELL, "error", "not valid notebook JSON"),
         broken_json),
        (Case("not_utf8", "file", LOSES_ALL, V2_CELL, "error", "not UTF-8"), not_utf8),
        (Case("empty", "file", LOSES_ALL, V2_CELL, "error", "is empty"), b""),
    ]  # fmt: skip
    return {case.name: (case, content) for case, content in table}


UNGRADABLE = ("malformed_json", "not_utf8", "empty")


def planted(released: dict[str, Any], case: Case) -> dict[str, Any]:
    """The released notebook answered correctly, with ``case``'s attack planted."""
    if case.name == "untouched_stubs":
        return released
    notebook = fill_notebook(released, SLUG, case.bodies)
    if case.extra is not None:
        notebook = add_cell(notebook, case.extra, 0 if case.first else None)
    return notebook


def hostile_notebook(released: dict[str, Any], name: str) -> dict[str, Any]:
    """One of the classic hostile cases (those that need no target paths), planted."""
    case = next(c for c in classic_cases() if c.name == name)
    return planted(released, case)


def cases(targets: Targets) -> list[Case]:
    """Every planted case of this module (the hostile_cases protocol)."""
    return classic_cases() + _cases(targets)
