"""Lesson 4's mutation testing: fresh inputs for each exercise, to tell an equivalent mutant
from a survivor, and the survivors a human judged equivalent to the reference, with why
(see :mod:`attnkit_autograder.quality.mutation`)."""

from __future__ import annotations

from collections.abc import Callable

from ..l03_causal_attention.mutation import GUARD, PRECONDITION, RAISE_CUT, RAISE_T, SQUARE
from ..requests import Request, calls, layer_requests

REQUESTS: dict[str, Callable[[], list[Request]]] = {
    "MultiHeadAttentionWrapper": lambda: layer_requests([4, 3, 8, 0.0, 3], 9, [4, 3, 8, 0.4, 2]),
    "MultiHeadAttention": lambda: layer_requests([4, 6, 8, 0.0, 3], 6, [4, 6, 8, 0.4, 3]),
    "wrapper_d_out": lambda: calls(([], {})),
    "gpt2_attention_parameters": lambda: calls(([], {})),
}
"""Per exercise: the requests (shapes the contract allows, none of them the suite's own)."""

JUDGED: list[tuple[str, str, tuple[str, ...], str]] = [
    (
        "MultiHeadAttention",
        GUARD,
        ("if num_tokens > self.mask.shape[0]: -> pass",),
        PRECONDITION,
    ),
    (
        "MultiHeadAttention",
        RAISE_T,
        (RAISE_CUT,),
        PRECONDITION,
    ),
    (
        "MultiHeadAttention",
        GUARD,
        ("0 -> 1", "0 -> -1"),
        SQUARE,
    ),
    (
        "MultiHeadAttention",
        "scores = queries @ keys.transpose(-2, -1) / self.head_dim ** 0.5",
        ("-2 -> 2",),
        "keys is always 4-d [batch, heads, T, head_dim]: dim 2 is dim -2",
    ),
]
"""Survivors a human judged equivalent: (exercise, statement, changes, why)."""
