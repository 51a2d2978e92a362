"""Hidden tests for lesson 7, FlashAttention on a CPU.

Every answer is compared with attention computed exactly: in float64, from the very float32
inputs the submission got, at float32 tolerances. The shapes are generated (a seeded draw of
lengths, blocks and leading axes, see :func:`generated_cases`) and chosen by hand for what
breaks tiled code: tail tiles (T = 65 in blocks that do not divide it), T_q != T_k with the
causal mask aligned bottom-right, queries that may see no key, blocks larger than T.

The memory test calls ``flash_attention`` where the whole score matrix cannot fit. Its
verdict comes from outside the submission's process: the sandbox's worker runs under a hard
address-space limit (``MEMORY_MB``, see this folder's ``__init__``) set by the zygote before
any notebook code ran, which no code in the worker can raise. The memory watch of the
``bounded_call`` adapter only adds which kernel made the big tensor, and stands in for the
limit where the kit grades in-process (nbgrader's kernel, mutation testing).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

from attnkit.compare import CheckFailed, expect_array, expect_unchanged
from attnkit.implementation import raised_message, raised_type
from attnkit.tensor_memory import mib, out_of_memory
from attnkit_autograder.grading.harness import grade
from attnkit_autograder.grading.suite_support import contract, randn, shared_rng
from attnkit_autograder.lessons.l07_flash_attention import (
    MEMORY_BLOCKS,
    MEMORY_MB,
    MEMORY_SHAPE,
)
from attnkit_autograder.lessons.l07_flash_attention.exact import (
    exact_attention,
    exact_gradients,
    exact_softmax,
    fused_attention,
)

T = {"kind": "tensor"}
ATOL, RTOL = 1e-5, 1e-5
"""float32 tolerances: what float32 arithmetic gets wrong in a sum of a few hundred terms."""
FLASH = "flash_attention"
BACKWARD = "flash_attention_backward"
SOFTMAX = "online_softmax"


# -- comparing ---------------------------------------------------------------------------------


def items(value: dict[str, Any], count: int, what: str, names: str) -> list[dict[str, Any]]:
    """The ``count`` items of a returned tuple."""
    if value["kind"] != "sequence" or len(value["items"]) != count:
        shown = f"{len(value['items'])} items" if value["kind"] == "sequence" else value["kind"]
        raise CheckFailed(
            f"{what} should return a tuple {names}, but returned {shown}",
            f"End with `return {names.strip('()')}`.",
            stage="kind",
        )
    return value["items"]


def same_as_exact(
    got: dict[str, Any],
    args: list[Any],
    expected: list[np.ndarray],
    names: list[str],
    exercise: str,
    atol: float = ATOL,
    rtol: float = RTOL,
) -> None:
    """Every stage of compare.py for each returned tensor, against the exact values cast to
    the inputs' dtype: kind, shape, dtype and NaN/inf first, then that the inputs are
    unchanged, then the values."""
    outputs = (
        [got["out"]]
        if len(names) == 1
        else items(got["out"], len(names), exercise, f"({', '.join(names)})")
    )
    dtype = next(a.dtype for a in args if isinstance(a, np.ndarray))
    for value, want, name in zip(outputs, expected, names, strict=True):
        expect_array(value, want.astype(dtype), what=name, values=False, **T)
    for index, (before, after) in enumerate(zip(args, got["inputs_after"], strict=False)):
        if isinstance(before, np.ndarray):
            expect_unchanged(before, after, f"argument {index + 1}")
    for value, want, name in zip(outputs, expected, names, strict=True):
        expect_array(value, want.astype(dtype), what=name, atol=atol, rtol=rtol, **T)


def qkv(lead: tuple[int, ...], n_q: int, n_k: int, d: int, d_v: int, seed: int, scale=1.0):
    return [
        randn(*lead, n_q, d, seed=seed, scale=scale),
        randn(*lead, n_k, d, seed=seed + 1),
        randn(*lead, n_k, d_v, seed=seed + 2),
    ]


def check_flash(submission: Any, case: tuple[Any, ...], atol: float = ATOL, scale=1.0) -> None:
    """One call of flash_attention against exact attention; ``causal`` None: left to its
    default (not causal)."""
    lead, n_q, n_k, d, d_v, block_q, block_k, causal, seed = case
    q, k, v = qkv(lead, n_q, n_k, d, d_v, seed, scale)
    args = [q, k, v, block_q, block_k] + ([] if causal is None else [causal])
    got = submission.probe(FLASH).call(*args)
    expected = list(exact_attention(q, k, v, bool(causal)))
    same_as_exact(got, [q, k, v], expected, ["out", "lse"], FLASH, atol)


@functools.cache
def generated_cases(count: int = 4) -> tuple[tuple[Any, ...], ...]:
    """``count`` shapes drawn from a fixed seed (the same for every student; the values are
    drawn per student): leading axes, T_q and T_k up to 70, blocks up to 40 that rarely
    divide them, widths, causal or not."""
    draw = shared_rng(7007)
    cases = []
    for index in range(count):
        lead = tuple(int(n) for n in draw.integers(1, 4, size=int(draw.integers(0, 3))))
        n_q, n_k = (int(n) for n in draw.integers(1, 71, size=2))
        block_q, block_k = (int(n) for n in draw.integers(1, 41, size=2))
        d, d_v = (int(n) for n in draw.integers(1, 17, size=2))
        cases.append((lead, n_q, n_k, d, d_v, block_q, block_k, bool(index % 2), 7100 + 10 * index))
    return tuple(cases)


# -- online_softmax ------------------------------------------------------------------------------


@grade("test_online_softmax")
@contract(
    "online_softmax",
    "a tensor of the shape and dtype of scores (float32 stays float32): softmax along the "
    "last axis",
    "n need not be a multiple of it",
    "(not modified)",
)
@pytest.mark.parametrize(
    ("shape", "block"), [((3, 17), 4), ((2, 3, 10), 3), ((6,), 100), ((2, 9), 1)]
)
def test_online_softmax_matches_exact_softmax(submission, shape, block) -> None:
    scores = randn(*shape, seed=7000 + block, scale=3.0)
    got = submission.probe(SOFTMAX).call(scores, block)
    same_as_exact(got, [scores], [exact_softmax(scores)], ["the softmax"], SOFTMAX, atol=1e-6)


@grade("test_online_softmax")
@contract(
    "online_softmax",
    "rescaled by exp(m_old - m_new) whenever the maximum grows",
    "Stable for logits of 1e4; a row of only -inf gives zeros, never NaN",
    "entries may be -inf (blocked)",
)
def test_online_softmax_is_stable_and_rescales(submission) -> None:
    scores = randn(5, 11, seed=7051, scale=2.0) * np.float32(1e4 / 8)
    scores[0] = np.arange(11, dtype=np.float32) * 1e3  # the maximum grows at every block
    scores[1, ::3] = -np.inf
    scores[2] = -np.inf
    scores[3, 7:] = -np.inf  # the last blocks see only blocked scores
    scores[4] = -1e4 + np.arange(11, dtype=np.float32)  # every exp(score - 0) underflows
    got = submission.probe(SOFTMAX).call(scores, 2)
    same_as_exact(got, [scores], [exact_softmax(scores)], ["the softmax"], SOFTMAX, atol=1e-6)


@grade("test_online_softmax")
@contract("online_softmax", "a tensor of the shape and dtype of scores")
def test_online_softmax_keeps_float64(submission) -> None:
    scores = randn(3, 13, seed=7052, dtype=np.float64, scale=40.0)
    got = submission.probe(SOFTMAX).call(scores, 5)
    same_as_exact(got, [scores], [exact_softmax(scores)], ["the softmax"], SOFTMAX, atol=1e-12)


# -- flash_attention ------------------------------------------------------------------------------

HAND_PICKED = [
    # lead, T_q, T_k, d, d_v, block_q, block_k, causal, seed
    ((2, 3), 65, 65, 16, 16, 16, 24, True, 7210),  # tail tiles on both axes
    ((2,), 37, 80, 8, 5, 8, 32, True, 7220),  # T_q < T_k: the queries are the last 37
    ((1, 2), 80, 37, 8, 8, 16, 10, True, 7230),  # T_q > T_k: 43 queries see no key
    ((), 50, 50, 4, 6, 64, 64, None, 7240),  # [T, d], blocks larger than T, causal left out
    ((1, 1), 5, 6, 3, 2, 1, 1, True, 7250),  # tiles of one score
]


@grade("test_flash_attention")
@contract(
    "flash_attention",
    "returns: (out, lse), tensors of q's dtype (float32 stays float32): out [..., T_q, d_v] = "
    "softmax(q k^T / sqrt(d)) v, and lse [..., T_q], the natural log of the sum of "
    "exp(score) over the keys a query may see",
    "T_q and T_k need not be multiples of them (the last tile of each axis is smaller)",
    "query i may see key j only when j <= i + (T_k - T_q) (the mask is aligned bottom-right)",
    "A query that may see no key gets an all-zero output row and lse = -inf, never NaN",
    "with the same leading axes (not modified)",
)
@pytest.mark.parametrize("case", HAND_PICKED, ids=lambda c: f"{c[1]}x{c[2]}-{c[5]}x{c[6]}-{c[7]}")
def test_flash_attention_matches_exact_attention(submission, case) -> None:
    check_flash(submission, case)


@grade("test_flash_attention")
@contract(
    "flash_attention",
    "T_q and T_k need not be multiples of them",
    "query i may see key j only when j <= i + (T_k - T_q)",
    "(not modified)",
)
@pytest.mark.parametrize("index", range(len(generated_cases())))
def test_flash_attention_on_generated_shapes(submission, index) -> None:
    check_flash(submission, generated_cases()[index])


@grade("test_flash_attention")
@contract("flash_attention", "never NaN", "softmax(q k^T / sqrt(d)) v")
def test_flash_attention_is_stable_for_large_scores(submission) -> None:
    # Scores in the thousands: exp() without the running maximum overflows. Rounding the
    # float32 scores then costs about 1e-4 of them, hence the wider tolerance.
    check_flash(submission, ((2,), 33, 40, 8, 8, 8, 16, True, 7300), atol=1e-2, scale=400.0)


@grade("test_flash_attention")
@contract("flash_attention", "never NaN", "softmax(q k^T / sqrt(d)) v")
def test_flash_attention_when_every_score_is_very_negative(submission) -> None:
    # Every score of a row near -1000: exp(score - 0) underflows to 0, so a running maximum
    # that starts at 0 (rather than -inf) loses the whole row.
    q = np.abs(randn(2, 9, 4, seed=7320)) * 30
    k = -np.abs(randn(2, 11, 4, seed=7321)) * 30
    v = randn(2, 11, 3, seed=7322)
    got = submission.probe(FLASH).call(q, k, v, 4, 5, False)
    expected = list(exact_attention(q, k, v, False))
    same_as_exact(got, [q, k, v], expected, ["out", "lse"], FLASH, atol=1e-2)


@grade("test_flash_attention")
@contract("flash_attention", "tensors of q's dtype")
def test_flash_attention_keeps_float64(submission) -> None:
    q, k, v = (a.astype(np.float64) for a in qkv((2,), 20, 30, 8, 8, 7310))
    got = submission.probe(FLASH).call(q, k, v, 8, 16, True)
    expected = list(exact_attention(q, k, v, True))
    same_as_exact(got, [q, k, v], expected, ["out", "lse"], FLASH, atol=1e-10, rtol=1e-10)


# -- the memory bound --------------------------------------------------------------------------

MEMORY_BYTES = MEMORY_MB * 1024**2


def memory_inputs() -> list[np.ndarray]:
    """The memory test's q, k and v (drawn per student, like every input)."""
    return [randn(*MEMORY_SHAPE, seed=7400 + index) for index in range(3)]


@grade("test_flash_memory")
@contract(
    "flash_attention",
    "Memory: graded at T_q = T_k = 4096 (one sequence, one head, d = 8, blocks of at most "
    "512), where the score matrix alone would take 64 MiB, in a process that may grow by at "
    "most 48 MiB over what PyTorch itself takes, your notebook's cells included",
)
def test_flash_attention_never_holds_the_score_matrix(submission, reference) -> None:
    q, k, v = memory_inputs()
    block_q, block_k = MEMORY_BLOCKS
    batch, heads, tokens, _ = MEMORY_SHAPE
    try:
        got = submission.probe(FLASH).bounded(
            q, k, v, block_q, block_k, True, limit_bytes=MEMORY_BYTES
        )
    except Exception as exc:
        said = raised_message(exc)
        if not out_of_memory(raised_type(exc), said):
            raise
        scores = mib(batch * heads * tokens * tokens * 4)
        raise CheckFailed(
            f"flash_attention ran out of memory at T = {tokens}: the {tokens} x {tokens} score "
            f"matrix alone takes {scores}, and the grader's process may grow by {MEMORY_MB} "
            f"MiB ({said})",
            "Never build the whole score matrix: compute one block_q x block_k tile of scores "
            "at a time, and keep only each query row's running maximum, sum and output.",
        ) from None
    # The values were checked against float64 above; here, against a tiled float32 answer
    # (a float64 answer at this size costs a grader a second per student): PyTorch's fused
    # kernel's, which agrees with the reference's to 1e-6 (tests/test_flash_attention.py).
    same_as_exact(got, [q, k, v], list(fused_attention(q, k, v, True)), ["out", "lse"], FLASH)


# -- flash_attention_backward -------------------------------------------------------------------

BACKWARD_CASES = [
    # lead, T_q, T_k, d, d_v, block_q, block_k, causal, seed
    ((2, 2), 33, 33, 8, 8, 16, 12, False, 7500),  # tail tiles on both axes
    ((), 20, 45, 6, 4, 32, 16, True, 7510),  # [T, d] inputs, T_q < T_k, block_q > T_q
    ((1, 2), 45, 20, 4, 4, 16, 7, True, 7520),  # T_q > T_k: 25 queries see no key
    ((2,), 12, 12, 4, 4, 4, 3, None, 7530),  # causal left out; key tiles that start where
    ((2,), 12, 12, 4, 4, 4, 3, True, 7540),  # a query tile's last row sees its last key
]


@grade("test_flash_attention_backward")
@contract(
    "flash_attention_backward",
    "returns: (dq, dk, dv), tensors of the shapes and dtype of q, k and v (float32 stays "
    "float32): the gradients of the loss with respect to q, k and v, as autograd of "
    "softmax(q k^T / sqrt(d)) v gives them",
    "A query that may see no key adds nothing to any gradient",
    "as for flash_attention (not modified)",
)
@pytest.mark.parametrize("case", BACKWARD_CASES, ids=lambda c: f"{c[1]}x{c[2]}-{c[7]}")
def test_backward_matches_autograd_of_exact_attention(submission, case) -> None:
    lead, n_q, n_k, d, d_v, block_q, block_k, causal, seed = case
    q, k, v = qkv(lead, n_q, n_k, d, d_v, seed)
    grad_out = randn(*lead, n_q, d_v, seed=seed + 3)
    out, lse = (a.astype(np.float32) for a in exact_attention(q, k, v, bool(causal)))
    args = [q, k, v, out, lse, grad_out, block_q, block_k] + ([] if causal is None else [causal])
    got = submission.probe(BACKWARD).call(*args)
    expected = list(exact_gradients(q, k, v, grad_out, bool(causal)))
    same_as_exact(got, args, expected, ["dq", "dk", "dv"], BACKWARD, atol=1e-5, rtol=1e-4)
