"""The from-scratch rule by principle: any softmax or attention kernel, whatever its name or
variant (dense, log, masked, sparse), and a recorder that must prove it was watching.

Each exercise is graded in a worker whose forbidden kernels were withheld before any cell
ran (attnkit.student_process.withheld): code that hides a library softmax from the recorder
meets the missing kernel there. A canary call before and after each exercise must be seen by
the recorder; code that
switches it off (by popping PyTorch's mode stacks) makes the check "could not be verified",
which costs the exercise. The worker binds its recorder before any cell runs, so patching
the kit's classes or functions in their modules afterwards (through the lesson's own
import, or a module named at run time) changes nothing it uses. A softmax computed in
another thread is not seen by a recorder that watches one thread: a thread left running
while an exercise runs makes the check unverifiable too.
"""

from __future__ import annotations

from .classic import (
    KEEPS_ALL,
    LOSES_SOFTMAX,
    LOSES_SOFTMAX_USERS,
    LOSES_UNCHECKED,
    LOSES_V2,
    QKV,
    SOFTMAX_CELL,
    V2_CELL,
    Case,
    Targets,
    _softmax_evasion,
)

# A sparse softmax leaves out the zeros it is given, so the exercises built on it are wrong.
SPARSE_LOST = (*LOSES_SOFTMAX, "test_v1_forward", V2_CELL)

THREAD_SOFTMAX = """
import queue as _queue, threading as _threading
_jobs, _done = _queue.Queue(), _queue.Queue()

def _serve():
    while True:
        x, dim = _jobs.get()
        _done.put(torch.softmax(x, dim))

_threading.Thread(target=_serve, daemon=True).start()
"""

SPARSE_GETATTR = 'getattr(torch.sparse, "soft" + "max")(x.to_sparse(), dim).to_dense()'
SPARSE_ATEN = "torch.ops.aten._sparse_softmax.int(x.to_sparse(), dim).to_dense()"

# softmax(x) is the weights of one query over n keys whose scores are x, with identity
# values: the fused attention kernel computes it in one step, under a name without
# "softmax". All -inf rows are set to zero by hand, so every value is right.
ATTENTION_SOFTMAX = """\
n = x.shape[dim]
flat = x.movedim(dim, -1).reshape(-1, n)
rows, empty = flat.shape[0], torch.isneginf(flat).all(-1, keepdim=True)
q = torch.zeros(rows, 1, 1, n, dtype=x.dtype)
q[..., 0] = 1
k = torch.zeros(rows, 1, n, n, dtype=x.dtype)
k[:, 0, :, 0] = torch.where(empty, torch.zeros_like(flat), flat)
v = torch.eye(n, dtype=x.dtype).expand(rows, 1, n, n).contiguous()
attend = getattr(torch.nn.functional, "scaled_dot_" + "product_attention")
out = torch.where(empty, 0.0, attend(q, k, v, scale=1.0).reshape(flat.shape))
return out.reshape(x.movedim(dim, -1).shape).movedim(-1, dim)
"""

# The kit's caller replaced in its module, found through names built at run time: the
# worker bound its own before the cells ran, and the scan notes both tricks.
CALLER_SWAP = """
import importlib
_load = getattr(importlib, "import_" + "module")
_impl = _load("attn" + "kit.implementation")
_original = _impl.call_recorded
def _clean(*args, **kwargs):
    result = _original(*args, **kwargs)
    result["forbidden_used"] = []
    result.pop("forbidden_unverified", None)
    return result
_impl.call_recorded = _clean
"""

# A tensor subclass's own __torch_dispatch__ runs while PyTorch has taken every mode off
# its stack: a softmax computed there is seen at neither level. The recorder cannot see it,
# so it says so: any tensor type the notebook defines makes the check unverifiable. v1 and
# v2 call this softmax, so theirs cannot be verified either.
SUBCLASS_SOFTMAX = """\
import operator
box = {}
class _Peek(torch.Tensor):
    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        box["out"] = operator.methodcaller("soft" "max", dim)(plain)
        return args[0]
class _Soft(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp):
        torch.neg(probe)
        out = box["out"].nan_to_num(0.0)
        ctx.save_for_backward(out)
        return out
    @staticmethod
    def backward(ctx, grad):
        (s,) = ctx.saved_tensors
        return s * (grad - (grad * s).sum(dim, keepdim=True))
plain = x.detach()
probe = plain.as_subclass(_Peek)
return _Soft.apply(x)
"""

# The recorder's findings are an object in the submission's own process: code that walks the
# frames to it can empty it after the fact. That is beyond what the recorder can prove (see
# docs/security.md); the frame internals it names in strings are noted for the instructor.
WIPED_FINDINGS = """\
import operator, sys
try:
    raise LookupError
except LookupError:
    _tb = sys.exc_info()[2]
_get = operator.attrgetter
_f = _get("tb_frame")(_tb)
_rec = None
while _f is not None:
    _loc = _get("f_locals")(_f)
    if "recorder" in _loc and hasattr(_loc["recorder"], "used"):
        _rec = _loc["recorder"]
        break
    _f = _get("f_back")(_f)
_out = operator.methodcaller("soft" "max", dim)(x).nan_to_num(0.0)
if _rec is not None:
    _rec.used.clear()
return _out
"""

PACKAGE_SWITCH = """
import attnkit.notebook
attnkit.student_process.recorder.Recorder.__enter__ = lambda self: self
attnkit.student_process.recorder.Recorder.__exit__ = lambda self, *exc: None
"""


# Switches that take PyTorch's hooks off for the length of one call and put them back before
# it returns: the recorder's canaries before and after see nothing wrong, and its findings
# are empty. Each computes the right values with a library kernel.
MODES_OFF = """\
from torch._C import DisableTorchFunction
from torch.utils._python_dispatch import _disable_current_modes
with DisableTorchFunction(), _disable_current_modes():
"""
# name: (what the softmax runs, the cells lost, words of the softmax cell's message). A
# switch the function hook still sees is named by the recorder; below it, by the kernel.
# A redispatch or a custom op carries no gradient, so v1 and v2 (which train) fail too.
IN_CALL = {
    "sm_redispatch_below_the_modes": (
        "out = torch.ops.aten._softmax.default.redispatch("
        "torch._C.DispatchKeySet(torch._C.DispatchKey.CPU), x.contiguous(), dim, False)",
        SPARSE_LOST, "aten._softmax, PyTorch's kernel"),
    "sm_python_key_excluded": (
        "with torch._C._ExcludeDispatchKeyGuard("
        "torch._C.DispatchKeySet(torch._C.DispatchKey.Python)):\n"
        "    out = torch._C._VariableFunctions.softmax(x, dim)",
        LOSES_SOFTMAX, "torch.softmax"),
    "sm_custom_op_around_the_kernel": (
        "out = _library_softmax(x, dim)", SPARSE_LOST, "student.library_softmax"),
    "sm_kit_registrations_destroyed_first": (
        "import gc\n"
        "for _o in gc.get_objects():\n"
        "    if isinstance(_o, torch.library.Library):\n"
        "        _o._destroy()\n"
        "with torch._C.DisableTorchFunction(), "
        "torch.utils._python_dispatch._disable_current_modes():\n"
        "    out = torch.softmax(x, dim)",
        # The guard refuses the collector's lists where kernels are withheld: every
        # exercise that calls this softmax fails.
        LOSES_SOFTMAX_USERS, "gc.get_objects"),
}  # fmt: skip
CUSTOM_OP = """
import torch
@torch.library.custom_op("student::library_softmax", mutates_args=())
def _library_softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    with torch._C.DisableTorchFunction():
        return torch.softmax(x, dim)
"""


def in_call_cases() -> list[Case]:
    """A library softmax or attention behind a switch the recorder cannot see: each is graded
    where that kernel was withheld before any cell ran, and fails there."""
    found = [
        Case(name, "evasion", lost, SOFTMAX_CELL, "error" if "gc." in words else "forbidden",
             words,
             {"softmax": body + "\nreturn torch.nan_to_num(out, nan=0.0)"},
             CUSTOM_OP if "custom_op" in name else None)
        for name, (body, lost, words) in IN_CALL.items()
    ]  # fmt: skip
    # The normaliser from a kernel no honest answer reaches: right values, so full marks,
    # and a note naming the kernel for the instructor.
    found.append(
        Case("sm_normaliser_from_an_unknown_kernel", "evasion", KEEPS_ALL, SOFTMAX_CELL,
             "passed", "", {"softmax": "return torch.nan_to_num(torch.exp(x - torch."
             "logcumsumexp(x, dim).narrow(dim, x.shape[dim] - 1, 1)), nan=0.0)"},
             None, "aten.logcumsumexp")
    )  # fmt: skip
    found.append(
        Case("sdpa_with_the_modes_off", "evasion", LOSES_V2, V2_CELL, "forbidden",
             "PyTorch's kernel", {"SelfAttention_v2": QKV + MODES_OFF
             + "    return torch.nn.functional.scaled_dot_product_attention(q, k, v)"})
    )  # fmt: skip
    return found


def cases(targets: Targets) -> list[Case]:
    return [*in_call_cases(),
        _softmax_evasion(
            "sm_masked_softmax",
            "torch._masked_softmax(x, torch.zeros_like(x, dtype=torch.bool), dim, 0)",
        ),
        Case("sm_sparse_softmax_by_getattr", "evasion", SPARSE_LOST, SOFTMAX_CELL, "forbidden",
             "torch.sparse.softmax", {"softmax": "return " + SPARSE_GETATTR}),
        Case("sm_aten_sparse_softmax", "evasion", SPARSE_LOST, SOFTMAX_CELL, "forbidden",
             "aten._sparse_softmax", {"softmax": "return " + SPARSE_ATEN}),
        _softmax_evasion("sm_softmin_of_negated", "torch.nn.functional.softmin(-x, dim)"),
        _softmax_evasion("sm_after_swapping_the_kits_caller",
                         'getattr(torch, "soft" + "max")(x, dim)', CALLER_SWAP,
                         "names the kit's module 'attnkit.implementation'"),
        # The recorder's findings wiped after the fact: the softmax is graded where the
        # kernel does not exist, so it fails there, whatever the recorder says.
        Case("sm_findings_wiped_through_the_frames", "evasion", LOSES_SOFTMAX, SOFTMAX_CELL,
             "forbidden", "torch.Tensor.softmax", {"softmax": WIPED_FINDINGS},
             None, "names 'tb_frame' in a string"),
        # The subclass hides its softmax from the recorder (v1 and v2 are unchecked), and
        # meets the withheld kernel where the softmax is graded.
        Case("sm_inside_a_tensor_subclass", "evasion", LOSES_UNCHECKED, SOFTMAX_CELL,
             "forbidden", "aten._softmax, PyTorch's kernel", {"softmax": SUBCLASS_SOFTMAX}),
        # v1 and v2 call that softmax, and may run no attention kernel either.
        Case("sm_by_fused_attention", "evasion", LOSES_UNCHECKED, SOFTMAX_CELL, "forbidden",
             "attention", {"softmax": ATTENTION_SOFTMAX}),
        # The worker bound its own recorder before the cells ran: switching the class off
        # through the lesson's import changes nothing, and the library softmax is seen.
        Case("sm_recorder_off_through_the_lessons_import", "evasion", LOSES_SOFTMAX,
             SOFTMAX_CELL, "forbidden", "torch.softmax",
             {"softmax": "return torch.nan_to_num(torch.softmax(x, dim), nan=0.0)"},
             PACKAGE_SWITCH, "attnkit.student_process.recorder"),
        # The helper thread runs on (a thread costs no cell), but the softmax's own worker
        # withholds the kernel in every thread: the helper dies, the softmax waits out its
        # time. Its users, which may use a library softmax, get what a plain library call
        # gives them: the attack earns nothing.
        Case("sm_in_another_thread", "evasion", LOSES_SOFTMAX, SOFTMAX_CELL, "timeout",
             "time limit",
             {"softmax": "_jobs.put((x, dim))\nreturn torch.nan_to_num(_done.get(), nan=0.0)"},
             THREAD_SOFTMAX),
    ]  # fmt: skip
