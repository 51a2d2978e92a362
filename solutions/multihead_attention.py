"""Multi-head attention: several attention heads side by side, two ways.

One head computes one pattern of "who looks at whom". Several heads, each with its own
projections, can track different relations at once (the subject of a verb, the previous
token, a matching bracket). Their outputs are concatenated.

* :class:`MultiHeadAttentionWrapper` literally stacks ``num_heads`` CausalAttention
  modules and concatenates their outputs: easy to read, one small matmul per head.
* :class:`MultiHeadAttention` does the same maths with one big projection per Q/K/V,
  then *splits* the result into heads with ``view`` + ``transpose``, and mixes the
  heads with an output projection. That is how real models do it: a few large matmuls
  beat many small ones.

Off-limits to students: ``F.scaled_dot_product_attention`` and ``nn.MultiheadAttention``.
"""

from __future__ import annotations

import torch
from torch import nn

from attnkit.assignments import ATTENTION_CALLS

from .causal_attention import CausalAttention
from .exercises import exercise
from .scaled_dot_product import causal_mask

__all__ = [
    "MultiHeadAttention",
    "MultiHeadAttentionWrapper",
    "gpt2_attention_parameters",
    "wrapper_d_out",
]


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

    @exercise(
        "04_multihead_attention", "MultiHeadAttentionWrapper.forward", forbidden=ATTENTION_CALLS
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
    ``out_proj``: Linear(d_out, d_out) with bias. Dropout ``dropout`` on the weights.
    Buffer ``mask``: bool [context_length, context_length], True above the diagonal.

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
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    @exercise(
        "04_multihead_attention",
        "MultiHeadAttention.forward with the head split",
        forbidden=ATTENTION_CALLS,
    )
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, num_tokens, _ = x.shape
        if num_tokens > self.mask.shape[0]:
            raise ValueError(
                f"input has {num_tokens} tokens but context_length is {self.mask.shape[0]}"
            )
        # The head split: [batch, T, d_out] -> view [batch, T, heads, head_dim] ->
        # transpose [batch, heads, T, head_dim]. The view cuts each token's features into
        # heads; the transpose puts heads in front of tokens so every head becomes an
        # independent [T, head_dim] attention problem. Viewing straight to
        # [batch, heads, T, head_dim] would be wrong: it would mix tokens into heads.
        split = (batch, num_tokens, self.num_heads, self.head_dim)
        queries = self.W_query(x).view(split).transpose(1, 2)
        keys = self.W_key(x).view(split).transpose(1, 2)
        values = self.W_value(x).view(split).transpose(1, 2)

        # Scale by sqrt(head_dim): each head compares head_dim-wide keys, not d_out-wide.
        scores = queries @ keys.transpose(-2, -1) / self.head_dim**0.5
        scores = scores.masked_fill(self.mask[:num_tokens, :num_tokens], -torch.inf)
        weights = self.dropout(torch.softmax(scores, dim=-1))

        # Undo the split: [batch, heads, T, head_dim] -> [batch, T, heads * head_dim].
        # transpose makes the tensor non-contiguous, so reshape (which copies when
        # needed) rather than view.
        context = (weights @ values).transpose(1, 2).reshape(batch, num_tokens, self.d_out)
        return self.out_proj(context)


@exercise(
    "04_multihead_attention",
    "book exercise 3.2: d_out for 2 output features",
    uses=("MultiHeadAttentionWrapper",),
)
def wrapper_d_out() -> int:
    """Book exercise 3.2: the per-head d_out that makes a 2-head wrapper output 2 features.

    The wrapper concatenates its heads, so its output width is num_heads * d_out:
    2 * d_out = 2 gives d_out = 1.
    """
    return 1


@exercise("04_multihead_attention", "book exercise 3.3: a GPT-2-sized layer's parameters")
def gpt2_attention_parameters() -> int:
    """Book exercise 3.3: the parameters of MultiHeadAttention(768, 768, 1024, 0.0, 12).

    Three bias-free d x d projections for Q, K and V, plus out_proj with its bias. The
    number of heads and the context length do not change the count: heads split the
    same matrices, and the mask is a buffer, not a parameter.
    """
    d = 768
    return 3 * d * d + (d * d + d)
