"""Lesson 2's mutation testing: fresh inputs for each exercise, to tell an equivalent mutant
from a survivor, and the survivors a human judged equivalent to the reference, with why
(see :mod:`attnkit_autograder.quality.mutation`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..requests import Request, calls, layer_requests, modules, randn, softmax_requests

REQUESTS: dict[str, Callable[[], list[Request]]] = {
    "softmax": lambda: softmax_requests("dim", np.float32),
    "simple_attention_loop": lambda: calls(([randn(5, 3, seed=1)], {})),
    "simple_attention_matrix": lambda: calls(
        ([randn(5, 3, seed=1)], {}), ([randn(2, 4, 3, seed=2)], {})
    ),
    "SelfAttention_v1": lambda: modules(
        ([4, 3], [randn(2, 5, 4, seed=1)], {"seed": 1, "grad_output": randn(2, 5, 3, seed=2)}),
        ([4, 3], [randn(5, 4, seed=3)], {"seed": 2}),
    ),
    "SelfAttention_v2": lambda: layer_requests([4, 3], 3),
    "copy_v2_weights_into_v1": lambda: [
        ("transfer", {"d_in": 4, "d_out": 3, "seed": 1}),
        ("transfer", {"d_in": 3, "d_out": 3, "seed": 2, "qkv_bias": True}),
    ],
}
"""Per exercise: the requests (shapes the contract allows, none of them the suite's own)."""

JUDGED: list[tuple[str, str, tuple[str, ...], str]] = [
    (
        "softmax",
        "shift = x.amax(dim=dim, keepdim=True).detach()",
        ("x.amax(dim=dim, keepdim=True).detach() -> x.amax(dim=dim, keepdim=True)",),
        "same values; softmax is shift-invariant, so no gradient flows through the shift",
    ),
    (
        "simple_attention_loop",
        "weights = softmax(scores, dim=-1)",
        ("-1 -> 1",),
        "scores is [T, T]: dim 1 is dim -1",
    ),
    (
        "simple_attention_loop",
        "scores[i, j] = torch.dot(inputs[i], inputs[j])",
        ("(i, j) -> (j, i)",),
        "the dot product is symmetric and every pair is filled",
    ),
    (
        "SelfAttention_v1",
        "weights = softmax(scores / keys.shape[-1] ** 0.5, dim=-1)",
        ("keys.shape -> queries.shape", "keys.shape -> values.shape"),
        "queries, keys and values are all d_out wide",
    ),
    (
        "SelfAttention_v2",
        "weights = softmax(scores / keys.shape[-1] ** 0.5, dim=-1)",
        ("keys.shape -> queries.shape", "keys.shape -> values.shape"),
        "queries, keys and values are all d_out wide",
    ),
    (
        "copy_v2_weights_into_v1",
        "if target.shape != linear.weight.T.shape:",
        ("if target.shape != linear.weight.T.shape: -> pass",),
        "same d_in and d_out is the caller's promise (contract), not a checked error",
    ),
    (
        "copy_v2_weights_into_v1",
        "raise ValueError(f\"{name}: v1 holds {tuple(target.shape)} but v2's transposed "
        'weight is {tuple(linear.weight.T.shape)}; build both with the same d_in and d_out")',
        ('raise ValueError(f"{name}: v1 holds {tuple(target.shape)}... -> pass',),
        "same d_in and d_out is the caller's promise (contract), not a checked error",
    ),
]
"""Survivors a human judged equivalent: (exercise, statement, changes, why)."""
