"""Lesson 1's heatmaps in the feedback report: the pipeline that draws them from an
implementation's own answers, and whether its attention is causal."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..heatmap_inputs import D_K, D_V, Pipeline, embeddings, pair_weights, projection, sentence

CAUSAL = True


def pipeline(impl: Any, n: int) -> Pipeline:
    """The student's self_attention with causal=True (their mask, scaling and softmax)."""
    ids, _ = sentence()
    x = embeddings(ids, np.float64)
    weights = [projection(1, D_K, np.float64), projection(2, D_K, np.float64)]
    kwargs = {"args": [x, *weights, projection(3, D_V, np.float64)], "kwargs": {"causal": True}}

    def maps() -> list[np.ndarray]:
        result = impl.run("call_function", name="self_attention", framework="numpy", **kwargs)
        return [pair_weights(result)]

    return [(["self_attention(..., causal=True)"], maps)]
