"""Lesson 5's heatmaps in the feedback report: the pipeline that draws them from an
implementation's own answers, and whether its attention is causal."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..heatmap_inputs import HEADS, HEATMAP_WIDTH, Pipeline, embeddings, projection, sentence

CAUSAL = True


def pipeline(impl: Any, n: int) -> Pipeline:
    """Each head's weights as lesson 5's layer keeps them (``last_weights``), on the
    sentence's embeddings with fixed projections: the layer's own record of its forward pass."""
    ids, _ = sentence()
    x = embeddings(ids, np.float32)[None]
    width = HEATMAP_WIDTH
    state = {
        "W_query.weight": projection(31, width, np.float32).T,
        "W_key.weight": projection(32, width, np.float32).T,
        "W_value.weight": projection(33, width, np.float32).T,
        "out_proj.weight": np.eye(width, dtype=np.float32),
        "out_proj.bias": np.zeros(width, dtype=np.float32),
    }

    def maps() -> list[np.ndarray]:
        out = impl.run(
            "run_module",
            name="MultiHeadAttention",
            init_args=[width, width, n, 0.0, HEADS],
            inputs=[x],
            state=state,
            keep=["last_weights"],
        )
        kept = out["kept"]["last_weights"]
        array = np.asarray(kept.get("array"), dtype=np.float64)
        if array.shape != (1, HEADS, n, n):
            raise ValueError(
                f"self.last_weights has shape {list(array.shape)}, expected [1, {HEADS}, {n}, {n}]"
            )
        return [array[0, h] for h in range(HEADS)]

    return [([f"MultiHeadAttention, head {h}" for h in range(HEADS)], maps)]
