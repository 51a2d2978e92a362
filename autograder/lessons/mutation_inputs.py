"""Fresh random inputs for each exercise, to tell an equivalent mutant from a survivor.

A mutant that the hidden suite does not kill is compared with the reference on the
requests below: shapes the contract allows (batches, non-square widths, several heads,
fully masked rows, training mode), none of them the suite's own. If every answer agrees,
the mutant is *likely equivalent*; if one differs, the suite has a gap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from attnkit.assignments import ASSIGNMENTS
from attnkit.implementation import RECORDER_KEYS, LocalImplementation
from attnkit.probe import Probe

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


REQUESTS: dict[tuple[str, str], Callable[[], list[Request]]] = {
    ("01_numpy_attention", "softmax"): lambda: softmax_requests("axis", np.float64),
    ("01_numpy_attention", "scale_scores"): lambda: calls(
        *[([randn(2, 3, 4, seed=d, dtype=np.float64), d], {}) for d in (1, 2, 7)]
    ),
    ("01_numpy_attention", "attention_scores"): lambda: calls(
        ([randn(2, 3, 4, seed=1), randn(2, 5, 4, seed=2)], {}),
        ([randn(3, 2, seed=3), randn(4, 2, seed=4)], {}),
    ),
    ("01_numpy_attention", "causal_mask"): lambda: calls(*[([n], {}) for n in range(1, 7)]),
    ("01_numpy_attention", "self_attention"): lambda: calls(
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
    ("01_numpy_attention", "embed_one_hot"): lambda: calls(
        ([np.random.default_rng(1).integers(0, 7, size=(2, 3)), randn(7, 4, seed=2)], {})
    ),
    ("02_self_attention", "softmax"): lambda: softmax_requests("dim", np.float32),
    ("02_self_attention", "simple_attention_loop"): lambda: calls(([randn(5, 3, seed=1)], {})),
    ("02_self_attention", "simple_attention_matrix"): lambda: calls(
        ([randn(5, 3, seed=1)], {}), ([randn(2, 4, 3, seed=2)], {})
    ),
    ("02_self_attention", "SelfAttention_v1"): lambda: modules(
        ([4, 3], [randn(2, 5, 4, seed=1)], {"seed": 1, "grad_output": randn(2, 5, 3, seed=2)}),
        ([4, 3], [randn(5, 4, seed=3)], {"seed": 2}),
    ),
    ("02_self_attention", "SelfAttention_v2"): lambda: layer_requests([4, 3], 3),
    ("02_self_attention", "copy_v2_weights_into_v1"): lambda: [
        ("transfer", {"d_in": 4, "d_out": 3, "seed": 1}),
        ("transfer", {"d_in": 3, "d_out": 3, "seed": 2, "qkv_bias": True}),
    ],
    ("03_causal_attention", "causal_mask"): lambda: calls(*[([n], {}) for n in range(1, 7)]),
    ("03_causal_attention", "apply_causal_mask"): lambda: calls(
        ([randn(2, 5, 5, seed=1)], {}), ([randn(4, 4, seed=2, dtype=np.float64)], {})
    ),
    ("03_causal_attention", "ScaledDotProductAttention"): sdpa_requests,
    ("03_causal_attention", "CausalAttention"): lambda: layer_requests(
        [4, 3, 8, 0.0], 3, [4, 3, 8, 0.4]
    ),
    ("04_multihead_attention", "MultiHeadAttentionWrapper"): lambda: layer_requests(
        [4, 3, 8, 0.0, 3], 9, [4, 3, 8, 0.4, 2]
    ),
    ("04_multihead_attention", "MultiHeadAttention"): lambda: layer_requests(
        [4, 6, 8, 0.0, 3], 6, [4, 6, 8, 0.4, 3]
    ),
    ("04_multihead_attention", "wrapper_d_out"): lambda: calls(([], {})),
    ("04_multihead_attention", "gpt2_attention_parameters"): lambda: calls(([], {})),
}


def answer(namespace: Mapping[str, Any], slug: str, exercise: str, request: Request) -> Any:
    """What the implementation answers to one request: its result, or the error it raised."""
    assignment = ASSIGNMENTS[slug]
    probe = Probe(
        LocalImplementation(namespace), assignment.exercise(exercise), assignment.framework
    )
    method, kwargs = request
    try:
        if method == "call":
            result = probe.call(*kwargs["args"], **kwargs.get("kwargs", {}))
        else:
            result = getattr(probe, method)(**kwargs)
    except Exception as exc:
        return f"raised {type(exc).__name__}"
    return {k: v for k, v in result.items() if k not in (*RECORDER_KEYS, "params")}


def same(a: Any, b: Any) -> bool:
    """Equal structure; arrays equal in shape and dtype and close in value (NaN == NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind not in "fc":
            return bool(np.array_equal(a, b))
        return bool(np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
    return bool(a == b)


def agrees(
    slug: str, exercise: str, reference: Mapping[str, Any], mutant: Mapping[str, Any]
) -> bool:
    """Whether the mutant answers every request of the exercise as the reference does
    (never, for an exercise with no requests here: its survivors are reported as gaps)."""
    if (slug, exercise) not in REQUESTS:
        return False
    for request in REQUESTS[(slug, exercise)]():
        want = answer(reference, slug, exercise, request)
        if isinstance(want, str):
            raise AssertionError(f"the reference {want} on {exercise} {request}: fix the request")
        if not same(want, answer(mutant, slug, exercise, request)):
            return False
    return True
