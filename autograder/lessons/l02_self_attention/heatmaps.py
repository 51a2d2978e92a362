"""Lesson 2's heatmaps in the feedback report: the pipeline that draws them from an
implementation's own answers, and whether its attention is causal."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..heatmap_inputs import (
    HEATMAP_WIDTH,
    Maps,
    Pipeline,
    embeddings,
    pair_weights,
    projection,
    sentence,
)

CAUSAL = False


def pipeline(impl: Any, n: int) -> Pipeline:
    """simple_attention_matrix's weights, and SelfAttention_v1's and v2's read off their
    outputs: the input is each token's position as a one-hot vector followed by its
    embedding; queries and keys come from the embedding and the values are the one-hot
    positions, so output row i is row i of the module's own attention weights."""
    ids, _ = sentence()
    emb = embeddings(ids, np.float32)
    x = np.concatenate([np.eye(n, dtype=np.float32), emb], axis=1)
    zeros = np.zeros((n, n), dtype=np.float32)
    query = np.vstack([zeros, projection(1, n, np.float32)])  # [d_in, n], as x @ W
    key = np.vstack([zeros, projection(2, n, np.float32)])
    value = np.vstack([np.eye(n, dtype=np.float32), np.zeros((HEATMAP_WIDTH, n), np.float32)])

    def matrix() -> list[np.ndarray]:
        result = impl.run(
            "call_function",
            name="simple_attention_matrix",
            args=[emb / 2],  # smaller inputs: a map that is not one-hot
            kwargs={},
            framework="torch",
        )
        return [pair_weights(result)]

    def module(name: str, state: dict[str, np.ndarray]) -> Maps:
        def maps() -> list[np.ndarray]:
            out = impl.run(
                "run_module", name=name, init_args=[x.shape[1], n], inputs=[x], state=state
            )
            array = np.asarray(out["out"].get("array"), dtype=np.float64)
            if array.shape != (n, n):
                raise ValueError(f"{name} returned shape {list(array.shape)}, expected [{n}, {n}]")
            return [array]

        return maps

    v1 = {"W_query": query, "W_key": key, "W_value": value}
    v2 = {f"{k}.weight": w.T.copy() for k, w in v1.items()}  # nn.Linear stores [d_out, d_in]
    return [
        (["simple_attention_matrix"], matrix),
        (["SelfAttention_v1"], module("SelfAttention_v1", v1)),
        (["SelfAttention_v2"], module("SelfAttention_v2", v2)),
    ]
