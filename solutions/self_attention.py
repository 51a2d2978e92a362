"""Self-attention with trainable weights: SelfAttention_v1 and SelfAttention_v2.

Both layers map x [T, d_in] or [batch, T, d_in] to context vectors of the same
leading shape with d_out features. They compute exactly the same function and differ
only in how they store the three projections:

* v1 keeps raw ``nn.Parameter`` matrices of shape [d_in, d_out] and multiplies
  ``x @ W``. The layout matches the maths on paper.
* v2 uses ``nn.Linear(d_in, d_out)``, which stores its weight as [d_out, d_in] and
  computes ``x @ W.T (+ b)``. It also has a better initialisation than ``torch.rand``
  and an optional bias (``qkv_bias``).

:func:`copy_v2_weights_into_v1` makes the layout difference concrete: copying the
transposed Linear weights into a v1 makes both layers agree to the last digit.

Off-limits to students in these exercises: ``F.scaled_dot_product_attention``,
``nn.MultiheadAttention``.
"""

from __future__ import annotations

import torch
from torch import nn

from attnkit.assignments import ATTENTION_CALLS

from .exercises import exercise
from .simple_attention import softmax

__all__ = ["SelfAttention_v1", "SelfAttention_v2", "copy_v2_weights_into_v1"]


class SelfAttention_v1(nn.Module):
    """Single-head self-attention with ``nn.Parameter`` weights.

    Weight layout: ``W_query``, ``W_key``, ``W_value`` are [d_in, d_out] and are applied
    as ``x @ W``. They are created in that order from ``torch.rand`` so that
    ``torch.manual_seed(123)`` reproduces the book's numbers.

    forward(x): x [T, d_in] or [batch, T, d_in] -> context [..., T, d_out], dtype of x.
    No mask, no dropout: every token sees every token.
    """

    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    @exercise(
        "02_self_attention",
        "SelfAttention_v1.forward, batched",
        forbidden=ATTENTION_CALLS,
        uses=("softmax",),
    )
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        queries = x @ self.W_query  # [..., T, d_out]: what each token looks for
        keys = x @ self.W_key  # [..., T, d_out]: what each token offers to be found by
        values = x @ self.W_value  # [..., T, d_out]: what each token hands over
        # transpose(-2, -1), not .T: only the token and feature axes swap; a batch axis stays.
        scores = queries @ keys.transpose(-2, -1)  # [..., T, T]
        weights = softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        return weights @ values


class SelfAttention_v2(nn.Module):
    """Single-head self-attention with ``nn.Linear`` projections.

    Weight layout: ``W_query.weight`` etc. are [d_out, d_in] (nn.Linear's convention);
    biases exist only when ``qkv_bias=True``. Created in the order query, key, value,
    so ``torch.manual_seed(789)`` reproduces the book's numbers.

    forward(x): x [T, d_in] or [batch, T, d_in] -> context [..., T, d_out].
    """

    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False) -> None:
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    @exercise(
        "02_self_attention",
        "SelfAttention_v2.forward with nn.Linear",
        forbidden=ATTENTION_CALLS,
        uses=("softmax",),
    )
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1)
        weights = softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        return weights @ values


@exercise("02_self_attention", "move v2's weights into a v1")
def copy_v2_weights_into_v1(v2: SelfAttention_v2, v1: SelfAttention_v1) -> SelfAttention_v1:
    """Copy a v2's projections into a v1 so that both compute the same output.

    nn.Linear stores [d_out, d_in] and computes x @ weight.T; v1 computes x @ W with W
    of shape [d_in, d_out]. So each v1 matrix receives the *transpose* of the matching
    Linear weight. A v2 with biases has no v1 equivalent, so that case is refused.
    Returns ``v1``, modified in place.
    """
    for name in ("W_query", "W_key", "W_value"):
        linear: nn.Linear = getattr(v2, name)
        if linear.bias is not None:
            raise ValueError(
                "SelfAttention_v1 has no bias: cannot copy a v2 built with qkv_bias=True"
            )
        target: nn.Parameter = getattr(v1, name)
        if target.shape != linear.weight.T.shape:
            raise ValueError(
                f"{name}: v1 holds {tuple(target.shape)} but v2's transposed weight is "
                f"{tuple(linear.weight.T.shape)}; build both with the same d_in and d_out"
            )
        # no_grad: this is bookkeeping, not part of any computation to differentiate.
        with torch.no_grad():
            target.copy_(linear.weight.T)
    return v1
