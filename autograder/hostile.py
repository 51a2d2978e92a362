"""The hostile corpus: submissions written by someone who read the kit's source.

Every case is the released lesson-2 notebook answered correctly (see
:func:`attnkit_autograder.corpus.fill_notebook`), with one attack planted in one exercise
or in an extra code cell, and with its exact expected outcome: the score out of 14, the
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .corpus import add_cell, fill_notebook, released_notebook, write_notebook

SLUG = "02_self_attention"
MAX_SCORE = 14.0
SOFTMAX_CELL, V2_CELL, TRANSFER_CELL = (
    "test_softmax_values",
    "test_v2_forward",
    "test_weight_transfer",
)
CANARY_NAME = "attnkit-hostile-canary"
"""A file the grader owns in the machine's /dev/shm, which a submission tries to delete."""

CORRECT_V2 = (
    "queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)\n"
    "weights = softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-1)\n"
    "return weights @ values"
)
ZEROS_V2 = "return torch.zeros(*x.shape[:-1], self.W_query.out_features)"
GUARDED_V2 = 'leak = attempt()\nif leak:\n    raise RuntimeError("ESCAPED: " + leak)\n' + CORRECT_V2
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
    score: float
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


def _softmax_evasion(name: str, expr: str, extra: str | None = None, note: str = "") -> Case:
    """Softmax taken from the library: both softmax cells are forbidden (3 points lost).

    ``nan_to_num`` turns a fully masked row's NaN into zeros, so the evasion would pass
    every value check if the recorder missed it: only a ``forbidden`` verdict stops it.
    """
    body = f"return torch.nan_to_num({expr}, nan=0.0)"
    return Case(
        name, "evasion", 11, SOFTMAX_CELL, "forbidden", "softmax", {"softmax": body}, extra, note
    )


def _attention_evasion(name: str, body: str, extra: str | None = None) -> Case:
    """Attention taken from the library in SelfAttention_v2 (2 points lost)."""
    return Case(
        name,
        "evasion",
        12,
        V2_CELL,
        "forbidden",
        "attention",
        {"SelfAttention_v2": QKV + body},
        extra,
    )


def _escape(name: str, attempt: str, kind: str = "escape") -> Case:
    """An attempt that the sandbox refuses: the submission keeps full marks."""
    helper = "def attempt():\n" + "\n".join("    " + line for line in attempt.splitlines()) + "\n"
    return Case(name, kind, 14, V2_CELL, "passed", "", {"SelfAttention_v2": GUARDED_V2}, helper)


def _v2(name: str, kind: str, score: float, status: str, words: str, body: str, extra: str | None = None, note: str = "") -> Case:  # fmt: skip
    return Case(name, kind, score, V2_CELL, status, words, {"SelfAttention_v2": body}, extra, note)


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
    return _v2(name, "reply", 12, status, words, body, STEAL_CHANNEL + REPLIES_ONCE)


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
_recorder = getattr(_importlib.import_module("attnkit." + "forbidden"), "Rec" + "order")
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


def cases(targets: Targets) -> list[Case]:
    """Every hostile case, with its expected outcome."""
    secrets = list(targets.secrets)
    suite = targets.secrets[0]
    writable = list(targets.writable)
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
            11,
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
        Case(
            "sm_recorder_patched_via_sys_modules",
            "evasion",
            14,
            SOFTMAX_CELL,
            "passed",
            "",
            {"softmax": "return torch.nan_to_num(torch.softmax(x, dim), nan=0.0)"},
            "import sys\n"
            "_r = sys.modules['attnkit.forbidden'].Recorder\n"
            "_r.__enter__ = lambda self: self\n"
            "_r.__exit__ = lambda self, *exc: None\n",
            "sys.modules",
        ),
        Case(
            "sm_recorder_found_with_gc",
            "evasion",
            14,
            SOFTMAX_CELL,
            "passed",
            "",
            {
                "softmax": "blind_recorders()\nreturn torch.nan_to_num(torch.softmax(x, dim), nan=0.0)"
            },
            GC_RECORDER,
            "gc.get_objects",
        ),
        Case(
            "sm_mode_stack_bypassed",
            "evasion",
            14,
            SOFTMAX_CELL,
            "passed",
            "",
            {
                "softmax": "import torch.overrides, torch.utils._python_dispatch as d\n"
                "torch.overrides._push_mode = d._push_mode = lambda *a, **k: None\n"
                "torch.overrides._pop_mode = d._pop_mode = lambda *a, **k: None\n"
                "return torch.nan_to_num(torch.softmax(x, dim), nan=0.0)"
            },
            None,
            "mode stack",
        ),
        # The same defeat, written so that no static rule sees it: a hole if unreported.
        Case(
            "sm_recorder_patched_by_computed_name",
            "evasion",
            11,
            SOFTMAX_CELL,
            "forbidden",
            "softmax",
            {"softmax": "return torch.nan_to_num(torch.softmax(x, dim), nan=0.0)"},
            DISABLE_RECORDER,
            "",
        ),
        Case(
            "sm_modes_disabled_by_from_imports",
            "evasion",
            11,
            SOFTMAX_CELL,
            "forbidden",
            "softmax",
            {
                "softmax": "from torch._C import DisableTorchFunction\n"
                "from torch.utils._python_dispatch import _disable_current_modes\n"
                "with DisableTorchFunction(), _disable_current_modes():\n"
                "    out = torch.softmax(x, dim)\n"
                "return torch.nan_to_num(out, nan=0.0)"
            },
        ),
        # -- evasions: attention --------------------------------------------------------------
        _attention_evasion(
            "sdpa_alias",
            "from torch.nn.functional import scaled_dot_product_attention as mix\nreturn mix(q, k, v)",
        ),
        _attention_evasion(
            "sdpa_captured_at_load",
            "return ATTEND(q, k, v)",
            "ATTEND = torch.nn.functional.scaled_dot_product_attention\n",
        ),
        _attention_evasion(
            "sdpa_name_from_strings",
            'import torch.nn.functional as F\nreturn getattr(F, "scaled_dot_" + "product_attention")(q, k, v)',
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
            "another request",
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
            "_os.write(fd, _struct.pack('>Q', len(body) + 8) + _struct.pack('>Q', len(body)) + body)",
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
            12,
            "error",
            "more data than the grader accepts",
            "return torch.zeros(5, 4, 1_000_000)",
        ),
        Case(
            "reply_forged_by_replaced_adapter",
            "reply",
            12,
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
            0,
            "error",
            "malformed reply",
            CORRECT_V2,
            "import sys\n"
            "sys.modules['attnkit.worker'].Worker.handle = (\n"
            "    lambda self, request: {'nonce': request.get('nonce'), 'ok': {'passed': True}}\n"
            ")\n",
            "sys.modules",
        ),
        # -- escape attempts --------------------------------------------------------------------
        _escape(
            "read_hidden_files",
            f"found = []\nfor path in {secrets!r}:\n"
            "    try:\n        open(path, 'rb').read(1)\n        found.append(path)\n"
            "    except OSError:\n        pass\nreturn ' '.join(found)",
        ),
        _escape(
            "import_references",
            "import importlib\nfound = []\n"
            "for name in ('attnkit_solutions', 'attnkit_autograder', 'attnkit_autograder.suites'):\n"
            "    try:\n        importlib.import_module(name)\n        found.append(name)\n"
            "    except Exception:\n        pass\nreturn ' '.join(found)",
        ),
        _escape(
            "hidden_packages_in_site_packages",
            "import os, sys\nfound = []\nfor folder in sys.path:\n"
            "    try:\n        names = os.listdir(folder)\n    except OSError:\n        continue\n"
            "    for name in names:\n"
            "        if name.startswith(('attnkit_autograder', 'attnkit_solutions', '__editable__')):\n"
            "            path = os.path.join(folder, name)\n"
            "            if os.path.isdir(path) and os.listdir(path):\n"
            "                found.append(path)\n"
            "            elif os.path.isfile(path) and os.path.getsize(path):\n"
            "                found.append(path)\n"
            "return ' '.join(found)",
        ),
        _escape(
            "read_through_proc_1_root",
            f"found = []\nfor path in {secrets!r}:\n"
            "    try:\n        open('/proc/1/root' + path, 'rb').read(1)\n        found.append(path)\n"
            "    except OSError:\n        pass\nreturn ' '.join(found)",
        ),
        _escape(
            "read_through_proc_pid_cwd",
            "import os\nfound = []\n"
            f"relative = {[p[len(targets.grader_cwd) + 1 :] for p in secrets if p.startswith(targets.grader_cwd + '/')]!r}\n"
            "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
            "    for base in ('cwd', 'root'):\n"
            "        for rel in relative:\n"
            "            try:\n                open(f'/proc/{pid}/{base}/{rel}', 'rb').read(1)\n"
            "                found.append(f'{pid}/{base}/{rel}')\n"
            "            except OSError:\n                pass\n"
            "return ' '.join(found)",
        ),
        _escape(
            "machine_paths_visible",
            f"import os\nreturn ' '.join(p for p in ({targets.repo!r}, '/work', '/root', '/home', '/etc/shadow', "
            "'/var/run/docker.sock') if os.path.exists(p))",
        ),
        _escape(
            "write_outside_tmp",
            f"found = []\nfor path in {writable + ['/usr/attnkit-x', '/opt/attnkit/attnkit/x.py', '/attnkit-x', '/data/the-verdict.txt', '/proc/sys/kernel/hostname']!r}:\n"
            "    try:\n        with open(path, 'a') as f:\n            f.write('tampered')\n"
            "        found.append(path)\n"
            "    except OSError:\n        pass\nreturn ' '.join(found)",
        ),
        _escape(
            "signal_the_zygote",
            "import os, signal\n"
            "for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGSEGV, signal.SIGSTOP):\n"
            "    try:\n        os.kill(1, sig)\n    except OSError:\n        pass\n"
            "try:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n"
            "return ''",
        ),
        _escape(
            "ptrace_the_zygote",
            "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nfound = []\n"
            "if libc.ptrace(16, 1, 0, 0) == 0:\n    found.append('ptrace attach')\n"
            "for path in ('/proc/1/mem', '/proc/1/environ', '/proc/1/maps'):\n"
            "    try:\n        open(path, 'rb').read(1)\n        found.append(path)\n"
            "    except OSError:\n        pass\nreturn ' '.join(found)",
        ),
        _escape(
            "fork_and_spawn",
            "import os, subprocess\nfound = []\n"
            "try:\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n    found.append('fork')\n"
            "except OSError:\n    pass\n"
            "try:\n    subprocess.run(['/bin/true'], check=True)\n    found.append('subprocess')\n"
            "except (OSError, subprocess.SubprocessError):\n    pass\n"
            "try:\n    os.posix_spawn('/bin/true', ['true'], {})\n    found.append('posix_spawn')\n"
            "except OSError:\n    pass\nreturn ' '.join(found)",
        ),
        _escape(
            "raw_clone_syscalls",
            "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nfound = []\n"
            "pid = libc.syscall(56, 17, 0, 0, 0, 0)\n"
            "if pid == 0:\n    os._exit(0)\nif pid > 0:\n    found.append('clone')\n"
            "if libc.syscall(435, 0, 0) >= 0:\n    found.append('clone3')\n"
            "if libc.unshare(0x10000000) == 0:\n    found.append('unshare')\n"
            "return ' '.join(found)",
        ),
        _escape(
            "exec_a_program",
            "import os\ntry:\n    os.execv('/bin/true', ['true'])\nexcept OSError:\n    return ''\n"
            "return 'exec'",
        ),
        _escape(
            "network_sockets",
            "import socket\nfound = []\n"
            "for family, kind in ((socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET, socket.SOCK_DGRAM),"
            " (socket.AF_INET6, socket.SOCK_STREAM), (socket.AF_UNIX, socket.SOCK_STREAM)):\n"
            "    try:\n        socket.socket(family, kind).close()\n        found.append(f'{family.name}/{kind.name}')\n"
            "    except OSError:\n        pass\nreturn ' '.join(found)",
        ),
        _escape(
            "inherited_descriptors",
            "import os\nfound = []\nfor name in os.listdir('/proc/self/fd'):\n"
            "    try:\n        target = os.readlink(f'/proc/self/fd/{name}')\n    except OSError:\n        continue\n"
            "    if target.startswith(('socket:', '/work', '/root', '/home')) or "
            f"target.startswith({targets.repo!r}):\n"
            "        found.append(f'{name}->{target}')\nreturn ' '.join(found)",
        ),
        _escape(
            "raise_own_limits",
            "import resource\nfound = []\n"
            "for limit in (resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_NOFILE):\n"
            "    try:\n        resource.setrlimit(limit, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"
            "        found.append(str(limit))\n    except (ValueError, OSError):\n        pass\n"
            "return ' '.join(found)",
        ),
        _escape(
            "shared_memory_outside_limits",
            "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nfound = []\n"
            "try:\n    os.memfd_create('x')\n    found.append('memfd_create')\nexcept OSError:\n    pass\n"
            "if libc.syscall(319, b'x', 0) >= 0:\n    found.append('memfd syscall')\n"
            "if libc.shmget(0, 1 << 20, 0o1000 | 0o600) >= 0:\n    found.append('shmget')\n"
            "return ' '.join(found)",
            kind="limit",
        ),
        _escape(
            "resource_tracker_deletes_grader_files",
            "import os\nfrom multiprocessing import resource_tracker, shared_memory\nfound = []\n"
            "try:\n    resource_tracker.ensure_running()\n    found.append('tracker started')\n"
            "except Exception:\n    pass\n"
            f"try:\n    shared_memory.SharedMemory(name={CANARY_NAME!r}).unlink()\n    found.append('canary unlinked')\n"
            "except Exception:\n    pass\n"
            f"try:\n    os.unlink('/dev/shm/{CANARY_NAME}')\n    found.append('canary removed')\n"
            "except OSError:\n    pass\nreturn ' '.join(found)",
        ),
        _escape(
            "leaves_files_and_a_thread_behind",
            "import os, threading, time\n"
            "def linger():\n    while True:\n"
            "        for folder in ('/tmp', '/dev/shm'):\n"
            "            try:\n                open(os.path.join(folder, 'attnkit-leftover'), 'w').write('x')\n"
            "            except OSError:\n                pass\n"
            "        time.sleep(0.05)\n"
            "threading.Thread(target=linger, daemon=False).start()\nreturn ''",
        ),
        _escape(
            "finds_what_earlier_submissions_left",
            "import os\nfound = []\nfor folder in ('/tmp', '/dev/shm'):\n"
            "    for name in os.listdir(folder):\n"
            "        if name.startswith(('attnkit-leftover', 'fill-', 'huge')):\n"
            "            found.append(os.path.join(folder, name))\n"
            "others = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid())]\n"
            "found += [f'process {p}' for p in others]\nreturn ' '.join(found)",
        ),
        Case(
            "cell_partial_header_then_sleep",
            "reply",
            14,
            V2_CELL,
            "passed",
            "",
            {},
            STEAL_CHANNEL + "for pipe in writable_pipes():\n    _os.write(pipe, b'\\x00\\x00')\n"
            "import time\ntime.sleep(3600)\n",
            "was skipped",
        ),
        # -- limits ---------------------------------------------------------------------------
        _escape(
            "memory_across_threads",
            "import threading\nheld = []\n"
            "def grab():\n    try:\n        held.append(bytearray(300 * 1024 * 1024))\n"
            "    except MemoryError:\n        pass\n"
            "threads = [threading.Thread(target=grab) for _ in range(6)]\n"
            "for t in threads:\n    t.start()\nfor t in threads:\n    t.join()\n"
            "got = len(held)\nheld.clear()\n"
            "return f'{got * 300} MiB held by threads' if got * 300 > 1100 else ''",
            kind="limit",
        ),
        _escape(
            "tmp_disk_filling",
            "import os\ntotal = 0\nchunk = b'x' * (32 * 1024 * 1024)\n"
            "for folder in ('/tmp', '/dev/shm'):\n    for n in range(40):\n"
            "        path = os.path.join(folder, f'fill-{n}')\n"
            "        try:\n            with open(path, 'wb') as f:\n                f.write(chunk)\n"
            "            total += len(chunk)\n        except OSError:\n            break\n"
            "    for n in range(40):\n        try:\n            os.unlink(os.path.join(folder, f'fill-{n}'))\n"
            "        except OSError:\n            pass\n"
            "return f'{total >> 20} MiB written' if total > 400 * 1024 * 1024 else ''",
            kind="limit",
        ),
        _escape(
            "one_huge_file",
            "written = 0\ntry:\n    with open('/tmp/huge', 'wb') as f:\n"
            "        for _ in range(5):\n            f.write(b'x' * (32 * 1024 * 1024))\n"
            "            written += 32\nexcept OSError:\n    pass\n"
            "import os\nos.unlink('/tmp/huge')\nreturn f'{written} MiB file' if written > 64 else ''",
            kind="limit",
        ),
        _escape(
            "thread_bomb",
            "import threading\nthreading.stack_size(64 * 1024)\nstop = threading.Event()\nstarted = 0\n"
            "try:\n    for _ in range(3000):\n"
            "        threading.Thread(target=stop.wait, daemon=True).start()\n        started += 1\n"
            "except (RuntimeError, MemoryError):\n    pass\nfinally:\n    stop.set()\n"
            "threading.stack_size(0)\nreturn f'{started} threads' if started >= 3000 else ''",
            kind="limit",
        ),
        _v2(
            "cpu_spin_in_c",
            "limit",
            12,
            "timeout",
            "no answer after",
            "a = torch.randn(1200, 1200)\nwhile True:\n    a = (a @ a).clamp(-1, 1)",
        ),
        _v2(
            "c_stack_overflow",
            "limit",
            12,
            "error",
            "",
            "import sys\nsys.setrecursionlimit(10 ** 8)\n"
            "def down(n):\n    return down(n + 1) + 1\nreturn down(0)",
        ),
        Case(
            "cell_loops_ignoring_signals",
            "limit",
            14,
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

SABOTAGE = """
def sabotage():
    import builtins, numpy, torch
    numpy.allclose = lambda *a, **k: True
    numpy.array_equal = lambda *a, **k: True
    numpy.testing.assert_allclose = lambda *a, **k: None
    torch.allclose = lambda *a, **k: True
    torch.testing.assert_close = lambda *a, **k: None
    builtins.abs = lambda value: 0
"""


def classic_cases() -> list[Case]:
    return [
        Case("correct", "file", 14, V2_CELL, "passed"),
        Case("zz_correct_classmate", "file", 14, V2_CELL, "passed"),
        Case("untouched_stubs", "file", 0, V2_CELL, "failed", "not implemented"),
        _v2(
            "patches_numpy_torch_builtins",
            "evasion",
            12,
            "failed",
            "wrong values",
            "sabotage()\n" + ZEROS_V2,
            SABOTAGE,
        ),
        _v2("infinite_loop", "limit", 12, "timeout", "no answer after", "while True:\n    pass"),
        _v2(
            "infinite_loop_ignoring_signals",
            "limit",
            12,
            "timeout",
            "no answer after",
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass",
        ),
        _v2(
            "unbounded_allocation",
            "limit",
            12,
            "error",
            "memory",
            "blocks = []\nwhile True:\n    blocks.append(bytearray(256 * 1024 * 1024))",
        ),
        _v2("os_exit", "limit", 12, "error", "exited", "import os\nos._exit(3)"),
        _v2("segfault", "limit", 12, "error", "", "import ctypes\nreturn ctypes.string_at(0)"),
        _v2(
            "fork_bomb",
            "limit",
            12,
            "timeout",
            "no answer after",
            "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        ),
        _v2(
            "reads_the_references",
            "escape",
            12,
            "error",
            "ModuleNotFoundError",
            "from attnkit_solutions.self_attention import SelfAttention_v2 as Reference\n"
            "return Reference.forward(self, x)",
        ),
        _v2(
            "returns_numpy",
            "file",
            12,
            "failed",
            "NumPy array",
            CORRECT_V2[: CORRECT_V2.rindex("\n")] + "\nreturn (weights @ values).detach().numpy()",
        ),
        _v2(
            "nan_output",
            "file",
            12,
            "failed",
            "NaN",
            "return torch.full((*x.shape[:-1], self.W_query.out_features), float('nan'))",
        ),
        _v2(
            "prints_megabytes",
            "limit",
            14,
            "passed",
            "",
            'print("x" * 5_000_000)\n' + CORRECT_V2,
            'print("y" * 20_000_000)\n',
        ),
    ]


def _is_test_cell(cell: dict[str, Any]) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("grade"))


def _drop_cells(notebook: dict[str, Any], keep: Any) -> dict[str, Any]:
    changed = copy.deepcopy(notebook)
    changed["cells"] = [c for c in changed["cells"] if keep(c)]
    return changed


def _to_nbformat3(notebook: dict[str, Any]) -> dict[str, Any]:
    cells = [
        {"cell_type": "code", "input": c["source"], "language": "python", "outputs": []}
        for c in notebook["cells"]
        if c["cell_type"] == "code"
    ]
    return {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": cells}]}


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
    missing = _drop_cells(
        correct,
        lambda c: c.get("metadata", {}).get("nbgrader", {}).get("grade_id") != "SelfAttention_v2",
    )
    not_utf8 = b"\xff\xfe\x00\x01" + json.dumps(correct).encode("utf-16")
    return {
        "deleted_test_cells": (Case("deleted_test_cells", "file", 12, V2_CELL, "failed", "wrong values"), _drop_cells(wrong_v2, lambda c: not _is_test_cell(c))),
        "edited_test_cells": (Case("edited_test_cells", "file", 12, V2_CELL, "failed", "wrong values"), edited),
        "missing_class": (Case("missing_class", "file", 10, V2_CELL, "error", "not defined"), missing),
        "wrong_signature": (Case("wrong_signature", "file", 12, TRANSFER_CELL, "error", "TypeError"), wrong_signature),
        "nbformat3": (Case("nbformat3", "file", 14, V2_CELL, "passed"), _to_nbformat3(correct)),
        "malformed_json": (Case("malformed_json", "file", 0, V2_CELL, "error", "not valid notebook JSON"), b'{"cells": [{"cell_type": "code", "source": ["def f('),
        "not_utf8": (Case("not_utf8", "file", 0, V2_CELL, "error", "not UTF-8"), not_utf8),
        "empty": (Case("empty", "file", 0, V2_CELL, "error", "is empty"), b""),
    }  # fmt: skip


UNGRADABLE = ("malformed_json", "not_utf8", "empty")


def build_corpus(
    out_dir: Path, assignments_dir: Path, targets: Targets
) -> dict[str, tuple[Case, Path]]:
    """Write every case as ``<case>_02_self_attention.ipynb`` under ``out_dir``.

    Returns, per case name, the case and its file. Names are unique: a duplicate is a
    bug in the corpus and raises ValueError.
    """
    released = released_notebook(SLUG, assignments_dir)
    written: dict[str, tuple[Case, Path]] = {}

    def put(case: Case, content: dict[str, Any] | bytes) -> None:
        if case.name in written:
            raise ValueError(f"two hostile cases are called {case.name}")
        path = out_dir / f"{case.name}_{SLUG}.ipynb"
        if isinstance(content, bytes):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        else:
            write_notebook(content, path)
        written[case.name] = (case, path)

    for case in classic_cases() + cases(targets):
        if case.name == "untouched_stubs":
            notebook = released
        else:
            notebook = fill_notebook(released, SLUG, case.bodies)
        if case.extra is not None:
            notebook = add_cell(notebook, case.extra)
        put(case, notebook)
    for case, content in file_cases(released).values():
        put(case, content)
    return written
