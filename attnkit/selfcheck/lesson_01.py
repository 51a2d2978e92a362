"""Visible checks for lesson 1, attention from scratch in NumPy.

The expected values come from the definitions, computed in float64 by NumPy alone: a
student's check of lesson 1 never waits for PyTorch to load.
"""

from __future__ import annotations

import numpy as np

from ..compare import expect_array, expect_unchanged, pair
from ..probe import Probe
from .dtypes import expect_dtype
from .registry import visible

SLUG = "01_numpy_attention"


def expected_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """exp(x) / sum(exp(x)) along ``axis``, in float64, returned in the dtype of ``x``."""
    wide = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # an all -inf row gives NaN, which a check replaces
        shifted = np.exp(wide - wide.max(axis=axis, keepdims=True))
        return (shifted / shifted.sum(axis=axis, keepdims=True)).astype(np.asarray(x).dtype)


def expected_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(context, weights) of softmax(q k^T / sqrt(d_k)) v, from the definition."""
    scores = q @ np.swapaxes(k, -2, -1) / np.sqrt(q.shape[-1])
    if causal:
        scores = np.where(np.triu(np.ones(scores.shape[-2:], dtype=bool), 1), -np.inf, scores)
    weights = expected_softmax(scores, -1)
    return weights @ v, weights


@visible(SLUG, "softmax", "rows sum to 1 and match exp(x)/sum(exp(x))")
def softmax_values(probe: Probe) -> None:
    RNG = np.random.default_rng(6466)  # fixed inputs: fingerprints depend on them
    x = RNG.normal(size=(3, 5))
    expect_array(probe.call(x)["out"], expected_softmax(x, -1), kind="ndarray")


@visible(SLUG, "softmax", "respects the axis argument")
def softmax_axis(probe: Probe) -> None:
    RNG = np.random.default_rng(5698)  # fixed inputs: fingerprints depend on them
    x = RNG.normal(size=(4, 3))
    expect_array(
        probe.call(x, axis=0)["out"],
        expected_softmax(x, 0),
        kind="ndarray",
        what="softmax(x, axis=0)",
    )


@visible(SLUG, "softmax", "stays finite for logits around +-1000")
def softmax_stable(probe: Probe) -> None:
    x = np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -1002.0]])
    expect_array(probe.call(x)["out"], expected_softmax(x, -1), kind="ndarray")


@visible(SLUG, "softmax", "leaves its input unchanged")
def softmax_no_mutation(probe: Probe) -> None:
    RNG = np.random.default_rng(4929)  # fixed inputs: fingerprints depend on them
    x = RNG.normal(size=(2, 4))
    expect_unchanged(x, probe.call(x)["inputs_after"][0], "the input x")


@visible(SLUG, "scale_scores", "divides by sqrt(d_k)")
def scale_values(probe: Probe) -> None:
    scores = np.full((2, 3), 8.0)
    expect_array(probe.call(scores, 64)["out"], np.ones((2, 3)), kind="ndarray")
    expect_array(
        probe.call(scores, 4)["out"],
        np.full((2, 3), 4.0),
        kind="ndarray",
        what="scale_scores(scores, 4)",
    )


@visible(SLUG, "attention_scores", "one sequence: scores[i, j] = q_i . k_j")
def scores_single(probe: Probe) -> None:
    RNG = np.random.default_rng(9587)  # fixed inputs: fingerprints depend on them
    Q, K = RNG.normal(size=(3, 4)), RNG.normal(size=(5, 4))
    expect_array(probe.call(Q, K)["out"], np.einsum("qd,kd->qk", Q, K), kind="ndarray")


@visible(SLUG, "attention_scores", "batched: [B, T_q, d] and [B, T_k, d] give [B, T_q, T_k]")
def scores_batched(probe: Probe) -> None:
    RNG = np.random.default_rng(9334)  # fixed inputs: fingerprints depend on them
    Q, K = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 5, 4))
    expect_array(probe.call(Q, K)["out"], np.einsum("bqd,bkd->bqk", Q, K), kind="ndarray")


@visible(
    SLUG,
    "causal_mask",
    "bool [T, T]: True above the diagonal, False on and below",
    contract=("a bool array of shape [num_tokens, num_tokens]",),
)
def mask_pattern(probe: Probe) -> None:
    out = probe.call(4)["out"]
    expected = np.array([[j > i for j in range(4)] for i in range(4)])
    expect_array(out, expected, kind="ndarray", what="causal_mask(4)")


@visible(SLUG, "self_attention", "matches softmax(Q K^T / sqrt(d_k)) V")
def attention_matches_definition(probe: Probe) -> None:
    RNG = np.random.default_rng(5351)  # fixed inputs: fingerprints depend on them
    X = RNG.normal(size=(5, 3))
    W_q, W_k, W_v = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4)), RNG.normal(size=(3, 2))
    context, weights = pair(probe.call(X, W_q, W_k, W_v)["out"], "self_attention")
    expected_context, expected_weights = expected_attention(X @ W_q, X @ W_k, X @ W_v)
    expect_array(context, expected_context, kind="ndarray", what="the context vectors")
    expect_array(weights, expected_weights, kind="ndarray", what="the attention weights")


@visible(SLUG, "self_attention", "causal=True hides the future")
def attention_causal(probe: Probe) -> None:
    RNG = np.random.default_rng(6242)  # fixed inputs: fingerprints depend on them
    X = RNG.normal(size=(2, 4, 3))  # a batch of two sequences
    W = [RNG.normal(size=(3, 3)) for _ in range(3)]
    context, _ = pair(probe.call(X, *W, causal=True)["out"], "self_attention")
    expected, _ = expected_attention(*(X @ w for w in W), causal=True)
    expect_array(context, expected, kind="ndarray", what="the causal context vectors")


@visible(SLUG, "embed_one_hot", "one_hot(ids) @ E equals the row lookup E[ids]")
def one_hot_lookup(probe: Probe) -> None:
    RNG = np.random.default_rng(4255)  # fixed inputs: fingerprints depend on them
    E = RNG.normal(size=(7, 3))
    ids = np.array([[4, 0, 6], [1, 1, 2]])
    expect_array(probe.call(ids, E)["out"], E[ids], kind="ndarray")


@visible(SLUG, "softmax", "a row that is all -inf (fully masked) becomes all zeros, not NaN")
def softmax_fully_masked(probe: Probe) -> None:
    x = np.array([[0.5, -1.0, 2.0], [-np.inf, -np.inf, -np.inf], [1.0, -np.inf, 0.0]])
    expected = expected_softmax(x, -1)
    expected[1] = 0.0  # the kit's policy: a query that may see nothing gets zero weight
    expect_array(probe.call(x)["out"], expected, kind="ndarray", what="softmax of masked rows")


# -- dtypes: float32 stays float32 (the checks above use float64 inputs) ----------------------


@visible(
    SLUG,
    "softmax",
    "float32 in, float32 out",
    contract=("a NumPy array of the same shape and dtype as x (float32 stays float32)",),
)
def softmax_float32(probe: Probe) -> None:
    x = np.random.default_rng(3301).normal(size=(3, 4)).astype(np.float32)
    out = probe.call(x)["out"]
    expect_dtype(out, np.float32, kind="ndarray", what="softmax of a float32 array")
    expect_array(out, expected_softmax(x, -1), kind="ndarray", what="softmax of a float32 array")


@visible(
    SLUG,
    "scale_scores",
    "float32 in, float32 out",
    contract=("a new NumPy array of the same shape and dtype, scores / sqrt(d_k)",),
)
def scale_float32(probe: Probe) -> None:
    scores = np.full((2, 3), 8.0, dtype=np.float32)
    out = probe.call(scores, 16)["out"]
    expect_dtype(out, np.float32, kind="ndarray", what="scale_scores of float32 scores")
    expect_array(out, np.full((2, 3), 2.0, dtype=np.float32), kind="ndarray")


@visible(
    SLUG,
    "attention_scores",
    "float32 in, float32 out",
    contract=("a NumPy array [..., T_q, T_k] of the same dtype as Q and K",),
)
def scores_float32(probe: Probe) -> None:
    rng = np.random.default_rng(3302)
    Q, K = (rng.normal(size=shape).astype(np.float32) for shape in ((3, 4), (5, 4)))
    out = probe.call(Q, K)["out"]
    expect_dtype(out, np.float32, kind="ndarray", what="the scores of float32 Q and K")
    expect_array(out, np.einsum("qd,kd->qk", Q, K), kind="ndarray")


@visible(
    SLUG,
    "self_attention",
    "float32 in, float32 context and weights",
    contract=("(context [..., T, d_v], weights [..., T, T]), NumPy arrays of the dtype of X",),
)
def attention_float32(probe: Probe) -> None:
    rng = np.random.default_rng(3303)
    X = rng.normal(size=(4, 3)).astype(np.float32)
    W = [rng.normal(size=(3, 2)).astype(np.float32) for _ in range(3)]
    context, weights = pair(probe.call(X, *W)["out"], "self_attention")
    expect_dtype(context, np.float32, kind="ndarray", what="the context of a float32 X")
    expect_dtype(weights, np.float32, kind="ndarray", what="the weights of a float32 X")


@visible(
    SLUG,
    "embed_one_hot",
    "a float32 E gives float32 embeddings",
    contract=("a NumPy array [..., d] with the dtype of E (float32 stays float32)",),
)
def one_hot_float32(probe: Probe) -> None:
    E = np.random.default_rng(3304).normal(size=(6, 3)).astype(np.float32)
    ids = np.array([5, 0, 2, 2])
    out = probe.call(ids, E)["out"]
    expect_dtype(out, np.float32, kind="ndarray", what="the embeddings of a float32 E")
    expect_array(out, E[ids], kind="ndarray")
