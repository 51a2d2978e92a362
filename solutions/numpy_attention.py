"""Attention from scratch in NumPy: the reference answers for lesson 1.

Everything here works on plain ``np.ndarray`` values and on any number of leading
"batch" axes, because the last two axes are always (tokens, features). That is the
one shape convention of the whole kit:

    X        [..., T, d_in]      T tokens, each a d_in-dimensional embedding
    W_q/W_k  [d_in, d_k]         applied as ``X @ W`` (rows of W are input features)
    W_v      [d_in, d_v]
    scores   [..., T_q, T_k]     one row per query, one column per key
    weights  [..., T_q, T_k]     every row sums to 1
    context  [..., T_q, d_v]

Mask polarity, kit-wide: a boolean mask is ``True`` where a query must NOT look,
i.e. ``mask[i, j] is True`` hides key ``j`` from query ``i``.

Off-limits to students in these exercises: ``scipy.special.softmax`` and any deep
learning library. Only NumPy.
"""

from __future__ import annotations

import numpy as np

from attnkit.assignments import SOFTMAX_CALLS

from .exercises import exercise

__all__ = [
    "attention_scores",
    "causal_mask",
    "embed_lookup",
    "embed_one_hot",
    "one_hot",
    "scale_scores",
    "self_attention",
    "softmax",
]


@exercise("01_numpy_attention", "numerically stable softmax over any axis", forbidden=SOFTMAX_CALLS)
def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``.

    Contract:
        x: float array of any shape. The result has the same shape and dtype
        (integer input is promoted to float64), and sums to 1 along ``axis``.
        ``x`` itself is never modified.

    Stability: softmax(x) == softmax(x - c) for any constant c, so we subtract each
    slice's maximum first. The largest exponent is then exp(0) = 1 and nothing can
    overflow, even for logits around +1000.

    Fully masked slices (every entry -inf) have no sensible distribution. The kit's
    policy is that such a slice becomes all zeros: a query that may look at nothing
    receives nothing, instead of NaN poisoning everything downstream.
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    shift = np.max(x, axis=axis, keepdims=True)
    # A slice that is all -inf has max -inf, and (-inf) - (-inf) is NaN. Shifting by 0
    # instead leaves exp(-inf) = 0 everywhere, which the division below turns into zeros.
    shift = np.where(np.isfinite(shift), shift, 0.0)
    exps = np.exp(x - shift)
    totals = np.sum(exps, axis=axis, keepdims=True)
    return exps / np.where(totals == 0, 1.0, totals)


@exercise("01_numpy_attention", "divide scores by sqrt(d_k)")
def scale_scores(scores: np.ndarray, d_k: int) -> np.ndarray:
    """Divide raw attention scores by sqrt(d_k), the width of the keys.

    Why: a dot product of two d_k-dimensional vectors with unit-variance entries has
    variance d_k. Without the division, scores grow with the model width and softmax
    saturates into a near one-hot vector whose gradients vanish. Dividing by the
    standard deviation, sqrt(d_k), keeps the scores at unit scale for every width.

    Note the divisor: sqrt(d_k) - not d_k, and not d_in. In multi-head attention d_k
    is the width of one head.
    """
    if d_k <= 0:
        raise ValueError(f"d_k must be a positive width, got {d_k}")
    # A Python float keeps the dtype (float32 stays float32); np.sqrt(d_k) would be a
    # float64 scalar, and dividing by it promotes float32 scores to float64.
    return np.asarray(scores) / d_k**0.5


@exercise("01_numpy_attention", "Q K^T for batched inputs")
def attention_scores(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    """Raw (unscaled) scores: the dot product of every query with every key.

    Contract:
        Q: [..., T_q, d_k], K: [..., T_k, d_k]  ->  [..., T_q, T_k]

    Only the last two axes of K are swapped. ``K.T`` would reverse *all* axes and is
    wrong as soon as there is a batch axis: [B, T, d] would become [d, T, B].
    """
    return Q @ np.swapaxes(K, -1, -2)


@exercise("01_numpy_attention", "bool [T, T] mask, True above the diagonal")
def causal_mask(num_tokens: int) -> np.ndarray:
    """Boolean [T, T] mask that is True strictly above the diagonal.

    ``mask[i, j]`` is True when key j lies in the future of query i (j > i) and must
    be hidden. The diagonal stays visible: a token may always attend to itself.
    """
    return np.triu(np.ones((num_tokens, num_tokens), dtype=bool), k=1)


@exercise(
    "01_numpy_attention",
    "single-head attention, optional causal mask",
    uses=("softmax", "scale_scores", "attention_scores", "causal_mask"),
)
def self_attention(
    X: np.ndarray,
    W_q: np.ndarray,
    W_k: np.ndarray,
    W_v: np.ndarray,
    causal: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Single-head scaled dot-product self-attention.

    Contract:
        X: [..., T, d_in]; W_q, W_k: [d_in, d_k]; W_v: [d_in, d_v]
        returns (context [..., T, d_v], weights [..., T, T])

    With ``causal=True`` query i sees only keys 0..i. Masking happens *before*
    softmax by setting hidden scores to -inf, so each row renormalises over the
    visible keys alone.
    """
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    scores = scale_scores(attention_scores(Q, K), K.shape[-1])
    if causal:
        scores = np.where(causal_mask(X.shape[-2]), -np.inf, scores)
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


def one_hot(token_ids: np.ndarray, vocab_size: int) -> np.ndarray:
    """One-hot rows: [...] integer ids -> [..., vocab_size] float64 with a single 1."""
    token_ids = np.asarray(token_ids)
    if token_ids.size and (token_ids.min() < 0 or token_ids.max() >= vocab_size):
        raise ValueError(f"token ids must lie in [0, {vocab_size}), got {token_ids}")
    return np.eye(vocab_size)[token_ids]


@exercise("01_numpy_attention", "one-hot rows times the embedding matrix")
def embed_one_hot(token_ids: np.ndarray, E: np.ndarray) -> np.ndarray:
    """Static embedding as a matrix product: one_hot(ids) @ E.

    E is the [vocab_size, d] embedding matrix. Row v of E is the vector of token v, and
    multiplying by a one-hot row picks exactly that row. Real layers skip the product
    (it wastes vocab_size x d multiply-adds on zeros) and index instead: see
    :func:`embed_lookup`, which returns the same values.
    """
    token_ids = np.asarray(token_ids)
    # Row r of the one-hot matrix has a 1 exactly where column == token_ids[r].
    one_hot_rows = (token_ids[..., None] == np.arange(E.shape[0])).astype(E.dtype)
    return one_hot_rows @ E


def embed_lookup(token_ids: np.ndarray, E: np.ndarray) -> np.ndarray:
    """Static embedding as a row lookup: E[ids]. Equal to :func:`embed_one_hot`."""
    return E[np.asarray(token_ids)]
