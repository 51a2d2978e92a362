"""Kernels withheld (attnkit.student_process.withheld): in a process that withheld a family,
every route to it raises, whatever switches the code turns off first, nothing brings the
kernel back, and the operations an honest exercise needs still run.

Each case runs in a fresh interpreter: withholding is irreversible by design.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap

import pytest

PRELUDE = """
import gc, sys, warnings
warnings.simplefilter("ignore")
import torch, torch.nn.functional as F
from attnkit.student_process.withheld import KernelWithheld, withhold
x = torch.randn(2, 3, 5, requires_grad=True)
q = torch.randn(2, 2, 5, 4, requires_grad=True)
withhold(PROFILE)
gc.collect()

def outcome(route):
    try:
        route()
    except KernelWithheld:
        return "withheld"
    except Exception as exc:
        return f"other {type(exc).__name__}: {exc}"[:200]
    return "ran"
"""

# Routes to a library softmax, each a lambda over x (and q for attention).
SOFTMAX_ROUTES = {
    "torch.softmax": "lambda: torch.softmax(x, -1)",
    "Tensor.softmax, float64": "lambda: x.double().softmax(-1)",
    "bfloat16": "lambda: torch.softmax(x.bfloat16(), -1)",
    "log_softmax": "lambda: torch.log_softmax(x, -1)",
    "special.softmax": "lambda: torch.special.softmax(x, -1)",
    "softmin": "lambda: F.softmin(x, -1)",
    "gumbel": "lambda: F.gumbel_softmax(x, 1.0)",
    "cross_entropy": "lambda: F.cross_entropy(x[0], torch.tensor([0, 1, 2]))",
    "Categorical": "lambda: torch.distributions.Categorical(logits=x).probs",
    "aten._softmax": "lambda: torch.ops.aten._softmax(x, -1, False)",
    "redispatch to CPU": "lambda: torch.ops.aten._softmax.default.redispatch("
    "torch._C.DispatchKeySet(torch._C.DispatchKey.CPU), x.detach(), -1, False)",
    "hooks off": "lambda: [torch._C.DisableTorchFunction().__enter__(), "
    "torch.utils._python_dispatch._disable_current_modes().__enter__(), F.softmax(x, -1)]",
    "masked": "lambda: torch._masked_softmax(x.detach(), torch.zeros(2, 3, 5, dtype=torch.bool), "
    "-1, 0)",
    "sparse": "lambda: torch.sparse.softmax(x.detach().to_sparse(), -1)",
    "mkldnn": "lambda: torch.ops.aten._softmax(x.detach()[None].to_mkldnn(), -1, False)",
    "vmap": "lambda: torch.vmap(lambda r: torch.softmax(r, -1))(x.detach())",
    "quantized": "lambda: torch.ops.quantized.softmax("
    "torch.quantize_per_tensor(torch.randn(3), 0.1, 0, torch.quint8), 0, 0.1, 0)",
    "autograd.Function": "lambda: torch.softmax(x, -1).sum().backward()",
    "PyTorch's decomposition": "lambda: torch._decomp.decomposition_table["
    "torch.ops.aten._softmax.default](x, -1, False)",
    "PyTorch's reference": "lambda: torch._refs.softmax(x, -1)",
    "Static Runtime": "lambda: torch._C._jit_to_static_module(torch._C.parse_ir("
    "'graph(%x : Tensor):\\n  return (%x)'))",
    "TensorExpr kernel": "lambda: sys.modules['torch._C._te'].TensorExprKernel(None)",
    "CPU fuser switched on": "lambda: torch._C._jit_override_can_fuse_on_cpu(True)",
}
ATTENTION_ROUTES = {
    "sdpa": "lambda: F.scaled_dot_product_attention(q, q, q)",
    "sdpa causal, backward": "lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True)"
    ".sum().backward()",
    "sdpa with a mask": "lambda: F.scaled_dot_product_attention(q, q, q, "
    "attn_mask=torch.zeros(5, 5))",
    "sdpa dropout": "lambda: F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)",
    "sdpa float64": "lambda: F.scaled_dot_product_attention(*(q.double(),) * 3)",
    "math kernel": "lambda: torch.ops.aten._scaled_dot_product_attention_math(q, q, q)",
    "MultiheadAttention": "lambda: torch.nn.MultiheadAttention(4, 2, batch_first=True)"
    "(q[0], q[0], q[0])",
    "MultiheadAttention, no weights": "lambda: torch.nn.MultiheadAttention(4, 2, "
    "batch_first=True)(q[0], q[0], q[0], need_weights=False)",
    "TransformerEncoderLayer": "lambda: torch.nn.TransformerEncoderLayer(4, 2, "
    "batch_first=True).eval()(q[0].detach())",
    "nested": "lambda: F.scaled_dot_product_attention("
    "*(torch.nested.nested_tensor([torch.randn(2, 3, 4)]),) * 3)",
    "quantizable MultiheadAttention": "lambda: __import__('torch.ao.nn.quantizable', "
    "fromlist=['x']).MultiheadAttention(4, 2)",
    "decomposition of the CPU kernel": "lambda: torch._decomp.decomposition_table["
    "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default](q, q, q)",
}
# Routes that fail on their way to a withheld function (flex attention compiles its graph
# first): they must not run.
MUST_NOT_RUN = {
    "flex attention, eager": "lambda: __import__('torch.nn.attention.flex_attention', "
    "fromlist=['x']).flex_attention(*(q.detach(),) * 3)",
}
# What an honest exercise does: these must run in every worker.
HONEST = {
    "exp and sum, backward": "lambda: (x.exp() / x.exp().sum(-1, keepdim=True)).sum().backward()",
    "max, where, masked_fill": "lambda: torch.where(x > 0, x, x.amax(-1, keepdim=True))"
    ".masked_fill(torch.ones(5, 5, dtype=torch.bool).triu()[:3], float('-inf'))",
    "matmul, einsum, bmm": "lambda: torch.einsum('bij,bkj->bik', x, x) @ x + torch.bmm(x, "
    "x.transpose(1, 2)).sum()",
    "logsumexp": "lambda: torch.logsumexp(x, -1)",
    "dropout": "lambda: F.dropout(x, 0.5)",
}


def run(profile: str, routes: dict[str, str], extra: str = "") -> dict[str, str]:
    body = (PRELUDE + textwrap.dedent(extra)).replace("PROFILE", repr(profile))
    body += "import json\nprint(json.dumps({"
    body += ", ".join(f"{name!r}: outcome({route})" for name, route in routes.items())
    body += "}))\n"
    # In a folder of its own, as a worker runs in its scratch folder.
    done = subprocess.run(
        [sys.executable, "-c", body],
        capture_output=True,
        text=True,
        check=False,
        cwd=tempfile.mkdtemp(),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    return json.loads(done.stdout.strip().splitlines()[-1])


def test_without_the_softmax_family_every_route_to_a_softmax_or_attention_raises() -> None:
    seen = run("softmax", {**SOFTMAX_ROUTES, **ATTENTION_ROUTES, **HONEST})
    assert {n: seen[n] for n in SOFTMAX_ROUTES if seen[n] != "withheld"} == {}
    assert {n: seen[n] for n in ATTENTION_ROUTES if seen[n] != "withheld"} == {}
    assert {n: seen[n] for n in HONEST if seen[n] != "ran"} == {}


def test_without_the_attention_family_a_softmax_still_runs_and_trains() -> None:
    seen = run("attention", {**SOFTMAX_ROUTES, **ATTENTION_ROUTES, **MUST_NOT_RUN, **HONEST})
    assert {n: seen[n] for n in ATTENTION_ROUTES if seen[n] != "withheld"} == {}
    assert {n for n in MUST_NOT_RUN if seen[n] == "ran"} == set()
    kept = ("torch.softmax", "log_softmax", "cross_entropy", "autograd.Function", "vmap")
    assert {n: seen[n] for n in (*kept, *HONEST) if seen[n] != "ran"} == {}


@pytest.mark.parametrize(
    "undo",
    [
        # Every torch.library.Library the collector can find, destroyed.
        "for o in gc.get_objects():\n"
        "    if isinstance(o, torch.library.Library):\n"
        "        o._destroy()\n",
        # A registration of the notebook's own over the withheld one, then dropped.
        "lib = torch.library.Library('aten', 'IMPL')\n"
        "lib.impl('_softmax', lambda *a: None, 'CPU')\n"
        "lib._destroy()\n"
        "del lib\n",
        # Frozen objects thawed and searched too.
        "gc.unfreeze()\n"
        "for o in gc.get_objects():\n"
        "    if type(o).__name__ == '_DispatchModule':\n"
        "        del o\n"
        "gc.collect()\n",
    ],
    ids=["libraries destroyed", "own registration dropped", "collector searched"],
)
def test_nothing_in_the_process_brings_a_withheld_kernel_back(undo: str) -> None:
    seen = run("softmax", {"torch.softmax": SOFTMAX_ROUTES["torch.softmax"]}, undo)
    assert seen == {"torch.softmax": "withheld"}


GUARDED = {
    "ctypes": "lambda: __import__('ctypes').CDLL(None).getpid()",
    "cffi": "lambda: __import__('_cffi_backend')",
    "the collector's lists": "lambda: gc.get_objects()",
    "own memory": "lambda: open('/proc/self/mem', 'rb')",
    "native code it wrote": "lambda: _load_own_library()",
}
GUARD_HONEST = {
    "a new file": "lambda: open(__import__('tempfile').mktemp(), 'w').write('x')",
    "a module imported first": "lambda: __import__('fractions')",
    "an error in library code": "lambda: __import__('traceback').format_exception("
    "*[(type(e), e, e.__traceback__) for e in [_library_error()]][0])",
    "a softmax by hand": HONEST["exp and sum, backward"],
    "a module scripted": "lambda: torch.jit.script(torch.nn.Sequential(torch.nn.Linear(2, 2), "
    "torch.nn.Dropout(0.1)))(torch.ones(1, 2))",
    "an optimiser's step": "lambda: __import__('torch.optim', fromlist=['x']).SGD("
    "[torch.nn.Parameter(torch.ones(2))], lr=0.1).step()",
    "assert_close": "lambda: torch.testing.assert_close(torch.ones(2), torch.ones(2))",
    "a file copied with its times": "lambda: __import__('shutil').copy2(__file__ if False else "
    "__import__('tempfile').mkstemp()[1], __import__('tempfile').mktemp())",
}
LIBRARY_ERROR = """
def _load_own_library():
    import importlib.machinery, importlib.util, shutil, tempfile
    original = importlib.util.find_spec("_bz2").origin
    copy = shutil.copy(original, tempfile.mkdtemp())
    loader = importlib.machinery.ExtensionFileLoader("_bz2", copy)
    return loader.create_module(importlib.util.spec_from_file_location("_bz2", copy))

def _library_error():
    try:
        torch.nn.Linear(2, 2).no_such_attribute
    except AttributeError as exc:
        return exc
from attnkit.student_process.withheld import guard
guard(PROFILE)
"""


def test_the_guard_refuses_foreign_calls_digging_and_new_library_code_but_not_honest_work() -> None:
    """Where kernels are withheld, an audit hook (which nothing in the process can remove)
    refuses the ways around them: native calls (ctypes, cffi), native code the notebook
    wrote, the collector's lists of objects, the process's own memory. A public PyTorch
    module of the family that ``import torch`` does not load (torch.onnx.ops) was loaded
    before the plan, so its attention is withheld too."""
    routes = {**GUARDED, **GUARD_HONEST, "torch.onnx's attention": "lambda: "
              "__import__('torch.onnx.ops', fromlist=['x']).attention(q, q, q)"}  # fmt: skip
    seen = run("attention", routes, LIBRARY_ERROR)
    refused = {n: seen[n] for n in GUARDED if not seen[n].startswith("other PermissionError")}
    assert refused == {}
    assert seen["torch.onnx's attention"] == "withheld"
    assert {n: seen[n] for n in GUARD_HONEST if seen[n] != "ran"} == {}


PINNED = """
import gc, json, sys, warnings
warnings.simplefilter("ignore")
import torch
from attnkit.student_process import withheld
plan = withheld.python_plan("softmax")
codes = [function.__code__ for function, _ in plan]
before = [sys.getrefcount(code) for code in codes]
withheld.pin_replaced("softmax")
pinned = [sys.getrefcount(code) for code in codes]
withheld.withhold("softmax")
swapped = sum(function.__code__ is not code for (function, _), code in zip(plan, codes))
after = [sys.getrefcount(code) for code in codes]
try:
    torch.softmax(torch.ones(3), 0)
    softmax = "ran"
except withheld.KernelWithheld:
    softmax = "withheld"
print(json.dumps({
    "planned": len(codes), "swapped": swapped, "softmax": softmax,
    "pinned once per function": [
        p - b - sum(c is code for c in codes) for p, b, code in zip(pinned, before, codes)
    ],
    "kept after the swap": [a - b for a, b in zip(after, before)],
    "tracked": sum(gc.is_tracked(code) for code in codes),
}))
"""


def test_the_zygote_pins_the_code_a_worker_swaps_out_and_withholding_still_holds() -> None:
    """pin_replaced (run once in the zygote) keeps each swapped-out code object alive with
    one count no object holds, so a worker's swap frees nothing; the swap itself, and the
    withheld kernels, are as without it."""
    done = subprocess.run(
        [sys.executable, "-c", PINNED], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["planned"] > 20 and seen["swapped"] == seen["planned"]
    assert seen["softmax"] == "withheld"
    assert set(seen["pinned once per function"]) == {0}
    # The function's reference went with the swap; the pin's stayed: nothing was freed.
    assert set(seen["kept after the swap"]) == {0}
    assert seen["tracked"] == 0  # out of the collector's reach
