"""Lesson 5's mutation testing: fresh inputs for each exercise, to tell an equivalent mutant
from a survivor, and the survivors a human judged equivalent to the reference, with why
(see :mod:`attnkit_autograder.quality.mutation`)."""

from __future__ import annotations

from collections.abc import Callable

from ..requests import Request

REQUESTS: dict[str, Callable[[], list[Request]]] = {}
"""Per exercise: the requests (shapes the contract allows, none of them the suite's own)."""

JUDGED: list[tuple[str, str, tuple[str, ...], str]] = [
    (
        "MultiHeadAttention",
        "scores = queries @ keys.transpose(-2, -1) / self.head_dim ** 0.5",
        ("-2 -> 2",),
        "keys is always 4-d [batch, heads, T, head_dim]: dim 2 is dim -2",
    ),
    (
        "MultiHeadAttention",
        "blocked = blocked | padding",
        ("blocked | padding -> padding | blocked",),
        "| is symmetric",
    ),
    (
        "padding_causal_mask",
        "return (future[None, :, :] | padding[:, None, :])[:, None, :, :]",
        ("future[None, :, :] | padding[:, None, :] -> padding[:, None, :] | future[None, :, :]",),
        "| is symmetric",
    ),
    (
        "TinyTransformer",
        "positions = torch.arange(ids.shape[-1], device=ids.device)",
        ("-1 -> 1",),
        "ids is [batch, T] by contract: dim 1 is dim -1",
    ),
    (
        "softmax_jacobian_norm",
        "jacobian = torch.diag_embed(s) - s[..., :, None] * s[..., None, :]",
        (
            "torch.diag_embed(s) - s[..., :, None] * s[..., None, :] -> "
            "s[..., :, None] * s[..., None, :] - torch.diag_embed(s)",
        ),
        "the norm of -J is the norm of J",
    ),
    (
        "softmax_jacobian_norm",
        "jacobian = torch.diag_embed(s) - s[..., :, None] * s[..., None, :]",
        ("(..., :, None) -> (:, ..., None)",),
        "s[:, ..., None] and s[..., :, None] both add a last axis, whatever the rank",
    ),
    (
        "permutation_gap",
        "return (layer(x[:, perm]) - layer(x)[:, perm]).abs().max().item()",
        ("layer(x[:, perm]) - layer(x)[:, perm] -> layer(x)[:, perm] - layer(x[:, perm])",),
        "the absolute difference is symmetric",
    ),
]
"""Survivors a human judged equivalent: (exercise, statement, changes, why)."""
