"""The NumPy references of lesson 1, against torch as an independent oracle."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnkit_solutions import numpy_attention as ref

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_matches_torch_on_every_axis(axis: int) -> None:
    x = RNG.normal(size=(3, 4, 5))
    expected = torch.softmax(torch.from_numpy(x), dim=axis).numpy()
    np.testing.assert_allclose(ref.softmax(x, axis=axis), expected, rtol=1e-12, atol=1e-15)


def test_softmax_rows_sum_to_one_and_are_shift_invariant() -> None:
    x = RNG.normal(size=(6, 7))
    out = ref.softmax(x)
    np.testing.assert_allclose(out.sum(axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(ref.softmax(x + 123.4), out, rtol=1e-9)


def test_softmax_is_finite_for_huge_logits_and_does_not_mutate() -> None:
    x = np.array([[1000.0, 999.0, -1000.0], [-1000.0, -1001.0, -999.0]])
    before = x.copy()
    out = ref.softmax(x)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out[0], [0.7310585786, 0.2689414214, 0.0], atol=1e-9)
    np.testing.assert_array_equal(x, before)


def test_softmax_fully_masked_row_is_zeros_not_nan() -> None:
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 0.0]])
    np.testing.assert_array_equal(ref.softmax(x), [[0, 0, 0], [0.5, 0, 0.5]])


def test_scale_scores_divides_by_sqrt_dk() -> None:
    np.testing.assert_allclose(ref.scale_scores(np.array([8.0, -16.0]), 64), [1.0, -2.0])
    with pytest.raises(ValueError):
        ref.scale_scores(np.ones(2), 0)


def test_scores_are_batched_and_only_swap_the_last_two_axes() -> None:
    Q = RNG.normal(size=(2, 3, 4))  # batch 2, T_q 3, d_k 4
    K = RNG.normal(size=(2, 5, 4))  # T_k 5 != T_q exposes a wrong transpose
    scores = ref.attention_scores(Q, K)
    assert scores.shape == (2, 3, 5)
    for b in range(2):
        np.testing.assert_allclose(scores[b], Q[b] @ K[b].T)


def test_causal_mask_polarity() -> None:
    mask = ref.causal_mask(4)
    assert mask.dtype == bool
    assert not mask.diagonal().any(), "a token must see itself"
    assert mask[0, 1] and not mask[1, 0], "True marks the future (blocked)"
    assert mask.sum() == 6


@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_matches_torch_sdpa(causal: bool) -> None:
    X = RNG.normal(size=(2, 5, 3))
    W_q, W_k, W_v = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4)), RNG.normal(size=(3, 6))
    context, weights = ref.self_attention(X, W_q, W_k, W_v, causal=causal)
    assert context.shape == (2, 5, 6) and weights.shape == (2, 5, 5)
    q, k, v = (torch.from_numpy(X @ W) for W in (W_q, W_k, W_v))
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    np.testing.assert_allclose(context, expected.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights.sum(-1), 1.0)
    if causal:
        assert np.all(np.triu(weights, k=1) == 0)


def test_causal_output_ignores_future_tokens() -> None:
    X = RNG.normal(size=(6, 3))
    W = [RNG.normal(size=(3, 3)) for _ in range(3)]
    base, _ = ref.self_attention(X, *W, causal=True)
    changed = X.copy()
    changed[4:] += 10.0
    out, _ = ref.self_attention(changed, *W, causal=True)
    np.testing.assert_allclose(out[:4], base[:4], rtol=1e-12)
    assert not np.allclose(out[4:], base[4:])


def test_one_hot_times_embedding_equals_row_lookup() -> None:
    E = RNG.normal(size=(10, 4))
    ids = np.array([[3, 0, 9], [1, 1, 2]])
    np.testing.assert_array_equal(ref.one_hot(ids, 10).sum(-1), 1.0)
    np.testing.assert_allclose(ref.embed_one_hot(ids, E), ref.embed_lookup(ids, E), rtol=0)
    np.testing.assert_array_equal(ref.embed_lookup(ids, E)[0, 2], E[9])
    with pytest.raises(ValueError):
        ref.one_hot(np.array([10]), 10)
