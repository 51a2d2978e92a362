"""Attention computed exactly, in float64 with the whole score matrix: what lesson 7's hidden
tests compare every answer with (and mutation testing's requests are built from). A query
that may see no key gets a zero output row and a log-sum-exp of -inf, the kit's convention.
"""

from __future__ import annotations

import math

import numpy as np


def visible_keys(n_q: int, n_k: int, causal: bool) -> np.ndarray:
    """Bool [n_q, n_k], True where query i may see key j (causal: aligned bottom-right)."""
    if not causal:
        return np.ones((n_q, n_k), dtype=bool)
    return np.arange(n_k)[None, :] <= np.arange(n_q)[:, None] + (n_k - n_q)


def exact_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, rows: int = 256
) -> tuple[np.ndarray, np.ndarray]:
    """(out, lse) in float64, a block of ``rows`` queries at a time (so that its memory stays
    bounded at any T): a row that sees nothing gets zeros and -inf."""
    q64, k64, v64 = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    n_q, n_k = q.shape[-2], k.shape[-2]
    keys = visible_keys(n_q, n_k, causal)
    out = np.zeros((*q.shape[:-1], v.shape[-1]))
    lse = np.full(q.shape[:-1], -np.inf)
    for start in range(0, n_q, rows):
        part = slice(start, start + rows)
        scores = q64[..., part, :] @ np.swapaxes(k64, -1, -2) / math.sqrt(q.shape[-1])
        scores = np.where(keys[part], scores, -np.inf)
        top = scores.max(axis=-1, keepdims=True)
        seen = np.isfinite(top)
        weights = np.exp(scores - np.where(seen, top, 0.0))
        total = weights.sum(axis=-1, keepdims=True)
        out[..., part, :] = np.where(seen, weights / np.where(seen, total, 1.0), 0.0) @ v64
        lse[..., part] = np.where(seen, top + np.log(np.where(seen, total, 1.0)), -np.inf)[..., 0]
    return out, lse


def fused_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(out, lse) in float32 from PyTorch's own fused CPU kernel (tiled, as the lesson's
    answer is; in the grader's process, which withholds nothing): the memory test's answer
    at T = 4096, several times faster than the reference's Python loop over the tiles.
    Causal only for as many queries as keys, where its mask is the kit's; values as wide as
    the queries."""
    import torch

    if causal and q.shape[-2] != k.shape[-2]:
        raise ValueError("the fused kernel aligns a causal mask top-left")
    if v.shape[-1] != q.shape[-1]:
        raise ValueError("the fused kernel wants values as wide as queries and keys")
    # The kernel takes [batch, heads, T, d]: every leading axis goes into the batch.
    tensors = [
        torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).reshape(-1, 1, *a.shape[-2:])
        for a in (q, k, v)
    ]
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(*tensors, 0.0, causal)[:2]
    return (
        out.reshape(*q.shape[:-1], v.shape[-1]).numpy(),
        lse.reshape(q.shape[:-1]).numpy(),
    )


def exact_gradients(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, grad_out: np.ndarray, causal: bool
) -> tuple[np.ndarray, ...]:
    """(dq, dk, dv) in float64: autograd of attention that builds the whole score matrix."""
    import torch

    q64, k64, v64 = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (q, k, v))
    scores = q64 @ k64.transpose(-2, -1) / math.sqrt(q.shape[-1])
    keys = torch.from_numpy(visible_keys(q.shape[-2], k.shape[-2], causal))
    scores = scores.masked_fill(~keys, -math.inf)
    top = scores.amax(dim=-1, keepdim=True).detach()
    weights = torch.exp(scores - torch.where(torch.isinf(top), 0.0, top))
    total = weights.sum(dim=-1, keepdim=True)
    out = torch.where(total > 0, weights / torch.where(total > 0, total, 1.0), 0.0) @ v64
    (out * torch.tensor(grad_out, dtype=torch.float64)).sum().backward()
    return tuple(t.grad.numpy() for t in (q64, k64, v64))  # type: ignore[union-attr]


def exact_softmax(scores: np.ndarray) -> np.ndarray:
    x = np.asarray(scores, dtype=np.float64)
    top = x.max(axis=-1, keepdims=True)
    seen = np.isfinite(top)
    weights = np.exp(x - np.where(seen, top, 0.0))
    total = weights.sum(axis=-1, keepdims=True)
    return np.where(seen, weights / np.where(seen, total, 1.0), 0.0)
