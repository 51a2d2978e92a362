"""Visible checks for lesson 6, attention at inference.

The caches are checked against what they were fed (every key and value comes back, in
order); the masks against patterns written out by hand; ``rope`` against angles worked out
by hand and against its two defining properties (pairs keep their length, only distances
matter); the layer, the model and generation against themselves: a prompt fed in chunks,
then one token at a time, must give what one pass without a cache gives. The one oracle
for the layer's values is uniform attention (zero queries and keys), where each query head
averages the values of its own key/value head over the keys it may see.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..compare import CheckFailed, expect_array, expect_kind, expect_shape, expect_unchanged, part
from ..probe import Probe
from .dtypes import expect_dtype
from .registry import visible

SLUG = "06_attention_at_inference"
T = {"kind": "tensor"}


# -- the caches --------------------------------------------------------------------------------


def fed(seed: int, sizes: tuple[int, ...], heads: int = 2, dim: int = 4) -> list[np.ndarray]:
    """New keys (or values) for each call: [1, heads, t, dim] float32 for each t in sizes."""
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(1, heads, t, dim)).astype(np.float32) for t in sizes]


def calls(keys: list[np.ndarray], values: list[np.ndarray]) -> list[dict[str, Any]]:
    return [{"keys": k, "values": v} for k, v in zip(keys, values, strict=True)]


def position(step: dict[str, Any], what: str) -> int:
    value = step["position"]
    if value.get("kind") != "number" or value["array"].ndim != 0:
        raise CheckFailed(
            f"self.position is {value.get('kind')} after {what}, expected a whole number",
            "position counts the tokens the cache holds (or has seen): a Python int.",
        )
    return int(value["array"])


def expect_position(step: dict[str, Any], expected: int, what: str) -> None:
    got = position(step, what)
    if got != expected:
        raise CheckFailed(
            f"self.position is {got} after {what}, expected {expected}",
            "Each call moves the position on by the number of new tokens, t.",
        )


def raised(report: dict[str, Any]) -> str:
    """What a step that refused says (any other error ends the call, and is reported so)."""
    return f"raised {report['raised']} (the cache refused the new tokens)"


def expect_no_error(step: dict[str, Any], what: str) -> None:
    if step["raised"] is not None:
        raise CheckFailed(f"{what} {raised(step)}")


def expect_returned(
    step: dict[str, Any], keys: np.ndarray, values: np.ndarray, what: str, exercise: str
) -> None:
    """The call returned (keys, values) equal to these, float32."""
    expect_no_error(step, what)
    got_keys, got_values = pair_of(step["out"], exercise)
    expect_dtype(got_keys, np.float32, kind="tensor", what=f"the keys {what} returned")
    expect_array(got_keys, keys, what=f"the keys {what} returned", **T)
    expect_array(got_values, values, what=f"the values {what} returned", **T)


def pair_of(value: dict[str, Any], exercise: str) -> tuple[dict[str, Any], dict[str, Any]]:
    if value["kind"] != "sequence" or len(value["items"]) != 2:
        raise CheckFailed(
            f"{exercise} should return a pair (keys, values), but returned "
            f"{'nothing' if value['kind'] == 'none' else value['kind']}",
            "Return both: `return keys, values`.",
            stage="kind",
        )
    return value["items"][0], value["items"][1]


KV = [1, 2, 8, 4]
"""KVCache(batch=1, heads=2, max_tokens=8, head_dim=4)."""


@visible(
    SLUG,
    "KVCache",
    "a prompt, then one token at a time: every token so far comes back, the new ones last",
    contract=(
        "two float32 tensors [batch, heads, position + t, head_dim]",
        "the new ones last",
        "self.position grows by t",
    ),
)
def cache_grows(probe: Probe) -> None:
    sizes = (3, 1, 1)
    keys, values = fed(6601, sizes), fed(6602, sizes)
    steps = probe.cache_steps(KV, calls(keys, values))["steps"]
    total = 0
    for number, (step, t) in enumerate(zip(steps, sizes, strict=True)):
        total += t
        what = f"call {number + 1} (feeding {t} token{'s' if t > 1 else ''})"
        expect_returned(
            step,
            np.concatenate(keys[: number + 1], axis=2),
            np.concatenate(values[: number + 1], axis=2),
            what,
            "KVCache",
        )
        expect_position(step, total, what)


@visible(
    SLUG,
    "KVCache",
    "a full cache refuses more with a ValueError and changes nothing; reset starts over",
    contract=("ValueError when position + t > max_tokens, and then nothing changes",),
)
def cache_refuses_overflow(probe: Probe) -> None:
    sizes = (3, 5, 1)  # 3 + 5 fills all 8 slots exactly; one more does not fit
    keys, values = fed(6603, sizes), fed(6604, sizes)
    more = fed(6605, (2,))
    steps = probe.cache_steps(
        KV, [*calls(keys, values), {"reset": True}, *calls(more, fed(6606, (2,)))]
    )["steps"]
    expect_no_error(steps[1], "filling the last free slots (3 + 5 tokens in a cache of 8)")
    expect_returned(
        steps[1],
        np.concatenate(keys[:2], axis=2),
        np.concatenate(values[:2], axis=2),
        "the call that fills the cache",
        "KVCache",
    )
    if steps[2]["raised"] != "ValueError":
        said = f"raised {steps[2]['raised']}" if steps[2]["raised"] else "did not raise"
        raise CheckFailed(
            f"a 9th token in a cache of 8 {said}, expected ValueError",
            "Check that the new tokens fit before writing them, and raise ValueError with a "
            "message that says how many do not fit.",
        )
    expect_position(steps[2], 8, "the refused call")
    expect_position(steps[3], 0, "reset()")
    expect_returned(
        steps[4], more[0], fed(6606, (2,))[0], "the first call after reset()", "KVCache"
    )
    expect_position(steps[4], 2, "the first call after reset()")


# -- the masks ---------------------------------------------------------------------------------


def drawn(*rows: str) -> np.ndarray:
    """A mask written out by hand: '.' a key the query sees, 'x' a blocked key."""
    return np.array([[c == "x" for c in row] for row in rows], dtype=bool)


CHUNKS = {
    (3, 3): drawn(".xx", "..x", "..."),
    (2, 5): drawn("....x", "....."),
    (1, 4): drawn("...."),
    (3, 6): drawn("....xx", ".....x", "......"),
}


@visible(
    SLUG,
    "chunk_causal_mask",
    "the last queries of a longer run: aligned bottom-right, True where blocked",
    contract=(
        "a bool tensor [num_queries, num_keys]",
        "True where key j > i + (num_keys - num_queries)",
    ),
)
def chunk_masks(probe: Probe) -> None:
    for (queries, keys), expected in CHUNKS.items():
        got = probe.call(queries, keys)["out"]
        what = f"chunk_causal_mask({queries}, {keys})"
        expect_dtype(got, np.bool_, kind="tensor", what=what)
        expect_array(got, expected, what=what, **T)


WINDOWS = {
    (4, 4, 2): drawn(".xxx", "..xx", "x..x", "xx.."),
    (2, 6, 3): drawn("xx...x", "xxx..."),
    (3, 3, 5): drawn(".xx", "..x", "..."),
    (1, 5, 1): drawn("xxxx."),
    (3, 5, 2): drawn("x..xx", "xx..x", "xxx.."),
}


@visible(
    SLUG,
    "sliding_window_mask",
    "each query sees itself and the window - 1 keys before it, aligned bottom-right",
    contract=(
        "a bool tensor [num_queries, num_keys]",
        "True where key j > p or j <= p - window",
    ),
)
def window_masks(probe: Probe) -> None:
    for (queries, keys, window), expected in WINDOWS.items():
        got = probe.call(queries, keys, window)["out"]
        what = f"sliding_window_mask({queries}, {keys}, {window})"
        expect_dtype(got, np.bool_, kind="tensor", what=what)
        expect_array(got, expected, what=what, **T)


# -- the rolling cache -------------------------------------------------------------------------

WINDOW = 3
ROLLING = [1, 2, WINDOW, 4]
"""RollingKVCache(batch=1, heads=2, window=3, head_dim=4)."""


@visible(
    SLUG,
    "RollingKVCache",
    "returns the kept tokens and the new ones; keeps the last min(position, window)",
    contract=(
        "two float32 tensors [batch, heads, kept + t, head_dim]",
        "the kept tokens followed by the new ones",
        "hold the last min(position, window) tokens",
        "self.position has grown by t",
    ),
)
def rolling_cache(probe: Probe) -> None:
    sizes = (2, 1, 1, 2, 1)
    keys, values = fed(6611, sizes), fed(6612, sizes)
    steps = probe.cache_steps(ROLLING, calls(keys, values))["steps"]
    seen = 0
    for number, (step, t) in enumerate(zip(steps, sizes, strict=True)):
        kept = min(seen, WINDOW)
        every_key = np.concatenate(keys[: number + 1], axis=2)
        every_value = np.concatenate(values[: number + 1], axis=2)
        what = f"call {number + 1} (feeding {t} after {seen} tokens)"
        expect_returned(
            step,
            every_key[:, :, seen - kept :],
            every_value[:, :, seen - kept :],
            what,
            "RollingKVCache",
        )
        seen += t
        expect_position(step, seen, what)
        stored = step["stored"]
        size = min(seen, WINDOW)
        if stored is None or list(stored) != [1, 2, size, 4]:
            raise CheckFailed(
                f"after {what}, self.keys has shape "
                f"{'none' if stored is None else list(stored)}, expected [1, 2, {size}, 4]",
                "After each call keep the last min(position, window) tokens: no more, no fewer.",
            )


# -- rope --------------------------------------------------------------------------------------


def turned(a: float, b: float, angle: float) -> tuple[float, float]:
    return a * math.cos(angle) - b * math.sin(angle), a * math.sin(angle) + b * math.cos(angle)


def basis_rotations(theta: float) -> tuple[np.ndarray, np.ndarray]:
    """x [4, 3, 4]: basis vector e_b at positions 0, 3, 7 (head_dim 4: pairs (x0, x2) and
    (x1, x3), turning at 1 and theta ** -0.5 radians a step); and where rope must take them."""
    positions = (0, 3, 7)
    speeds = (1.0, theta**-0.5)
    x = np.zeros((4, 3, 4), dtype=np.float32)
    expected = np.zeros((4, 3, 4))
    for b in range(4):
        pair_index, second = b % 2, b >= 2
        for t, p in enumerate(positions):
            x[b, t, b] = 1.0
            a, c = turned(0.0 if second else 1.0, 1.0 if second else 0.0, p * speeds[pair_index])
            expected[b, t, pair_index], expected[b, t, pair_index + 2] = a, c
    return x, expected


@visible(
    SLUG,
    "rope",
    "turns each half-against-half pair by position * theta ** (-2i / head_dim)",
    contract=(
        "a tensor of the shape and dtype of x",
        "pair i is (x[..., i], x[..., i + h])",
        "rotated by the angle p * theta ** (-2 * i / head_dim)",
        "(a, b) -> (a * cos - b * sin, a * sin + b * cos)",
    ),
)
def rope_angles(probe: Probe) -> None:
    positions = np.array([0, 3, 7], dtype=np.int64)
    for theta in (10000.0, 100.0):
        x, expected = basis_rotations(theta)
        got = probe.call(x, positions, theta=theta)["out"]
        what = f"rope of the basis vectors at positions 0, 3, 7 (theta {theta:g})"
        expect_dtype(got, np.float32, kind="tensor", what=what)
        expect_array(got, expected.astype(np.float32), what=what, **T)
    double = probe.call(x.astype(np.float64), positions)["out"]
    expect_dtype(double, np.float64, kind="tensor", what="rope of float64 vectors")


@visible(
    SLUG,
    "rope",
    "each pair keeps its length, and q . k depends only on the distance",
    contract=("(half against half, not neighbours)",),
)
def rope_properties(probe: Probe) -> None:
    rng = np.random.default_rng(6621)
    x = rng.normal(size=(2, 6, 8)).astype(np.float32)  # [q or k, T, head_dim]
    near = np.arange(6, dtype=np.int64)
    called = probe.call(x, near)
    expect_unchanged(x, called["inputs_after"][0], "the input x")
    result = called["out"]
    rotated = expect_shape(result, (2, 6, 8), kind="tensor", what="rope(x, positions)")
    lengths = np.hypot(x[..., :4], x[..., 4:])
    expect_array(
        {**result, "array": np.hypot(rotated[..., :4], rotated[..., 4:])},
        lengths,
        what="the length of each pair (x[i], x[i + head_dim // 2]) after rope",
        **T,
    )
    far = probe.call(x, near + 37)["out"]
    shifted = expect_shape(far, (2, 6, 8), kind="tensor", what="rope(x, positions + 37)")
    expect_array(
        {**far, "array": shifted[0] @ shifted[1].T},
        rotated[0] @ rotated[1].T,
        what="the dot products q . k when every position moves on by 37",
        atol=1e-4,
        **T,
    )


# -- the layer ---------------------------------------------------------------------------------

D_IN, HEADS, KV_HEADS, HEAD_DIM = 6, 4, 2, 4
LAYER = [D_IN, HEADS * HEAD_DIM, 12, HEADS, KV_HEADS]
"""GroupedQueryAttention(d_in=6, d_out=16, context_length=12, num_heads=4, num_kv_heads=2)."""


def uniform_state(seed: int) -> dict[str, np.ndarray]:
    """Zero queries and keys (every score 0: uniform weights over the visible keys), random
    values, out_proj the identity."""
    rng = np.random.default_rng(seed)
    d_out = HEADS * HEAD_DIM
    return {
        "W_query.weight": np.zeros((d_out, D_IN), dtype=np.float32),
        "W_key.weight": np.zeros((KV_HEADS * HEAD_DIM, D_IN), dtype=np.float32),
        "W_value.weight": rng.normal(size=(KV_HEADS * HEAD_DIM, D_IN)).astype(np.float32),
        "out_proj.weight": np.eye(d_out, dtype=np.float32),
        "out_proj.bias": np.zeros(d_out, dtype=np.float32),
    }


def averaged(x: np.ndarray, state: dict[str, np.ndarray], window: int | None) -> np.ndarray:
    """Uniform attention: query head h averages the values of key/value head h // group over
    the keys it may see (itself and the window - 1 before it, or every earlier key)."""
    batch, tokens, _ = x.shape
    values = (x @ state["W_value.weight"].T).reshape(batch, tokens, KV_HEADS, HEAD_DIM)
    group = HEADS // KV_HEADS
    out = np.zeros((batch, tokens, HEADS, HEAD_DIM))
    for i in range(tokens):
        first = 0 if window is None else max(0, i - window + 1)
        mean = values[:, first : i + 1].mean(axis=1)  # [batch, kv heads, head_dim]
        for h in range(HEADS):
            out[:, i, h] = mean[:, h // group]
    return out.reshape(batch, tokens, HEADS * HEAD_DIM).astype(np.float32)


@visible(
    SLUG,
    "GroupedQueryAttention",
    "zero queries and keys: each query head averages its own key/value head's values",
    contract=(
        "a float32 tensor [batch, t, d_out]",
        "query head h uses key/value head h // (num_heads // num_kv_heads)",
    ),
)
def gqa_uniform(probe: Probe) -> None:
    x = np.random.default_rng(6631).normal(size=(2, 7, D_IN)).astype(np.float32)
    for window in (None, 3):
        state = uniform_state(6632)
        init = [*LAYER, window]
        got = probe.module(init, [x], state=state)["out"]
        what = "the output" + ("" if window is None else f" with window {window}")
        expect_dtype(got, np.float32, kind="tensor", what=what)
        expect_array(got, averaged(x, state, window), what=what, **T)
        chunked = probe.decode(init, [x[:, :4], x[:, 4:6], x[:, 6:]], state=state)
        expect_array(
            {**T, "array": np.concatenate([c["array"] for c in chunks_of(chunked)], axis=1)},
            averaged(x, state, window),
            what=f"{what} in chunks of 4, 2 and 1 tokens with a cache",
        )


def chunks_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    for index, chunk in enumerate(result["chunks"]):
        expect_kind(chunk, "tensor", f"the output of chunk {index + 1}")
    return result["chunks"]


def expect_chunks_match(
    result: dict[str, Any], sizes: tuple[int, ...], what: str, atol: float = 1e-5
) -> None:
    """The chunks' outputs, side by side, equal the one pass without a cache."""
    full = result["full"]
    expect_kind(full, "tensor", f"{what} in one pass without a cache")
    start = 0
    for index, (chunk, t) in enumerate(zip(chunks_of(result), sizes, strict=True)):
        expect_array(
            chunk,
            full["array"][:, start : start + t],
            what=f"{what} of chunk {index + 1} (tokens {start}-{start + t - 1}, with the cache)",
            atol=atol,
            **T,
        )
        start += t


@visible(
    SLUG,
    "GroupedQueryAttention",
    "a prompt in chunks, then one token at a time, gives the output of one pass",
    contract=(
        "queries and keys are rotated by rope at their absolute positions",
        "the t queries are masked against every key",
        "the rotated keys and the values are appended to it (num_kv_heads heads)",
    ),
)
def gqa_chunks(probe: Probe) -> None:
    x = np.random.default_rng(6633).normal(size=(2, 9, D_IN)).astype(np.float32)
    sizes = (4, 3, 1, 1)
    for window in (None, 3):
        chunks = np.split(x, np.cumsum(sizes)[:-1], axis=1)
        result = probe.decode([*LAYER, window], chunks, seed=7)
        what = "the output" + ("" if window is None else f" with window {window}")
        expect_chunks_match(result, sizes, what)
        for index, stored in enumerate(result["stored"]):
            if stored is not None and int(stored[1]) != KV_HEADS:
                raise CheckFailed(
                    f"after chunk {index + 1} the cache holds {int(stored[1])} heads, expected "
                    f"num_kv_heads = {KV_HEADS}",
                    "Cache the keys and values before repeating them for the query heads: "
                    "that is where the memory is saved.",
                )


# -- the model ---------------------------------------------------------------------------------

MODEL = [17, 16, 16, 4, 2, 2]
"""TinyDecoder(vocab_size=17, d_model=16, context_length=16, num_heads=4, num_kv_heads=2,
num_layers=2)."""


@visible(
    SLUG,
    "TinyDecoder",
    "logits [batch, t, vocab_size], float32, and no token sees the future",
    contract=("float32 logits [batch, t, vocab_size]",),
)
def decoder_is_causal(probe: Probe) -> None:
    ids = np.array([[1, 4, 2, 9, 3, 3], [0, 0, 7, 7, 16, 5]], dtype=np.int64)
    out = probe.module(MODEL, [ids], seed=3)["out"]
    expect_dtype(out, np.float32, kind="tensor", what="the logits")
    expect_shape(out, (2, 6, 17), kind="tensor", what="the logits")
    changed = ids.copy()
    changed[:, 4:] = 11
    later = probe.module(MODEL, [changed], seed=3)["out"]
    expect_array(
        part(later, (slice(None), slice(0, 4))),
        out["array"][:, :4],
        what="the logits of tokens 0-3 when tokens 4-5 change",
        **T,
    )


@visible(
    SLUG,
    "TinyDecoder",
    "with the caches, a prompt in chunks then one token at a time gives one pass's logits",
    contract=("with the block's own cache self.caches[i] when use_cache",),
)
def decoder_chunks(probe: Probe) -> None:
    ids = np.random.default_rng(6641).integers(0, 17, size=(2, 8)).astype(np.int64)
    sizes = (4, 2, 1, 1)
    for window in (None, 3):
        chunks = np.split(ids, np.cumsum(sizes)[:-1], axis=1)
        result = probe.decode([*MODEL, window], chunks, seed=5)
        expect_chunks_match(
            result, sizes, "the logits" + ("" if window is None else f" with window {window}")
        )
        for index, (value, t) in enumerate(zip(result["positions"], np.cumsum(sizes), strict=True)):
            got = value.get("array")
            if value.get("kind") != "number" or got is None or int(got) != t:
                raise CheckFailed(
                    f"after chunk {index + 1} the first block's cache is at position "
                    f"{'none' if got is None else int(got)}, expected {t}",
                    "Each block reads and extends its own cache, self.caches[i], once a call.",
                )


# -- generation --------------------------------------------------------------------------------

GENERATOR = [19, 16, 24, 4, 2, 2]
"""The model generate is given: TinyDecoder(vocab_size=19, d_model=16, context_length=24,
num_heads=4, num_kv_heads=2, num_layers=2)."""
NEW_TOKENS = 12


def expect_uncached(run: dict[str, Any], uncached: dict[str, Any], prompt: np.ndarray, what: str):
    if run["raised"] is not None:
        raise CheckFailed(f"generate {raised(run)} on {what}")
    ids, logits = pair_of_generated(run["out"])
    batch, start = prompt.shape
    expect_dtype(ids, np.int64, kind="tensor", what=f"the ids generated from {what}")
    expect_shape(ids, (batch, start + NEW_TOKENS), kind="tensor", what=f"the ids of {what}")
    if not np.array_equal(ids["array"][:, :start], prompt) or uncached["kind"] != "sequence":
        raise CheckFailed(f"the ids of {what} are not the prompt followed by token ids")
    want_ids, want_logits = uncached["items"]
    expect_dtype(logits, np.float32, kind="tensor", what=f"the logits of {what}")
    expect_array(
        logits, want_logits["array"], what=f"the logits each token of {what} was chosen from", **T
    )
    if not np.array_equal(ids["array"], want_ids["array"]):
        first = np.argwhere(ids["array"] != want_ids["array"])[0]
        raise CheckFailed(
            f"the ids generated from {what} differ from generation without a cache, first at "
            f"[{first[0]}, {first[1]}]: {ids['array'][tuple(first)]} instead of "
            f"{want_ids['array'][tuple(first)]}",
            "Each new token is the argmax of the logits at the last position. (Without a cache, "
            "the model fed the whole sequence gives those logits at every position.)",
        )
    fed_tokens = [int(n) for n in run["fed"]]
    if fed_tokens[:1] != [start] or any(n != 1 for n in fed_tokens[1:]):
        raise CheckFailed(
            f"the model was fed {fed_tokens} tokens a call for {what}: expected the prompt "
            f"({start}) once, then 1 a call",
            "After the prefill, feed only the newest token: the cache holds the others.",
        )


def pair_of_generated(value: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    if value["kind"] != "sequence" or len(value["items"]) != 2:
        raise CheckFailed(
            "generate should return a pair (ids, logits)",
            "Return both: `return ids, logits`.",
            stage="kind",
        )
    return value["items"][0], value["items"][1]


def prompts(seed: int, *shapes: tuple[int, int]) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 19, size=shape).astype(np.int64) for shape in shapes]


@visible(
    SLUG,
    "generate",
    "the ids and logits of generation without a cache; the prompt once, then 1 token a call",
    contract=(
        "ids, int64 [batch, T0 + max_new_tokens]",
        "logits, float32 [batch, max_new_tokens, vocab_size]",
        "the prompt fed once, then one token per call",
    ),
)
def generate_matches_uncached(probe: Probe) -> None:
    (prompt,) = prompts(6651, (2, 4))
    result = probe.generation(GENERATOR, [prompt], NEW_TOKENS, seed=9)
    expect_uncached(result["runs"][0], result["uncached"][0], prompt, "the prompt")


@visible(
    SLUG,
    "generate",
    "each new prompt starts from fresh caches, whatever its batch size",
    contract=("Fresh caches for every prompt (model.start_caches)",),
)
def generate_fresh_caches(probe: Probe) -> None:
    given = prompts(6652, (2, 4), (2, 3), (1, 5))
    result = probe.generation(GENERATOR, given, NEW_TOKENS, seed=9)
    names = ("the first prompt", "a second prompt", "a third prompt, of one sequence")
    for run, uncached, prompt, what in zip(
        result["runs"], result["uncached"], given, names, strict=True
    ):
        expect_uncached(run, uncached, prompt, what)
