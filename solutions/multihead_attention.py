"""Multi-head attention: several attention heads side by side, two ways.

One head computes one pattern of "who looks at whom". Several heads, each with its own
projections, can track different relations at once (the subject of a verb, the previous
token, a matching bracket). Their outputs are concatenated.

* :class:`MultiHeadAttentionWrapper` literally stacks ``num_heads`` CausalAttention
  modules and concatenates their outputs: easy to read, one small matmul per head.
* :class:`MultiHeadAttention` does the same maths with one big projection per Q/K/V,
  then *splits* the result into heads with ``view`` + ``transpose``. That is how real
  models do it: a few large matmuls beat many small ones.

Off-limits to students: ``F.scaled_dot_product_attention`` and ``nn.MultiheadAttention``.
"""

from __future__ import annotations

import torch
from torch import nn

from .causal_attention import CausalAttention
from .scaled_dot_product import ScaledDotProductAttention, causal_mask

__all__ = ["MultiHeadAttention", "MultiHeadAttentionWrapper"]


class MultiHeadAttentionWrapper(nn.Module):
    """``num_heads`` independent CausalAttention heads, outputs concatenated.

    Constructor: ``(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)``.
    Here ``d_out`` is the width of *each* head, so the output has
    ``num_heads * d_out`` features: x [batch, T, d_in] -> [batch, T, num_heads * d_out].
    Head h's output occupies features ``h * d_out : (h + 1) * d_out``.
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            for _ in range(num_heads)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    """Causal multi-head attention with a fused projection per Q/K/V and an output projection.

    Constructor: ``(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)``.
    Unlike the wrapper, ``d_out`` is the *total* width; each head gets
    ``head_dim = d_out // num_heads`` features, so ``d_out`` must divide evenly.

    Parameters, created in this order (so seeds reproduce the book):
    ``W_query``, ``W_key``, ``W_value``: Linear(d_in, d_out, bias=qkv_bias);
    ``out_proj``: Linear(d_out, d_out) with bias. Buffer ``mask``: bool
    [context_length, context_length], True above the diagonal.

    forward(x): x [batch, T, d_in] -> [batch, T, d_out].

    Scores are scaled by sqrt(head_dim), the width of the keys each head actually
    compares - not by sqrt(d_out).
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.attention = ScaledDotProductAttention(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """[batch, T, d_out] -> [batch, heads, T, head_dim].

        ``view`` cuts the feature axis into (heads, head_dim); ``transpose`` then moves
        heads in front of tokens so each head is an independent [T, head_dim] problem.
        A ``view`` straight to [batch, heads, T, head_dim] would be wrong: it would
        reinterpret memory and mix tokens into heads.
        """
        batch, num_tokens, _ = x.shape
        return x.view(batch, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, num_tokens, _ = x.shape
        if num_tokens > self.mask.shape[0]:
            raise ValueError(
                f"input has {num_tokens} tokens but context_length is {self.mask.shape[0]}"
            )
        queries = self.split_heads(self.W_query(x))
        keys = self.split_heads(self.W_key(x))
        values = self.split_heads(self.W_value(x))
        context, _ = self.attention(queries, keys, values, mask=self.mask[:num_tokens, :num_tokens])
        # Undo the split: [batch, heads, T, head_dim] -> [batch, T, heads * head_dim].
        # transpose makes the tensor non-contiguous, so reshape (which copies when
        # needed) rather than view.
        context = context.transpose(1, 2).reshape(batch, num_tokens, self.d_out)
        return self.out_proj(context)
