"""The causal mask and scaled dot-product attention, in PyTorch.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

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

import torch
from torch import nn

from attnkit.assignments import ATTENTION_CALLS

from .exercises import exercise

__all__ = ["ScaledDotProductAttention", "apply_causal_mask", "causal_mask"]


@exercise("03_causal_attention", "bool [T, T] mask, True above the diagonal")
def causal_mask(num_tokens: int) -> torch.Tensor:
    """Bool [T, T] mask, True strictly above the diagonal (key j > query i is hidden)."""
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)


@exercise("03_causal_attention", "masked_fill the future with -inf", uses=("causal_mask",))
def apply_causal_mask(scores: torch.Tensor) -> torch.Tensor:
    """Return ``scores`` with every future position set to -inf.

    Contract: scores [..., T, T] (square: self-attention) -> same shape, new tensor.

    Why -inf and not 0: softmax maps -inf to exactly 0 weight, and the remaining
    entries renormalise among themselves. A score of 0 is an ordinary score that
    still gets exp(0) = 1 worth of weight. Masking *before* softmax with -inf gives
    the same weights as softmax-then-zero-then-renormalise, in one step.
    """
    return scores.masked_fill(causal_mask(scores.shape[-1]).to(scores.device), -torch.inf)


class ScaledDotProductAttention(nn.Module):
    """softmax(Q K^T / sqrt(d_k)) V with an optional mask and dropout on the weights.

    ``ScaledDotProductAttention(dropout=0.0)(q, k, v, mask=None) -> (output, weights)``
    over [batch, heads, tokens, d_k]. ``mask`` is True where attention is blocked.

    Dropout acts on the *weights*, after softmax, and only in ``train()`` mode: it
    randomly silences whole query-key connections. The returned weights are the ones
    that multiplied V, so after dropout when it is active.
    """

    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    @exercise(
        "03_causal_attention",
        "ScaledDotProductAttention.forward -> (output, weights)",
        forbidden=ATTENTION_CALLS,
    )
    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # transpose(-2, -1), not .T: only the token and feature axes swap, batch axes stay.
        scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(mask, -torch.inf)
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            # A query whose every key is blocked has nothing to attend to: softmax of an
            # all -inf row is NaN, and the kit's policy is zero weight instead.
            weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
        weights = self.dropout(weights)
        return weights @ v, weights
