"""Softmax and attention without trainable weights, in PyTorch.

This is the first step of lesson 2: every token's embedding serves as its own query,
key and value, so the only ingredients are dot products and softmax. It shows the
*mechanics* of attention before any learning is involved.

Shapes: inputs are [T, d] (one sequence) or [..., T, d] (batched); the attention
weights are [..., T, T] and the context vectors [..., T, d].

Off-limits to students in the softmax exercise: ``torch.softmax``,
``torch.nn.functional.softmax``, ``Tensor.softmax`` and ``scipy.special.softmax``.
"""

from __future__ import annotations

import torch

from attnkit.assignments import SOFTMAX_CALLS

from .exercises import exercise

__all__ = ["simple_attention_loop", "simple_attention_matrix", "softmax"]


@exercise("02_self_attention", "softmax(x, dim) from exp and sum", forbidden=SOFTMAX_CALLS)
def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Numerically stable softmax along ``dim``, built from exp and sum.

    Contract:
        x: floating tensor of any shape; returns a tensor of the same shape, dtype and
        device whose slices along ``dim`` sum to 1. ``x`` is never modified in place,
        and gradients flow through the result.

    Subtracting the per-slice maximum changes nothing mathematically (the factor
    exp(-max) cancels between numerator and denominator) but keeps exp() from
    overflowing. The maximum is detached: its gradient contribution is exactly zero
    anyway, and detaching avoids sending gradient through the argmax.

    Policy for fully masked slices (all -inf): the result is all zeros, not NaN.
    """
    shift = x.amax(dim=dim, keepdim=True).detach()
    # An all -inf slice has max -inf; shifting by 0 instead keeps exp() at exactly 0.
    shift = torch.where(torch.isfinite(shift), shift, torch.zeros_like(shift))
    exps = torch.exp(x - shift)
    totals = exps.sum(dim=dim, keepdim=True)
    return exps / torch.where(totals == 0, torch.ones_like(totals), totals)


@exercise("02_self_attention", "attention without weights, with loops", uses=("softmax",))
def simple_attention_loop(inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention without weights, one dot product at a time.

    Contract: inputs [T, d] -> (context [T, d], weights [T, T]).

    score[i, j] = <x_i, x_j>; row i of the weights is softmax(score[i]); the context
    vector of token i is the weighted sum of all inputs, sum_j w[i, j] * x_j.
    The explicit loops are for reading; :func:`simple_attention_matrix` does the same
    work with two matrix products.
    """
    num_tokens = inputs.shape[0]
    scores = torch.empty(num_tokens, num_tokens, dtype=inputs.dtype)
    for i in range(num_tokens):
        for j in range(num_tokens):
            scores[i, j] = torch.dot(inputs[i], inputs[j])
    weights = softmax(scores, dim=-1)
    context = torch.zeros_like(inputs)
    for i in range(num_tokens):
        for j in range(num_tokens):
            context[i] += weights[i, j] * inputs[j]
    return context, weights


@exercise("02_self_attention", "attention without weights, as matmuls", uses=("softmax",))
def simple_attention_matrix(inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The same computation as :func:`simple_attention_loop`, as matrix products.

    Contract: inputs [..., T, d] -> (context [..., T, d], weights [..., T, T]).

    ``transpose(-2, -1)`` swaps only the token and feature axes, so the same line
    serves one sequence and a batch of them.
    """
    scores = inputs @ inputs.transpose(-2, -1)
    weights = softmax(scores, dim=-1)
    return weights @ inputs, weights
