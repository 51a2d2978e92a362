"""Lesson 1's mutation testing: fresh inputs for each exercise, to tell an equivalent mutant
from a survivor, and the survivors a human judged equivalent to the reference, with why
(see :mod:`attnkit_autograder.quality.mutation`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..requests import Request, calls, randn, softmax_requests

SHAPE = "scale_scores(attention_scores(Q, K), K.shape[-1])"

REQUESTS: dict[str, Callable[[], list[Request]]] = {
    "softmax": lambda: softmax_requests("axis", np.float64),
    "scale_scores": lambda: calls(
        *[([randn(2, 3, 4, seed=d, dtype=np.float64), d], {}) for d in (1, 2, 7)]
    ),
    "attention_scores": lambda: calls(
        ([randn(2, 3, 4, seed=1), randn(2, 5, 4, seed=2)], {}),
        ([randn(3, 2, seed=3), randn(4, 2, seed=4)], {}),
    ),
    "causal_mask": lambda: calls(*[([n], {}) for n in range(1, 7)]),
    "self_attention": lambda: calls(
        *[
            (
                [
                    randn(2, 5, 3, seed=1),
                    randn(3, 4, seed=2),
                    randn(3, 4, seed=3),
                    randn(3, 2, seed=4),
                ],
                {"causal": c},
            )
            for c in (False, True)
        ]
    ),
    "embed_one_hot": lambda: calls(
        ([np.random.default_rng(1).integers(0, 7, size=(2, 3)), randn(7, 4, seed=2)], {})
    ),
}
"""Per exercise: the requests (shapes the contract allows, none of them the suite's own)."""

JUDGED: list[tuple[str, str, tuple[str, ...], str]] = [
    (
        "softmax",
        "x = np.asarray(x)",
        ("x = np.asarray(x) -> pass",),
        "x is always an ndarray",
    ),
    (
        "softmax",
        "if not np.issubdtype(x.dtype, np.floating):",
        ("if not np.issubdtype(x.dtype, np.floating): -> pass",),
        "np.exp of integers is float64 anyway",
    ),
    (
        "softmax",
        "x = x.astype(np.float64)",
        ("x = x.astype(np.float64) -> pass",),
        "np.exp of integers is float64 anyway",
    ),
    (
        "softmax",
        "shift = np.where(np.isfinite(shift), shift, 0.0)",
        ("0.0 -> 1.0",),
        "an all -inf slice gives exp(-inf) = 0 whatever finite shift it gets",
    ),
    (
        "scale_scores",
        "if d_k <= 0:",
        ("if d_k <= 0: -> pass", "d_k <= 0 -> d_k < 0", "0 -> -1"),
        "d_k > 0 is a precondition of the contract, not a checked error",
    ),
    (
        "scale_scores",
        "raise ValueError(f'd_k must be a positive width, got {d_k}')",
        ("raise ValueError(f'd_k must be a positive width, got {d_k}') -> pass",),
        "d_k > 0 is a precondition of the contract, not a checked error",
    ),
    (
        "self_attention",
        "scores = scale_scores(attention_scores(Q, K), K.shape[-1])",
        ("K.shape -> W_q.shape", "K.shape -> W_k.shape"),
        "W_q and W_k are [d_in, d_k]: their last axis is K's width",
    ),
    (
        "self_attention",
        "scores = np.where(causal_mask(X.shape[-2]), -np.inf, scores)",
        ("X.shape -> K.shape", "X.shape -> V.shape"),
        "K and V have one row per token of X",
    ),
    (
        "embed_one_hot",
        "token_ids = np.asarray(token_ids)",
        ("token_ids = np.asarray(token_ids) -> pass",),
        "token_ids is always an ndarray",
    ),
]
"""Survivors a human judged equivalent: (exercise, statement, changes, why)."""
