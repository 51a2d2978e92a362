"""Lesson 3's heatmaps in the feedback report: the pipeline that draws them from an
implementation's own answers, and whether its attention is causal."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..heatmap_inputs import D_K, D_V, Pipeline, embeddings, pair_weights, projection, sentence

CAUSAL = True


def pipeline(impl: Any, n: int) -> Pipeline:
    """The student's causal_mask fed to the student's ScaledDotProductAttention."""
    ids, _ = sentence()
    x = embeddings(ids, np.float32)
    q, k = x @ projection(1, D_K, np.float32), x @ projection(2, D_K, np.float32)
    v = x @ projection(3, D_V, np.float32)

    def maps() -> list[np.ndarray]:
        mask = impl.run("call_function", name="causal_mask", args=[n], kwargs={}, framework="torch")
        if "array" not in mask["out"]:
            raise ValueError("causal_mask did not return a tensor")
        result = impl.run(
            "run_module",
            name="ScaledDotProductAttention",
            init_args=[],
            inputs=[q[None, None], k[None, None], v[None, None], mask["out"]["array"]],
        )
        weights = pair_weights(result)
        return [weights.reshape(weights.shape[-2:])]

    return [(["causal_mask + ScaledDotProductAttention"], maps)]
