"""Lesson 7's references, the graders' exact answers and the memory watch, on generated
shapes (hypothesis).

The references must agree with attention computed exactly (float64, the whole score matrix)
at float32 tolerances for every shape the contract allows: any T_q and T_k, blocks that do
not divide them, blocks larger than them, leading axes or none, causal (aligned bottom-right)
or not, queries that may see no key. The hidden suite's own exact answers are checked against
PyTorch's float64 autograd here too, so a grader bug cannot hide behind the references.
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnkit.tensor_memory import HeldTooMuch, MemoryWatch, out_of_memory
from attnkit_autograder.lessons import memory_bound
from attnkit_autograder.lessons.l07_flash_attention import MEMORY_BLOCKS, MEMORY_MB, MEMORY_SHAPE
from attnkit_autograder.lessons.l07_flash_attention import exact as hidden
from attnkit_solutions.flash_attention import (
    flash_attention,
    flash_attention_backward,
    online_softmax,
)

ROOT = Path(__file__).resolve().parents[1]
SLUG = "07_flash_attention"
GENERATED = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny tensors: one thread is faster than two, and fairer to a shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def naive(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool):
    """Attention with the whole score matrix, through PyTorch's own logsumexp."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        n_q, n_k = q.shape[-2], k.shape[-2]
        future = torch.arange(n_k)[None, :] > torch.arange(n_q)[:, None] + (n_k - n_q)
        scores = scores.masked_fill(future, -math.inf)
    lse = torch.logsumexp(scores, dim=-1)
    weights = torch.exp(scores - torch.where(torch.isinf(lse), math.inf, lse)[..., None])
    return weights @ v, lse


shapes = st.fixed_dictionaries(
    {
        "lead": st.lists(st.integers(1, 3), max_size=2).map(tuple),
        "n_q": st.integers(1, 70),
        "n_k": st.integers(1, 70),
        "d": st.integers(1, 16),
        "d_v": st.integers(1, 16),
        "block_q": st.integers(1, 80),
        "block_k": st.integers(1, 80),
        "causal": st.booleans(),
        "seed": st.integers(0, 2**31),
    }
)


def inputs(case: dict) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(case["seed"])
    lead, n_q, n_k = case["lead"], case["n_q"], case["n_k"]
    return [
        torch.randn(*lead, n_q, case["d"], generator=generator),
        torch.randn(*lead, n_k, case["d"], generator=generator),
        torch.randn(*lead, n_k, case["d_v"], generator=generator),
    ]


@GENERATED
@given(shapes)
def test_the_reference_is_exact_attention_at_float32_tolerances(case: dict) -> None:
    q, k, v = inputs(case)
    out, lse = flash_attention(q, k, v, case["block_q"], case["block_k"], case["causal"])
    want_out, want_lse = naive(q.double(), k.double(), v.double(), case["causal"])
    assert out.dtype == lse.dtype == torch.float32
    assert not out.isnan().any() and not lse.isnan().any()
    torch.testing.assert_close(out.double(), want_out, atol=1e-5, rtol=1e-5)
    assert torch.equal(torch.isinf(lse), torch.isinf(want_lse))  # -inf: sees no key
    torch.testing.assert_close(lse.double(), want_lse, atol=1e-5, rtol=1e-5)


@GENERATED
@given(shapes)
def test_the_graders_exact_answer_is_pytorchs(case: dict) -> None:
    q, k, v = inputs(case)
    want_out, want_lse = naive(q.double(), k.double(), v.double(), case["causal"])
    out, lse = hidden.exact_attention(q.numpy(), k.numpy(), v.numpy(), case["causal"], rows=7)
    np.testing.assert_allclose(out, want_out.numpy(), atol=1e-12)
    np.testing.assert_allclose(lse, want_lse.numpy(), atol=1e-12)


@GENERATED
@given(shapes)
def test_the_fused_answer_is_exact_attention_at_float32_tolerances(case: dict) -> None:
    """The memory test's fast answer (PyTorch's fused kernel, in the grader's process)."""
    q, k, v = (t.numpy() for t in inputs(case))
    v = np.resize(v, (*v.shape[:-1], q.shape[-1]))  # as wide as q: the kernel wants that
    causal = case["causal"] and case["n_q"] == case["n_k"]
    want_out, want_lse = hidden.exact_attention(q, k, v, causal)
    out, lse = hidden.fused_attention(q, k, v, causal)
    np.testing.assert_allclose(out, want_out, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(lse, want_lse, atol=1e-5, rtol=1e-5)


def test_the_fused_answer_is_the_references_at_the_memory_shape() -> None:
    generator = torch.Generator().manual_seed(7400)
    q, k, v = (torch.randn(*MEMORY_SHAPE, generator=generator) for _ in range(3))
    out, lse = flash_attention(q, k, v, *MEMORY_BLOCKS, True)
    fused_out, fused_lse = hidden.fused_attention(q.numpy(), k.numpy(), v.numpy(), True)
    np.testing.assert_allclose(fused_out, out.numpy(), atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(fused_lse, lse.numpy(), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="top-left"):
        hidden.fused_attention(q[..., :5, :].numpy(), k.numpy(), v.numpy(), True)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(shapes)
def test_the_backward_is_autograd_of_exact_attention(case: dict) -> None:
    q, k, v = inputs(case)
    grad = torch.randn(*case["lead"], case["n_q"], case["d_v"], generator=torch.Generator())
    leaves = [t.double().requires_grad_() for t in (q, k, v)]
    out64, lse64 = naive(*leaves, case["causal"])
    out64.backward(grad.double())
    got = flash_attention_backward(
        q, k, v, out64.detach().float(), lse64.detach().float(), grad,
        case["block_q"], case["block_k"], case["causal"],
    )  # fmt: skip
    graders = hidden.exact_gradients(q.numpy(), k.numpy(), v.numpy(), grad.numpy(), case["causal"])
    for mine, leaf, theirs in zip(got, leaves, graders, strict=True):
        assert mine.dtype == torch.float32 and mine.shape == leaf.shape
        torch.testing.assert_close(mine.double(), leaf.grad, atol=1e-5, rtol=1e-4)
        np.testing.assert_allclose(theirs, leaf.grad.numpy(), atol=1e-12)


@GENERATED
@given(
    st.lists(st.integers(1, 3), max_size=2).map(tuple),
    st.integers(1, 40),
    st.integers(1, 50),
    st.sampled_from([1.0, 30.0, 1e4]),
    st.integers(0, 2**31),
)
def test_online_softmax_is_exact_softmax(lead, n, block, scale, seed) -> None:
    generator = np.random.default_rng(seed)
    scores = (generator.normal(size=(*lead, n)) * scale).astype(np.float32)
    scores[generator.random(scores.shape) < 0.2] = -np.inf  # blocked scores, whole rows too
    got = online_softmax(torch.from_numpy(scores), block)
    assert got.dtype == torch.float32 and not got.isnan().any()
    np.testing.assert_allclose(got.numpy(), hidden.exact_softmax(scores), atol=1e-6, rtol=1e-5)


# -- the memory bound: stated, set for lesson 7 only, and what the watch does in-process ---------


def released_docstring(name: str) -> str:
    notebook = json.loads((ROOT / "assignments" / SLUG / f"{SLUG}.ipynb").read_text("utf-8"))
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            for node in ast.parse("".join(cell["source"])).body:
                if isinstance(node, ast.FunctionDef) and node.name == name:
                    return " ".join((ast.get_docstring(node) or "").split())
    raise AssertionError(f"no {name} in the released notebook")


def test_the_docstring_states_the_bound_the_grader_sets() -> None:
    docstring = released_docstring("flash_attention")
    tokens, head_dim = MEMORY_SHAPE[2], MEMORY_SHAPE[3]
    assert f"at most {MEMORY_MB} MiB" in docstring
    assert f"T_q = T_k = {tokens}" in docstring and f"d = {head_dim}" in docstring
    assert f"blocks of at most {max(MEMORY_BLOCKS)}" in docstring
    scores = MEMORY_SHAPE[0] * MEMORY_SHAPE[1] * tokens * tokens * 4
    assert f"would take {scores // 2**20} MiB" in docstring and scores > MEMORY_MB * 2**20


def test_only_lesson_7_sets_a_memory_bound() -> None:
    from attnkit.assignments import ASSIGNMENTS

    assert {slug: memory_bound(slug) for slug in ASSIGNMENTS if memory_bound(slug)} == {
        SLUG: MEMORY_MB * 2**20
    }


def test_a_lesson_bound_never_exceeds_the_option(monkeypatch: pytest.MonkeyPatch) -> None:
    from attnkit_autograder.grading import pipeline
    from attnkit_autograder.grading.options import GradeOptions
    from attnkit_autograder.grading.submission import Submission

    seen = []

    class Opened:
        def __init__(self, cells, limits, **kwargs) -> None:
            seen.append(limits.memory_bytes)
            self.clock = None

    monkeypatch.setattr(pipeline, "IsolatedSubmission", Opened)
    for memory_mb, slug, expected in [
        (2048, SLUG, MEMORY_MB),
        (256, "02_self_attention", 256),
        (2048, "02_self_attention", 2048),
        (40, SLUG, 40),  # an option below the lesson's bound wins
    ]:
        options = GradeOptions(memory_mb=memory_mb)
        submission = Submission("s", slug, Path("s.ipynb"))
        grading = pipeline.Grading(submission, pipeline.GradeSettings(options))
        pipeline.open_sandbox(grading)._open(None, None)
        assert seen[-1] == expected * 2**20, (memory_mb, slug)


def materialising(q, k, v, block_q, block_k, causal=False):
    return naive(q, k, v, causal)


def test_the_watch_stops_a_whole_score_matrix_and_lets_tiles_through() -> None:
    q, k, v = (torch.randn(1, 1, 1024, 4) for _ in range(3))
    made = r"aten\.\w+ made a \[(1, )*1024, 1024\] tensor of 4.0 MiB"
    with pytest.raises(HeldTooMuch, match=made), MemoryWatch(limit=2**20):
        materialising(q, k, v, 128, 128)
    with MemoryWatch(limit=2**20) as watch:
        flash_attention(q, k, v, 128, 128)
    assert 0 < watch.largest <= 128 * 128 * 4
    assert out_of_memory("HeldTooMuch", "") and out_of_memory("_ArrayMemoryError", "")
    assert out_of_memory("RuntimeError", "DefaultCPUAllocator: can't allocate memory: you tried")
    assert not out_of_memory("RuntimeError", "shape mismatch") and not out_of_memory(None, None)


def test_the_watch_sees_numpy_too() -> None:
    def with_numpy(q, k, v, block_q, block_k, causal=False):
        scores = q.numpy() @ np.swapaxes(k.numpy(), -1, -2)
        return torch.from_numpy(scores @ v.numpy()), None

    q, k, v = (torch.randn(1, 1, 512, 4) for _ in range(3))
    with pytest.raises(HeldTooMuch, match="NumPy arrays reached"), MemoryWatch(2**19, numpy=True):
        with_numpy(q, k, v, 64, 64)
