"""Causal (masked) self-attention: each token sees itself and the past, never the future.

A language model predicts token t+1 from tokens 0..t. If token t could attend to
t+1 during training it would simply copy the answer, so every score above the
diagonal is hidden with -inf before softmax.

Off-limits to students: ``F.scaled_dot_product_attention`` and ``nn.MultiheadAttention``.
"""

from __future__ import annotations

import torch
from torch import nn

from attnkit.assignments import ATTENTION_CALLS

from .exercises import exercise
from .scaled_dot_product import ScaledDotProductAttention, causal_mask

__all__ = ["CausalAttention"]


class CausalAttention(nn.Module):
    """Single-head causal self-attention with dropout on the attention weights.

    Constructor: ``CausalAttention(d_in, d_out, context_length, dropout, qkv_bias=False)``.

    * ``W_query``, ``W_key``, ``W_value``: ``nn.Linear(d_in, d_out, bias=qkv_bias)``,
      created in that order.
    * ``mask``: a registered *buffer* - bool [context_length, context_length], True
      above the diagonal (blocked). A buffer moves with ``.to(device)`` and is saved in
      the state dict, but is not a parameter: the optimiser never touches it.
    * dropout acts on the weights, and only in ``train()`` mode.

    forward(x): x [batch, T, d_in] (or [T, d_in]) with T <= context_length
    -> context [batch, T, d_out]. The mask is cut to the actual T: a batch shorter than
    context_length must not be compared against a [context_length, context_length] mask.
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.attention = ScaledDotProductAttention(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    @exercise(
        "03_causal_attention",
        "CausalAttention.forward",
        forbidden=ATTENTION_CALLS,
        uses=("causal_mask", "ScaledDotProductAttention"),
    )
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        num_tokens = x.shape[-2]
        if num_tokens > self.mask.shape[0]:
            raise ValueError(
                f"input has {num_tokens} tokens but context_length is {self.mask.shape[0]}"
            )
        context, _ = self.attention(
            self.W_query(x),
            self.W_key(x),
            self.W_value(x),
            mask=self.mask[:num_tokens, :num_tokens],
        )
        return context
