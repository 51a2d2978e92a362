"""Heatmap collection: the attention weights a student's own pipeline gives, and the
reference's, on the same inputs the grader chooses.

Every map is computed from what the student's code returned for inputs chosen here,
through the adapters (``impl.run``), never from anything else the sandbox reports. The
reference runs the very same calls, so the two maps differ exactly where the student's
pipeline does. Rendering them is :mod:`attnkit_autograder.classes.feedback`'s job.
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


def lesson_1(impl: Any, n: int) -> Pipeline:
    """The student's self_attention with causal=True (their mask, scaling and softmax)."""
    ids, _ = sentence()
    x = embeddings(ids, np.float64)
    weights = [projection(1, D_K, np.float64), projection(2, D_K, np.float64)]
    kwargs = {"args": [x, *weights, projection(3, D_V, np.float64)], "kwargs": {"causal": True}}

    def maps() -> list[np.ndarray]:
        result = impl.run("call_function", name="self_attention", framework="numpy", **kwargs)
        return [pair_weights(result)]

    return [(["self_attention(..., causal=True)"], maps)]


def lesson_2(impl: Any, n: int) -> Pipeline:
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


def lesson_3(impl: Any, n: int) -> Pipeline:
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


def lesson_4(impl: Any, n: int) -> Pipeline:
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


def lesson_5(impl: Any, n: int) -> Pipeline:
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


PIPELINES = {
    "01_numpy_attention": (lesson_1, True),
    "02_self_attention": (lesson_2, False),
    "03_causal_attention": (lesson_3, True),
    "04_multihead_attention": (lesson_4, True),
    "05_watch_attention_learn": (lesson_5, True),
}
"""Per lesson: the pipeline that draws its maps, and whether its attention is causal."""


def findings(weights: np.ndarray, reference: np.ndarray, causal: bool) -> list[str]:
    """What anyone can read off the map, spelled out: NaN, rows that do not sum to 1,
    (for causal attention) weight on later tokens, and where it differs from the
    reference's map. Facts about the values only, so a wrong pipeline never passes as right."""
    found = []
    with np.errstate(invalid="ignore"):
        gap = np.nan_to_num(np.abs(weights - reference), nan=np.inf)
    if gap.max() > 1e-4:
        i, j = np.unravel_index(np.argmax(gap), gap.shape)
        found.append(
            f"differs from the reference map by up to {gap[i, j]:.3g} "
            f"(query {i}, key {j}: {weights[i, j]:.3g} instead of {reference[i, j]:.3g})"
        )
    if not np.isfinite(weights).all():
        found.append(f"{int((~np.isfinite(weights)).sum())} weight(s) are NaN or infinite")
    sums = weights.sum(axis=-1)
    if np.isfinite(sums).all() and not np.allclose(sums, 1.0, atol=1e-3):
        found.append(f"rows sum to between {sums.min():.3g} and {sums.max():.3g}, not 1")
    if causal:
        future = np.triu(np.nan_to_num(np.abs(weights), nan=1.0), k=1)
        if future.max() > LEAK:
            i, j = np.unravel_index(np.argmax(future), future.shape)
            found.append(
                f"causal leak: {int((future > LEAK).sum())} weight(s) on later tokens, "
                f"the largest {future[i, j]:.3g} (query {i} looking at key {j})"
            )
    return found


def computed(maps: Maps, count: int, n: int) -> list[np.ndarray] | str:
    """A group's maps, or why they could not be drawn (the student's code may fail in any way,
    return anything, or be cut short: that is said, never raised)."""
    try:
        arrays = maps()
        if len(arrays) != count or any(np.shape(a) != (n, n) for a in arrays):
            return f"weights of shape {[list(np.shape(a)) for a in arrays]}, expected [{n}, {n}]"
        return [np.asarray(a, dtype=np.float64) for a in arrays]
    except Exception as exc:
        return f"{getattr(exc, 'type_name', type(exc).__name__)}: {exc}"[:200]


def collect_heatmap(slug: str, submission: Any, reference: Any) -> dict[str, Any] | None:
    """The student's and the reference's attention maps on the same inputs (or why not), one
    group of maps per exercise, each drawn or explained on its own."""
    if slug not in PIPELINES:
        return None
    pipeline, causal = PIPELINES[slug]
    _, labels = sentence()
    n = len(labels)
    maps = []
    for (titles, want), (_, got) in zip(
        pipeline(reference, n), pipeline(submission, n), strict=True
    ):
        expected = computed(want, len(titles), n)
        if isinstance(expected, str):
            raise RuntimeError(f"the reference pipeline failed: {expected}")
        student = computed(got, len(titles), n)
        for index, title in enumerate(titles):
            entry: dict[str, Any] = {"title": title, "reference": expected[index].tolist()}
            if isinstance(student, str):
                entry |= {"student": None, "student_error": student, "findings": []}
            else:
                weights = student[index]
                entry |= {
                    "student": weights.tolist(),
                    "findings": findings(weights, expected[index], causal),
                }
            maps.append(entry)
    return {"tokens": labels, "causal": causal, "maps": maps}
