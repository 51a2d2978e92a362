"""The requests mutation testing sends to tell an equivalent mutant from a survivor.

A mutant that the hidden suite does not kill is compared with the reference on requests
each lesson lists (its ``mutation.REQUESTS``): shapes the contract allows (batches,
non-square widths, several heads, fully masked rows, training mode), none of them the
suite's own. These are the pieces they are made of.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Request = tuple[str, dict[str, Any]]
"""(adapter method of :class:`attnkit.probe.Probe`, its keyword arguments)."""


def randn(*shape: int, seed: int, dtype: Any = np.float32) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def masked(seed: int) -> np.ndarray:
    """[2, 5, 5] logits with -inf entries and one fully masked row."""
    x = randn(2, 5, 5, seed=seed, dtype=np.float64) * 3
    x[0, 1] = -np.inf
    x[1, :, 3] = -np.inf
    return x


def calls(*requests: tuple[list[Any], dict[str, Any]]) -> list[Request]:
    return [("call", {"args": args, **({"kwargs": kw} if kw else {})}) for args, kw in requests]


def modules(*requests: tuple[list[Any], list[Any], dict[str, Any]]) -> list[Request]:
    return [("module", {"init_args": a, "inputs": x, **kw}) for a, x, kw in requests]


def logits(seed: int, dtype: Any = np.float64) -> np.ndarray:
    """[3, 4, 5] logits; one row spans +-1000, where only the max-shift stays finite."""
    x = randn(3, 4, 5, seed=seed, dtype=dtype) * 4
    x[1, 2] = [1000.0, -1000.0, 0.0, 999.0, -5.0]
    return x


def softmax_requests(axis: str, dtype: Any) -> list[Request]:
    """Every axis, the default one, masked rows, huge logits."""
    x = logits(1, dtype)
    return calls(
        *[([x], {axis: a}) for a in (-1, 0, 1, -2)],
        ([x], {}),
        ([masked(2).astype(dtype)], {}),
        ([x + 1000.0], {}),
    )


def qkv(seed: int, t_q: int = 4, t_k: int = 6) -> list[np.ndarray]:
    return [
        randn(2, 3, t_q, 5, seed=seed),
        randn(2, 3, t_k, 5, seed=seed + 1),
        randn(2, 3, t_k, 7, seed=seed + 2),
    ]


def sdpa_requests() -> list[Request]:
    """Masks of every rank (fully masked rows included), 3-d inputs, training mode."""
    blocked = np.random.default_rng(3).random((4, 6)) > 0.4
    blocked[1] = True
    per_head = np.random.default_rng(4).random((3, 4, 6)) > 0.6
    per_head[1, 2] = True
    three_d = [randn(2, 4, 5, seed=12), randn(2, 6, 5, seed=13), randn(2, 6, 7, seed=14)]
    return modules(
        ([0.0], qkv(1), {}),
        ([0.0], [*qkv(4), blocked], {}),
        ([0.0], [*qkv(4), per_head], {}),
        ([0.0], [*qkv(7, 5, 5), np.triu(np.ones((5, 5), dtype=bool), k=1)], {}),
        ([0.0], three_d, {}),
        ([0.0], [*three_d, blocked], {}),
        ([0.4], qkv(10), {"train": True, "forward_seed": 3}),
    )


def layer_requests(init: list[Any], width: int, train: list[Any] | None = None) -> list[Request]:
    """A layer on [batch, T, d_in] inputs: with gradients, with biases, and in training
    mode when ``train`` (init arguments with dropout) is given."""
    x = randn(3, 5, init[0], seed=5)
    found = modules(
        (init, [x], {"seed": 1, "grad_output": randn(3, 5, width, seed=6)}),
        (init, [x[:, :3]], {"seed": 2, "init_kwargs": {"qkv_bias": True}}),
    )
    if train:
        found += modules((train, [x], {"seed": 3, "train": True, "forward_seed": 4}))
    return found
