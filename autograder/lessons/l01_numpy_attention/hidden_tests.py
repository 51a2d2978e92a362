"""Hidden tests for lesson 1, attention from scratch in NumPy.

Shapes are chosen so that every axis has a different length (batch != tokens !=
features != heads), which turns any wrong transpose or wrong axis into a shape error
or a visible difference.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnkit.compare import CheckFailed, expect_array, expect_shape, expect_unchanged, pair
from attnkit_autograder.grading.harness import grade
from attnkit_autograder.grading.suite_support import (
    contract,
    randn,
    rng,
    same_call,
    verdict_embeddings,
)

NP = {"kind": "ndarray"}


# --- softmax ---------------------------------------------------------------------------


@grade("test_softmax_values")
@contract(
    "softmax", "a NumPy array of the same shape and dtype as x", "sum to 1", "(it is not modified)"
)
@pytest.mark.parametrize(
    ("shape", "axis"), [((5,), -1), ((3, 7), -1), ((3, 7), 0), ((2, 3, 4), 1), ((4, 1, 5), -2)]
)
def test_softmax_matches_reference(submission, reference, shape, axis) -> None:
    x = randn(*shape, seed=sum(shape) + axis, dtype=np.float64, scale=3.0)
    same_call(submission, reference, "softmax", x, axis=axis, **NP)


@grade("test_softmax_values")
@contract("softmax", "sum to 1", "softmax(x + c) equals softmax(x)")
def test_softmax_rows_sum_to_one_and_shift_invariance(submission) -> None:
    x = randn(6, 9, seed=1, dtype=np.float64)
    probe = submission.probe("softmax")
    out = expect_shape(probe.call(x)["out"], (6, 9), **NP)
    expect_array({"kind": "ndarray", "array": out.sum(-1)}, np.ones(6), what="the row sums")
    shifted = probe.call(x + np.linspace(-50, 50, 6)[:, None])["out"]
    expect_array(shifted, out, **NP, what="softmax(x + c) (must equal softmax(x))")


@grade("test_softmax_values")
@contract("softmax", "sum to 1")
def test_softmax_default_axis_is_the_last(submission, reference) -> None:
    # No axis given, on three axes of different lengths: the default is axis=-1, and
    # only on a 3-d input does a default of 1 (or 0) differ from it.
    same_call(submission, reference, "softmax", randn(2, 3, 4, seed=26, dtype=np.float64), **NP)


@grade("test_softmax_values")
@contract("softmax", "same shape and dtype as x (float32 stays float32)")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_keeps_dtype(submission, reference, dtype) -> None:
    same_call(submission, reference, "softmax", randn(3, 4, seed=2, dtype=dtype), **NP)


@grade("test_softmax_stability")
@contract("softmax", "Finite even for values around +-1000")
def test_softmax_huge_logits(submission, reference) -> None:
    x = np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -999.0], [1000.0, -1000.0, 0.0]])
    same_call(submission, reference, "softmax", x, **NP)
    same_call(submission, reference, "softmax", x.T.copy(), axis=0, **NP)


@grade("test_softmax_stability")
@contract("softmax", "all -inf becomes all zeros")
def test_softmax_fully_masked_rows_are_zero(submission, reference) -> None:
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.5, -np.inf, 1.5], [2.0, 1.0, 0.0]])
    same_call(submission, reference, "softmax", x, **NP)


# --- scaling, scores, mask --------------------------------------------------------------


@grade("test_scale_scores")
@contract(
    "scale_scores",
    "a new NumPy array of the same shape and dtype, scores / sqrt(d_k)",
    "scores is not modified",
)
@pytest.mark.parametrize("d_k", [1, 3, 64, 100])
def test_scale_scores_matches_reference(submission, reference, d_k) -> None:
    # 5 columns whatever d_k is: the divisor must come from d_k, not from the shape.
    scores = randn(2, 4, 5, seed=d_k, dtype=np.float64, scale=5.0)
    same_call(submission, reference, "scale_scores", scores, d_k, **NP)


@grade("test_scale_scores")
@contract("scale_scores", "a new NumPy array of the same shape and dtype, scores / sqrt(d_k)")
def test_scale_scores_keeps_float32(submission, reference) -> None:
    scores = randn(3, 4, seed=21, scale=5.0)  # float32
    same_call(submission, reference, "scale_scores", scores, 16, **NP)


@grade("test_attention_scores")
@contract(
    "attention_scores",
    "a NumPy array [..., T_q, T_k] of the same dtype as Q and K",
    "Q and K are not modified",
    "the same leading (batch) axes",
)
@pytest.mark.parametrize(
    ("q_shape", "k_shape"),
    [((3, 4), (5, 4)), ((2, 3, 4), (2, 5, 4)), ((2, 3, 6, 4), (2, 3, 5, 4)), ((1, 1), (7, 1))],
)
def test_attention_scores_matches_reference(submission, reference, q_shape, k_shape) -> None:
    Q = randn(*q_shape, seed=len(q_shape), dtype=np.float64)
    K = randn(*k_shape, seed=len(k_shape) + 10, dtype=np.float64)
    same_call(submission, reference, "attention_scores", Q, K, **NP)


@grade("test_attention_scores")
@contract("attention_scores", "a NumPy array [..., T_q, T_k] of the same dtype as Q and K")
def test_attention_scores_keeps_float32(submission, reference) -> None:
    Q, K = randn(2, 3, 4, seed=22), randn(2, 5, 4, seed=23)  # float32
    same_call(submission, reference, "attention_scores", Q, K, **NP)


@grade("test_causal_mask")
@contract(
    "causal_mask",
    "a bool array of shape [num_tokens, num_tokens]",
    "True strictly above the diagonal",
)
@pytest.mark.parametrize("num_tokens", [1, 2, 5, 9])
def test_causal_mask_matches_reference(submission, reference, num_tokens) -> None:
    same_call(submission, reference, "causal_mask", num_tokens, **NP)


# --- self-attention ----------------------------------------------------------------------


def projections(d_in: int, d_k: int, d_v: int, seed: int) -> list[np.ndarray]:
    return [
        randn(d_in, d_k, seed=seed, dtype=np.float64),
        randn(d_in, d_k, seed=seed + 1, dtype=np.float64),
        randn(d_in, d_v, seed=seed + 2, dtype=np.float64),
    ]


@grade("test_self_attention")
@contract(
    "self_attention",
    "(context [..., T, d_v], weights [..., T, T]), NumPy arrays of the dtype of X",
    "scores are scaled by sqrt(d_k)",
    "X and the weight matrices are not modified",
)
@pytest.mark.parametrize(("x_shape", "d_k", "d_v"), [((7, 4), 3, 5), ((2, 5, 3), 4, 6)])
def test_self_attention_matches_reference(submission, reference, x_shape, d_k, d_v) -> None:
    X = randn(*x_shape, seed=3, dtype=np.float64)
    W = projections(x_shape[-1], d_k, d_v, seed=4)
    same_call(submission, reference, "self_attention", X, *W, outputs=2, **NP)


@grade("test_self_attention")
@contract(
    "self_attention",
    "X: [..., T, d_in]",
    "(context [..., T, d_v], weights [..., T, T]), NumPy arrays of the dtype of X",
)
def test_self_attention_on_verdict_batch(submission, reference) -> None:
    X = verdict_embeddings().astype(np.float64)  # [8, 6, 16] from the dataloader
    W = projections(16, 8, 12, seed=5)
    same_call(submission, reference, "self_attention", X, *W, outputs=2, **NP)


@grade("test_self_attention")
@contract(
    "self_attention",
    "(context [..., T, d_v], weights [..., T, T]), NumPy arrays of the dtype of X",
)
@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_keeps_float32(submission, reference, causal) -> None:
    X = randn(2, 5, 3, seed=24)  # float32, and so are the weights
    W = [randn(3, d, seed=25 + i) for i, d in enumerate((4, 4, 2))]
    same_call(submission, reference, "self_attention", X, *W, causal=causal, outputs=2, **NP)


@grade("test_self_attention")
@contract(
    "self_attention",
    "Permuting the tokens of X permutes the context the same way",
    "each weight row sums to 1",
)
def test_self_attention_is_permutation_equivariant(submission) -> None:
    X = randn(6, 4, seed=6, dtype=np.float64)
    W = projections(4, 3, 3, seed=7)
    order = np.array([3, 0, 5, 1, 4, 2])
    probe = submission.probe("self_attention")
    context, weights = pair(probe.call(X, *W)["out"], "self_attention")
    moved, _ = pair(probe.call(X[order], *W)["out"], "self_attention")
    expect_array(
        moved,
        context["array"][order],
        **NP,
        what="the context of permuted tokens (must be the permuted context)",
    )
    expect_array(
        {"kind": "ndarray", "array": weights["array"].sum(-1)},
        np.ones(6),
        what="the weight row sums",
    )


@grade("test_self_attention_causal")
@contract("self_attention", "causal: if True, query i only sees keys 0..i")
@pytest.mark.parametrize("source", ["random", "verdict"])
def test_causal_self_attention_matches_reference(submission, reference, source) -> None:
    X = (
        randn(3, 5, 4, seed=8, dtype=np.float64)
        if source == "random"
        else (verdict_embeddings().astype(np.float64)[..., :4])
    )
    W = projections(4, 3, 2, seed=9)
    same_call(submission, reference, "self_attention", X, *W, causal=True, outputs=2, **NP)


@grade("test_self_attention_causal")
@contract("self_attention", "query i only sees keys 0..i (its weights on later keys are 0)")
def test_causal_self_attention_ignores_the_future(submission) -> None:
    X = randn(6, 4, seed=10, dtype=np.float64)
    W = projections(4, 3, 3, seed=11)
    probe = submission.probe("self_attention")
    base, weights = pair(probe.call(X, *W, causal=True)["out"], "self_attention")
    changed = X.copy()
    changed[4:] += 10.0
    moved, _ = pair(probe.call(changed, *W, causal=True)["out"], "self_attention")
    expect_array(
        {**moved, "array": moved["array"][:4]},
        base["array"][:4],
        **NP,
        what="outputs of tokens 0-3 after changing tokens 4-5",
    )
    if np.triu(weights["array"], k=1).any():
        raise CheckFailed("causal weights above the diagonal are not zero: the future leaks")


# --- embeddings -----------------------------------------------------------------------------


@grade("test_embed_one_hot")
@contract(
    "embed_one_hot",
    "a NumPy array [..., d] with the dtype of E (float32 stays float32)",
    "equal to E[token_ids]",
    "(it is not modified)",
)
@pytest.mark.parametrize(("ids_shape", "largest_id"), [((5,), 11), ((2, 3), 11), ((4,), 6)])
def test_embed_one_hot_matches_lookup(submission, reference, ids_shape, largest_id) -> None:
    # The vocabulary is E's rows, not the ids seen: the last case never uses the top ids,
    # so a one-hot as wide as max(ids) + 1 cannot pass.
    ids = rng(12).integers(0, largest_id, size=ids_shape)
    E = randn(11, 5, seed=13)
    got, _ = same_call(submission, reference, "embed_one_hot", ids, E, **NP)
    expect_array(got["out"], E[ids], what="the embedding (must equal E[ids])")
    expect_unchanged(E, got["inputs_after"][1], "E")
