"""Lesson 6's heatmaps in the feedback report: the pipeline that draws them from an
implementation's own answers, and whether its attention is causal."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..heatmap_inputs import HEADS, Maps, Pipeline, embeddings, projection, sentence

CAUSAL = True
CHUNKS = (4, 3, 1, 1, 1)
"""The sentence's 10 tokens fed as a prompt in two chunks, then one token at a time: every
map is the pattern the layer computed with its cache."""
WINDOW = 4


def pipeline(impl: Any, n: int) -> Pipeline:
    """Each query head's weights, read off the output of the student's
    GroupedQueryAttention (two query heads sharing one key/value head), fed the sentence in
    chunks with its cache: without a window, and with a window of 4.

    The input is each token's position as a one-hot vector followed by its embedding.
    Queries and keys come from the embedding (RoPE rotates them); the shared value head is
    the position one-hot and out_proj the identity, so output row i of head h is row i of
    that head's attention weights, over the keys' absolute positions, whatever the cache
    kept: the weights come out of the student's own cached forward pass.
    """
    ids, _ = sentence()
    x = np.concatenate([np.eye(n, dtype=np.float32), embeddings(ids, np.float32)], axis=1)
    d_in = x.shape[1]
    blank = np.zeros((n, n), dtype=np.float32)
    state = {
        "W_query.weight": np.vstack(
            [np.hstack([blank, projection(10 + h, n, np.float32).T]) for h in range(HEADS)]
        ),
        "W_key.weight": np.hstack([blank, projection(20, n, np.float32).T]),
        "W_value.weight": np.hstack(
            [np.eye(n, dtype=np.float32), np.zeros((n, d_in - n), np.float32)]
        ),
        "out_proj.weight": np.eye(HEADS * n, dtype=np.float32),
        "out_proj.bias": np.zeros(HEADS * n, dtype=np.float32),
    }
    sizes = [*CHUNKS[:-1], n - sum(CHUNKS[:-1])]  # the last chunk: the rest of the sentence
    chunks = np.split(x[None], np.cumsum(sizes)[:-1], axis=1)

    def layer(window: int | None) -> Maps:
        def maps() -> list[np.ndarray]:
            out = impl.run(
                "decode",
                name="GroupedQueryAttention",
                init_args=[d_in, HEADS * n, n, HEADS, 1, window],
                chunks=chunks,
                state=state,
            )
            arrays = [np.asarray(c.get("array"), dtype=np.float64) for c in out["chunks"]]
            if any(a.ndim != 3 or a.shape[-1] != HEADS * n for a in arrays):
                raise ValueError(
                    f"GroupedQueryAttention returned chunks of shapes "
                    f"{[list(a.shape) for a in arrays]}, expected [1, t, {HEADS * n}]"
                )
            rows = np.concatenate(arrays, axis=1)[0]
            return [rows[:, h * n : (h + 1) * n] for h in range(HEADS)]

        return maps

    return [
        (
            [f"GroupedQueryAttention{label}, head {h} (cached, in chunks)" for h in range(HEADS)],
            layer(window),
        )
        for label, window in (("", None), (f", window {WINDOW}", WINDOW))
    ]
