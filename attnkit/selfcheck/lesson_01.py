"""Visible checks for lesson 1, attention from scratch in NumPy.

The values they expect are what PyTorch gives on the same inputs, kept as data by
``attnkit generate`` (see :mod:`.oracle`): checking lesson 1 never loads PyTorch.
"""

from __future__ import annotations

import numpy as np

from ..compare import expect_array, expect_unchanged, pair
from ..probe import Probe
from .dtypes import expect_dtype
from .oracle import expected
from .registry import visible

SLUG = "01_numpy_attention"


def torch_softmax(name: str, x: np.ndarray, axis: int) -> np.ndarray:
    """PyTorch's softmax of ``x`` along ``axis``, kept as ``name``."""

    def compute() -> np.ndarray:
        import torch

        return torch.softmax(torch.from_numpy(x), dim=axis).numpy()

    return expected(name, compute)


def torch_attention(name: str, *qkv: np.ndarray, causal: bool = False) -> np.ndarray:
    """PyTorch's scaled dot-product attention of ``q, k, v``, kept as ``name``."""

    def compute() -> np.ndarray:
        import torch
        import torch.nn.functional as F

        q, k, v = (torch.from_numpy(a) for a in qkv)
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal).numpy()

    return expected(name, compute)


@visible(SLUG, "softmax", "rows sum to 1 and match exp(x)/sum(exp(x))")
def softmax_values(probe: Probe) -> None:
    RNG = np.random.default_rng(6466)  # fixed inputs: fingerprints depend on them
    x = RNG.normal(size=(3, 5))
    expect_array(probe.call(x)["out"], torch_softmax("softmax_values", x, -1), kind="ndarray")


@visible(SLUG, "softmax", "respects the axis argument")
def softmax_axis(probe: Probe) -> None:
    RNG = np.random.default_rng(5698)  # fixed inputs: fingerprints depend on them
    x = RNG.normal(size=(4, 3))
    expect_array(
        probe.call(x, axis=0)["out"],
        torch_softmax("softmax_axis", x, 0),
        kind="ndarray",
        what="softmax(x, axis=0)",
    )


@visible(SLUG, "softmax", "stays finite for logits around +-1000")
def softmax_stable(probe: Probe) -> None:
    x = np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -1002.0]])
    expect_array(probe.call(x)["out"], torch_softmax("softmax_stable", x, -1), kind="ndarray")


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


@visible(SLUG, "self_attention", "matches PyTorch's scaled_dot_product_attention")
def attention_matches_torch(probe: Probe) -> None:
    RNG = np.random.default_rng(5351)  # fixed inputs: fingerprints depend on them
    X = RNG.normal(size=(5, 3))
    W_q, W_k, W_v = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4)), RNG.normal(size=(3, 2))
    context, weights = pair(probe.call(X, W_q, W_k, W_v)["out"], "self_attention")
    q, k, v = X @ W_q, X @ W_k, X @ W_v
    expect_array(
        context,
        torch_attention("attention_context", q, k, v),
        kind="ndarray",
        what="the context vectors",
    )
    # The weights are PyTorch's softmax of the scaled scores (d_k = 4).
    weights_wanted = torch_softmax("attention_weights", q @ k.T / 2.0, -1)
    expect_array(weights, weights_wanted, kind="ndarray", what="the attention weights")


@visible(SLUG, "self_attention", "causal=True hides the future")
def attention_causal(probe: Probe) -> None:
    RNG = np.random.default_rng(6242)  # fixed inputs: fingerprints depend on them
    X = RNG.normal(size=(2, 4, 3))  # a batch of two sequences
    W = [RNG.normal(size=(3, 3)) for _ in range(3)]
    context, _ = pair(probe.call(X, *W, causal=True)["out"], "self_attention")
    wanted = torch_attention("attention_causal", *(X @ w for w in W), causal=True)
    expect_array(context, wanted, kind="ndarray", what="the causal context vectors")


@visible(SLUG, "embed_one_hot", "one_hot(ids) @ E equals the row lookup E[ids]")
def one_hot_lookup(probe: Probe) -> None:
    RNG = np.random.default_rng(4255)  # fixed inputs: fingerprints depend on them
    E = RNG.normal(size=(7, 3))
    ids = np.array([[4, 0, 6], [1, 1, 2]])
    expect_array(probe.call(ids, E)["out"], E[ids], kind="ndarray")


@visible(SLUG, "softmax", "a row that is all -inf (fully masked) becomes all zeros, not NaN")
def softmax_fully_masked(probe: Probe) -> None:
    x = np.array([[0.5, -1.0, 2.0], [-np.inf, -np.inf, -np.inf], [1.0, -np.inf, 0.0]])
    wanted = torch_softmax("softmax_masked_rows", x, -1).copy()
    wanted[1] = 0.0  # the kit's policy: a query that may see nothing gets zero weight
    expect_array(probe.call(x)["out"], wanted, kind="ndarray", what="softmax of masked rows")


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
    wanted = torch_softmax("softmax_float32", x, -1)
    expect_array(out, wanted, kind="ndarray", what="softmax of a float32 array")


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
