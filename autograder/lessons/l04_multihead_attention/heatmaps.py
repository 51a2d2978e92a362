"""Lesson 4's heatmaps in the feedback report: the pipeline that draws them from an
implementation's own answers, and whether its attention is causal."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..heatmap_inputs import HEADS, Maps, Pipeline, embeddings, projection, sentence

CAUSAL = True


def pipeline(impl: Any, n: int) -> Pipeline:
    """Each head's weights, read off the output of the wrapper and of the fused layer.

    The input is each token's position as a one-hot vector followed by its embedding.
    Queries and keys come from the embedding; every head's values are the position
    one-hot, and out_proj is the identity, so output row i of head h is row i of that
    head's attention weights: the weights come out of the student's own forward pass.
    """
    ids, _ = sentence()
    x = np.concatenate([np.eye(n, dtype=np.float32), embeddings(ids, np.float32)], axis=1)
    d_in = x.shape[1]

    def head(h: int) -> dict[str, np.ndarray]:
        features = np.zeros((n, n), dtype=np.float32)
        return {
            "W_query.weight": np.hstack([features, projection(10 + h, n, np.float32).T]),
            "W_key.weight": np.hstack([features, projection(20 + h, n, np.float32).T]),
            "W_value.weight": np.hstack(
                [np.eye(n, dtype=np.float32), np.zeros((n, d_in - n), np.float32)]
            ),
        }

    heads = [head(h) for h in range(HEADS)]
    wrapper_state = {f"heads.{h}.{name}": w for h in range(HEADS) for name, w in heads[h].items()}
    fused_state = {name: np.vstack([heads[h][name] for h in range(HEADS)]) for name in heads[0]} | {
        "out_proj.weight": np.eye(HEADS * n, dtype=np.float32),
        "out_proj.bias": np.zeros(HEADS * n, dtype=np.float32),
    }

    def module(name: str, init: list[Any], state: dict[str, np.ndarray]) -> Maps:
        def maps() -> list[np.ndarray]:
            out = impl.run("run_module", name=name, init_args=init, inputs=[x[None]], state=state)
            array = np.asarray(out["out"].get("array"), dtype=np.float64)
            if array.shape != (1, n, HEADS * n):
                raise ValueError(
                    f"{name} returned shape {list(array.shape)}, expected [1, {n}, {HEADS * n}]"
                )
            return [array[0, :, h * n : (h + 1) * n] for h in range(HEADS)]

        return maps

    return [
        (
            [f"{name}, head {h}" for h in range(HEADS)],
            module(name, init, state),
        )
        for name, init, state in (
            ("MultiHeadAttentionWrapper", [d_in, n, n, 0.0, HEADS], wrapper_state),
            ("MultiHeadAttention", [d_in, HEADS * n, n, 0.0, HEADS], fused_state),
        )
    ]
