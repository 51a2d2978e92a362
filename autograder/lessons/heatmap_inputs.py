"""The inputs a lesson's heatmaps are drawn on, and the pieces each lesson's pipeline is
made of (its ``heatmaps.py``): the first tokens of the-verdict.txt, a fixed embedding per
token, fixed projections.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

HEATMAP_TOKENS = 10
HEATMAP_WIDTH = 8
D_K, D_V = 4, 6  # different on purpose: scaling by the wrong width must show
HEADS = 2
LEAK = 1e-6
"""A weight above this on a later token is a causal leak."""


@functools.cache
def sentence() -> tuple[list[int], list[str]]:
    """The first tokens of the-verdict.txt, and how each one reads."""
    from attnkit_data import gpt2_tokenizer, read_verdict

    tokenizer = gpt2_tokenizer()
    ids = tokenizer.encode(read_verdict())[:HEATMAP_TOKENS]
    return ids, [tokenizer.decode([i]) for i in ids]


def embeddings(ids: list[int], dtype: Any) -> np.ndarray:
    """A fixed vector per token id (seeded by the id), so every run draws the same map."""
    rows = [np.random.default_rng(i).normal(size=HEATMAP_WIDTH) for i in ids]
    return np.stack(rows).astype(dtype)


def projection(seed: int, width: int, dtype: Any, rows: int = HEATMAP_WIDTH) -> np.ndarray:
    return (np.random.default_rng(seed).normal(size=(rows, width)) / 2).astype(dtype)


def pair_weights(result: dict[str, Any]) -> np.ndarray:
    """The weights of an (output, weights) pair an exercise returned."""
    out = result["out"]
    if out.get("kind") != "sequence" or len(out["items"]) != 2 or "array" not in out["items"][1]:
        raise ValueError("did not return a pair (output, weights)")
    return np.asarray(out["items"][1]["array"], dtype=np.float64)


Maps = Callable[[], list[np.ndarray]]
Pipeline = list[tuple[list[str], Maps]]
"""Groups of maps: their titles, and how to compute them from one implementation (each
group is computed on its own, so one exercise that fails leaves the others' maps)."""
