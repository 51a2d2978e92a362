"""Scaled dot-product attention and the causal mask, in PyTorch.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Every attention layer of the kit (SelfAttention_v1/v2, CausalAttention and both
multi-head variants) ends in this one function; they differ only in how they make Q,
K and V and which mask they pass.

Shapes: q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v]; typically
[batch, heads, tokens, d_k]. Output [..., T_q, d_v], weights [..., T_q, T_k].

Mask convention (one for the whole kit): a bool tensor broadcastable to
[..., T_q, T_k] that is **True where attention is blocked**. This is the polarity of
``masked_fill`` and of ``nn.MultiheadAttention``'s bool ``attn_mask``; note that it is
the *opposite* of the bool ``attn_mask`` of ``F.scaled_dot_product_attention``, where
True means "may attend".

Fully masked rows: a query whose every key is blocked gets all-zero weights and an
all-zero output (no NaN). A causal mask never does this, because the diagonal stays
visible.

Off-limits to students: ``F.scaled_dot_product_attention`` and ``nn.MultiheadAttention``.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .simple_attention import softmax

__all__ = [
    "ScaledDotProductAttention",
    "apply_causal_mask",
    "causal_mask",
    "scaled_dot_product_attention",
]


def causal_mask(num_tokens: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Bool [T, T] mask, True strictly above the diagonal (key j > query i is hidden)."""
    ones = torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device)
    return torch.triu(ones, diagonal=1)


def apply_causal_mask(scores: torch.Tensor) -> torch.Tensor:
    """Return ``scores`` with every future position set to -inf.

    Contract: scores [..., T, T] (square: self-attention) -> same shape, new tensor.

    Why -inf and not 0: softmax maps -inf to exactly 0 weight, and the remaining
    entries renormalise among themselves. A score of 0 is an ordinary score that
    still gets exp(0) = 1 worth of weight. Masking *before* softmax with -inf gives
    the same weights as softmax-then-zero-then-renormalise, in one step.
    """
    return scores.masked_fill(causal_mask(scores.shape[-1], scores.device), -torch.inf)


def scaled_dot_product_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: nn.Module | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q K^T / sqrt(d_k)) V, returning ``(output, weights)``.

    ``mask`` is True where attention is blocked (see the module docstring). ``dropout``
    is applied to the *weights*, after softmax: it randomly silences whole
    query-key connections during training. The returned weights are the ones that
    multiplied V, so after dropout when it is active.
    """
    d_k = keys.shape[-1]
    # transpose(-2, -1), not .T: only the token and feature axes swap, batch axes stay.
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, -torch.inf)
    weights = softmax(scores, dim=-1)
    if dropout is not None:
        weights = dropout(weights)
    return weights @ values, weights


class ScaledDotProductAttention(nn.Module):
    """Module form of :func:`scaled_dot_product_attention`, owning the dropout layer.

    ``ScaledDotProductAttention(dropout=0.0)(q, k, v, mask=None) -> (output, weights)``
    over [batch, heads, tokens, d_k]. Dropout is active only in ``train()`` mode.
    """

    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return scaled_dot_product_attention(q, k, v, mask=mask, dropout=self.dropout)
