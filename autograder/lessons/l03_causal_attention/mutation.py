"""Lesson 3's mutation testing: fresh inputs for each exercise, to tell an equivalent mutant
from a survivor, and the survivors a human judged equivalent to the reference, with why
(see :mod:`attnkit_autograder.quality.mutation`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..requests import Request, calls, layer_requests, randn, sdpa_requests

GUARD = "if num_tokens > self.mask.shape[0]:"
RAISE_T = (
    "raise ValueError(f'input has {num_tokens} tokens but context_length is {self.mask.shape[0]}')"
)
RAISE_CUT = "raise ValueError(f'input has {num_tokens} tokens but cont... -> pass"
PRECONDITION = "T <= context_length is the caller's promise (contract), not a checked error"
SQUARE = "the mask buffer is square: shape[1] and shape[-1] are shape[0]"

REQUESTS: dict[str, Callable[[], list[Request]]] = {
    "causal_mask": lambda: calls(*[([n], {}) for n in range(1, 7)]),
    "apply_causal_mask": lambda: calls(
        ([randn(2, 5, 5, seed=1)], {}), ([randn(4, 4, seed=2, dtype=np.float64)], {})
    ),
    "ScaledDotProductAttention": sdpa_requests,
    "CausalAttention": lambda: layer_requests([4, 3, 8, 0.0], 3, [4, 3, 8, 0.4]),
}
"""Per exercise: the requests (shapes the contract allows, none of them the suite's own)."""

JUDGED: list[tuple[str, str, tuple[str, ...], str]] = [
    (
        "apply_causal_mask",
        "return scores.masked_fill(causal_mask(scores.shape[-1]).to(scores.device), -torch.inf)",
        ("1 -> 2",),
        "scores is square by contract: shape[-2] is shape[-1]",
    ),
    (
        "ScaledDotProductAttention",
        "scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5",
        ("k.shape -> q.shape",),
        "q and k are both d_k wide",
    ),
    (
        "CausalAttention",
        GUARD,
        ("if num_tokens > self.mask.shape[0]: -> pass",),
        PRECONDITION,
    ),
    (
        "CausalAttention",
        RAISE_T,
        (RAISE_CUT,),
        PRECONDITION,
    ),
    (
        "CausalAttention",
        GUARD,
        ("0 -> 1", "0 -> -1"),
        SQUARE,
    ),
]
"""Survivors a human judged equivalent: (exercise, statement, changes, why)."""
