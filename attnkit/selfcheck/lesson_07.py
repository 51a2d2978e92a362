"""Visible checks for lesson 7, FlashAttention on a CPU.

Every answer is compared with attention computed exactly, in float64, from the same float32
inputs, at float32 tolerances, on shapes that break tiled code: tail tiles, T_q != T_k with
the causal mask aligned bottom-right, queries that may see no key. The memory check runs
``flash_attention`` under the memory watch (attnkit.tensor_memory): a call that makes a
tensor as big as the whole score matrix fails it, as it fails the grader's limit.
"""

from __future__ import annotations

import math

import numpy as np

from ..compare import CheckFailed, expect_array, expect_kind, expect_unchanged
from ..implementation import raised_message, raised_type
from ..probe import Probe
from ..tensor_memory import mib, out_of_memory
from .dtypes import expect_dtype
from .registry import visible

SLUG = "07_flash_attention"
T = {"kind": "tensor"}


def keys_seen(n_q: int, n_k: int, causal: bool) -> np.ndarray:
    """Bool [n_q, n_k]: True where query i may see key j (causal: aligned bottom-right)."""
    if not causal:
        return np.ones((n_q, n_k), dtype=bool)
    return np.arange(n_k)[None, :] <= np.arange(n_q)[:, None] + (n_k - n_q)


def exact_softmax(scores: np.ndarray) -> np.ndarray:
    x = scores.astype(np.float64)
    peak = x.max(axis=-1, keepdims=True)
    seen = np.isfinite(peak)
    weights = np.exp(x - np.where(seen, peak, 0.0))
    total = weights.sum(axis=-1, keepdims=True)
    return np.where(seen, weights / np.where(seen, total, 1.0), 0.0)


def exact_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(out, lse) in float64; a query that sees nothing gets zeros and -inf."""
    scores = q.astype(np.float64) @ np.swapaxes(k, -1, -2).astype(np.float64)
    scores = np.where(
        keys_seen(q.shape[-2], k.shape[-2], causal), scores / math.sqrt(q.shape[-1]), -np.inf
    )
    weights = exact_softmax(scores)
    peak = scores.max(axis=-1, keepdims=True)
    seen = np.isfinite(peak)
    total = np.exp(scores - np.where(seen, peak, 0.0)).sum(axis=-1, keepdims=True)
    lse = np.where(seen, peak + np.log(np.where(seen, total, 1.0)), -np.inf)[..., 0]
    return weights @ v.astype(np.float64), lse


def exact_gradients(q, k, v, grad_out, causal) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    """(dq, dk, dv) in float64: autograd of attention with the whole score matrix."""
    import torch

    leaves = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (q, k, v)]
    scores = leaves[0] @ leaves[1].transpose(-2, -1) / math.sqrt(q.shape[-1])
    seen = torch.from_numpy(keys_seen(q.shape[-2], k.shape[-2], causal))
    scores = scores.masked_fill(~seen, -math.inf)
    peak = scores.amax(dim=-1, keepdim=True).detach()
    weights = torch.exp(scores - torch.where(torch.isinf(peak), 0.0, peak))
    total = weights.sum(dim=-1, keepdim=True)
    out = torch.where(total > 0, weights / torch.where(total > 0, total, 1.0), 0.0) @ leaves[2]
    (out * torch.from_numpy(grad_out.astype(np.float64))).sum().backward()
    return [t.grad.numpy() for t in leaves]  # type: ignore[union-attr]


def draw(*shape: int, seed: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).normal(size=shape) * scale).astype(np.float32)


def returned(value: dict, names: tuple[str, ...], exercise: str) -> list[dict]:
    """The items of a returned tuple, one per name."""
    if value["kind"] != "sequence" or len(value["items"]) != len(names):
        raise CheckFailed(
            f"{exercise} should return a tuple ({', '.join(names)})",
            f"End with `return {', '.join(names)}`.",
            stage="kind",
        )
    return value["items"]


GIVEN = ("q", "k", "v", "out", "lse", "grad_out")
"""The names of the arrays the lesson's functions are given, in the order they take them."""


def expect_given_unchanged(result: dict, given: tuple[np.ndarray, ...]) -> None:
    """Each array given to the call (q, k, v, then the backward's out, lse and grad_out) is
    as it was: the contracts say "(not modified)"."""
    for before, after, name in zip(given, result["inputs_after"], GIVEN, strict=False):
        expect_unchanged(before, after, name)


def expect_exact(value: dict, expected: np.ndarray, what: str, atol: float = 1e-5) -> None:
    expect_array(value, expected.astype(np.float32), what=what, atol=atol, rtol=1e-5, **T)


# -- online_softmax ------------------------------------------------------------------------------


@visible(
    SLUG,
    "online_softmax",
    "matches softmax; rows longer than a block, the last block shorter",
    contract=("a tensor of the shape and dtype of scores (float32 stays float32)",),
)
def online_softmax_values(probe: Probe) -> None:
    scores = draw(3, 10, seed=7001, scale=3.0)
    result = probe.call(scores, 4)
    got = result["out"]
    expect_dtype(got, np.float32, kind="tensor", what="online_softmax(scores, 4)")
    expect_exact(got, exact_softmax(scores), "online_softmax(scores, 4)", atol=1e-6)
    expect_unchanged(scores, result["inputs_after"][0], "the scores")


@visible(SLUG, "online_softmax", "rescales the running sum when a later block has a bigger score")
def online_softmax_rescales(probe: Probe) -> None:
    scores = np.array([[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [5.0, -1.0, 0.5, 7.0, 2.0, 9.0, 1.0]])
    scores = scores.astype(np.float32)
    got = probe.call(scores, 2)["out"]
    expect_exact(got, exact_softmax(scores), "online_softmax(scores, 2)", atol=1e-6)


@visible(SLUG, "online_softmax", "stable for logits of 1e4; a row of only -inf gives zeros")
def online_softmax_stable(probe: Probe) -> None:
    scores = np.array(
        [
            [1e4, -1e4, 1e4 - 2.0, 0.0, 1e4 - 1.0],
            [-np.inf] * 5,
            [-np.inf, -np.inf, 3.0, -np.inf, 1.0],
        ],
        dtype=np.float32,
    )
    got = probe.call(scores, 2)["out"]
    expect_exact(got, exact_softmax(scores), "online_softmax(scores, 2)", atol=1e-6)


# -- flash_attention -----------------------------------------------------------------------------


def flash_check(
    probe: Probe, case: tuple, what: str, atol: float = 1e-5, scale: float = 1.0
) -> None:
    lead, n_q, n_k, d, d_v, block_q, block_k, causal, seed = case
    q = draw(*lead, n_q, d, seed=seed, scale=scale)
    k, v = draw(*lead, n_k, d, seed=seed + 1), draw(*lead, n_k, d_v, seed=seed + 2)
    result = probe.call(q, k, v, block_q, block_k, causal)
    out, lse = returned(result["out"], ("out", "lse"), "flash_attention")
    want_out, want_lse = exact_attention(q, k, v, causal)
    expect_dtype(out, np.float32, kind="tensor", what=f"out {what}")
    expect_dtype(lse, np.float32, kind="tensor", what=f"lse {what}")
    expect_exact(out, want_out, f"out {what}", atol)
    expect_exact(lse, want_lse, f"lse {what}", atol)
    expect_given_unchanged(result, (q, k, v))


@visible(
    SLUG,
    "flash_attention",
    "out and lse match exact attention, blocks that do not divide T",
    contract=("returns: (out, lse), tensors of q's dtype (float32 stays float32)",),
)
def flash_values(probe: Probe) -> None:
    flash_check(probe, ((2, 2), 21, 21, 8, 6, 8, 5, False, 7010), "(T = 21, blocks of 8 and 5)")


@visible(SLUG, "flash_attention", "causal, with T = 65 in blocks of 16 and 24 (tail tiles)")
def flash_causal_tails(probe: Probe) -> None:
    flash_check(probe, ((1, 1), 65, 65, 4, 3, 16, 24, True, 7020), "(causal, T = 65)")


@visible(
    SLUG, "flash_attention", "causal with fewer queries than keys: the mask aligned bottom-right"
)
def flash_bottom_right(probe: Probe) -> None:
    flash_check(probe, ((2,), 6, 15, 4, 4, 4, 4, True, 7030), "(causal, T_q = 6, T_k = 15)")


@visible(SLUG, "flash_attention", "queries that may see no key get zeros and lse = -inf")
def flash_unseen_rows(probe: Probe) -> None:
    flash_check(probe, ((1,), 12, 5, 4, 3, 5, 2, True, 7040), "(causal, T_q = 12, T_k = 5)")


@visible(SLUG, "flash_attention", "stays finite for scores in the thousands")
def flash_large_scores(probe: Probe) -> None:
    flash_check(probe, ((2,), 9, 11, 4, 4, 4, 3, False, 7050), "(large scores)", 1e-2, 300.0)


MEMORY_SHAPE = (1, 1, 1024, 1)
MEMORY_LIMIT = 1024**2


@visible(SLUG, "flash_attention", "never holds the whole score matrix (T = 1024, 1 MiB)")
def flash_memory(probe: Probe) -> None:
    q, k, v = (draw(*MEMORY_SHAPE, seed=7060 + i) for i in range(3))
    try:
        got = probe.bounded(q, k, v, 128, 128, False, limit_bytes=MEMORY_LIMIT)
    except Exception as exc:
        said = raised_message(exc)
        if not out_of_memory(raised_type(exc), said):
            raise
        raise CheckFailed(
            f"flash_attention held more than {mib(MEMORY_LIMIT)} at T = 1024, where the whole "
            f"[1, 1, 1024, 1024] score matrix takes {mib(4 * 1024**2)}: {said}",
            "Compute one block_q x block_k tile of scores at a time, never q @ k^T whole.",
        ) from None
    out, _ = returned(got["out"], ("out", "lse"), "flash_attention")
    expect_kind(out, "tensor", "out")
    expect_exact(out, exact_attention(q, k, v, False)[0], "out (T = 1024)")


# -- flash_attention_backward -----------------------------------------------------------------


def backward_check(probe: Probe, case: tuple, what: str) -> None:
    lead, n_q, n_k, d, d_v, block_q, block_k, causal, seed = case
    q, k = draw(*lead, n_q, d, seed=seed), draw(*lead, n_k, d, seed=seed + 1)
    v, grad_out = draw(*lead, n_k, d_v, seed=seed + 2), draw(*lead, n_q, d_v, seed=seed + 3)
    out, lse = (a.astype(np.float32) for a in exact_attention(q, k, v, causal))
    result = probe.call(q, k, v, out, lse, grad_out, block_q, block_k, causal)
    got = result["out"]
    names = ("dq", "dk", "dv")
    for value, name, want in zip(
        returned(got, names, "flash_attention_backward"),
        names,
        exact_gradients(q, k, v, grad_out, causal),
        strict=True,
    ):
        expect_dtype(value, np.float32, kind="tensor", what=f"{name} {what}")
        expect_array(
            value, want.astype(np.float32), what=f"{name} {what}", atol=1e-5, rtol=1e-4, **T
        )
    expect_given_unchanged(result, (q, k, v, out, lse, grad_out))


@visible(
    SLUG,
    "flash_attention_backward",
    "dq, dk and dv match autograd of exact attention",
    contract=("tensors of the shapes and dtype of q, k and v (float32 stays float32)",),
)
def backward_values(probe: Probe) -> None:
    backward_check(probe, ((2,), 11, 11, 4, 3, 4, 5, False, 7070), "(T = 11, blocks of 4 and 5)")


@visible(
    SLUG, "flash_attention_backward", "causal, T_q > T_k: a query that sees no key adds nothing"
)
def backward_causal(probe: Probe) -> None:
    backward_check(probe, ((1, 2), 9, 6, 4, 4, 4, 4, True, 7080), "(causal, T_q = 9, T_k = 6)")


@visible(SLUG, "flash_attention_backward", "causal with fewer queries than keys")
def backward_bottom_right(probe: Probe) -> None:
    backward_check(probe, ((2,), 5, 12, 3, 3, 2, 5, True, 7090), "(causal, T_q = 5, T_k = 12)")
