"""Hidden tests for lesson 6, attention at inference.

Graded by equivalence with the references (every cache call, chunk and generated token) and
by properties that hold for any correct answer: a prompt fed in chunks gives what one pass
gives, cached generation gives exactly the ids of generation without a cache, and RoPE's
defining properties hold on inputs ``hypothesis`` generates (seeded per student under
``--seed-per-student``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as seeded
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from attnkit.compare import CheckFailed, expect_array, expect_kind, expect_shape, expect_unchanged
from attnkit_autograder.grading.harness import grade
from attnkit_autograder.grading.suite_support import (
    contract,
    input_seed,
    randn,
    rng,
    same_call,
    same_module,
)

T = {"kind": "tensor"}


# -- helpers -------------------------------------------------------------------------------------


def new_tokens(seed: int, sizes: tuple[int, ...], batch: int, heads: int, dim: int) -> list:
    """A call per size: new keys and values [batch, heads, t, dim], float32."""
    return [
        {
            "keys": randn(batch, heads, t, dim, seed=1000 * seed + 2 * index),
            "values": randn(batch, heads, t, dim, seed=1000 * seed + 2 * index + 1),
        }
        for index, t in enumerate(sizes)
    ]


def step_name(number: int, step: dict[str, Any], before: int) -> str:
    if step.get("reset"):
        return f"call {number + 1} (reset())"
    t = step["keys"].shape[2]
    return f"call {number + 1} (feeding {t} token{'s' if t > 1 else ''} after {before})"


def raised(report: dict[str, Any]) -> str:
    return f"raised {report['raised']} (the cache refused the new tokens)"


def returned_pair(value: dict[str, Any], what: str) -> tuple[dict[str, Any], dict[str, Any]]:
    if value["kind"] != "sequence" or len(value["items"]) != 2:
        raise CheckFailed(f"{what} did not return a pair (keys, values)", stage="kind")
    return value["items"][0], value["items"][1]


def number(value: dict[str, Any]) -> Any:
    array = value.get("array")
    return None if value.get("kind") != "number" or array is None else array.item()


def same_steps(
    submission, reference, exercise: str, init: list[int], steps: list[dict], stored: bool
) -> list[dict[str, Any]]:
    """Drive the submission's cache and the reference's through the same calls; every call
    must return, raise and move the position as the reference's (and, with ``stored``, keep
    what it keeps)."""
    got = submission.probe(exercise).cache_steps(init, steps)["steps"]
    want = reference.probe(exercise).cache_steps(init, steps)["steps"]
    before = 0
    for index, (mine, theirs, step) in enumerate(zip(got, want, steps, strict=True)):
        what = step_name(index, step, before)
        if mine["raised"] != theirs["raised"]:
            if theirs["raised"] is None:
                raise CheckFailed(f"{what} {raised(mine)}")
            said = f"raised {mine['raised']}" if mine["raised"] else "did not raise"
            raise CheckFailed(
                f"{what} {said}, expected {theirs['raised']}: the new tokens do not fit",
                "Check that the new tokens fit before writing anything, and raise ValueError.",
            )
        if not step.get("reset"):
            expect_unchanged(step["keys"], mine.get("keys_after"), f"the keys given to {what}")
            expect_unchanged(
                step["values"], mine.get("values_after"), f"the values given to {what}"
            )
        if theirs["raised"] is None and not step.get("reset"):
            keys, values = returned_pair(mine["out"], what)
            want_keys, want_values = theirs["out"]["items"]
            expect_array(keys, want_keys["array"], what=f"the keys {what} returned", **T)
            expect_array(values, want_values["array"], what=f"the values {what} returned", **T)
        if number(mine["position"]) != number(theirs["position"]):
            raise CheckFailed(
                f"self.position is {number(mine['position'])} after {what}, expected "
                f"{number(theirs['position'])}"
            )
        if stored and not np.array_equal(np.asarray(mine["stored"]), np.asarray(theirs["stored"])):
            raise CheckFailed(
                f"after {what} the cache keeps keys of shape "
                f"{None if mine['stored'] is None else sizes(mine['stored'])}, expected "
                f"{sizes(theirs['stored'])}: min(position, window) tokens"
            )
        before = number(theirs["position"]) or 0
    return got


def sizes(shape: Any) -> list[int]:
    """A reported shape as plain numbers (never ``np.int64(2)`` in a message)."""
    return [int(n) for n in np.asarray(shape).ravel()]


def property_holds(number: int, examples: int, check: Callable[..., None], *strategies) -> None:
    """Run ``check`` on ``examples`` inputs hypothesis draws from ``strategies``, seeded with
    this test's (per-student) input seed. No shrinking: each example is calls to a sandboxed
    submission, and the first failing one is what the student is told."""

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=(Phase.explicit, Phase.generate),
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(st.tuples(*strategies))
    def example(drawn: tuple[Any, ...]) -> None:
        check(*drawn)

    try:
        seeded(input_seed(number))(example)()
    except Flaky as exc:  # one input, two answers: the failure did not happen again
        raise CheckFailed(
            "rope gives different answers to the same input when asked twice",
            "Keep no state between calls: the angles follow from the positions alone.",
        ) from exc


# -- the KV cache ------------------------------------------------------------------------------


@grade("test_kv_cache")
@contract(
    "KVCache",
    "two float32 tensors [batch, heads, position + t, head_dim]",
    "the new ones last",
    "self.position grows by t",
    "(not modified)",
)
@pytest.mark.parametrize(("sizes", "max_tokens"), [((4, 1, 1, 3), 10), ((6,), 6)])
def test_kv_cache_matches_reference(submission, reference, sizes, max_tokens) -> None:
    steps = new_tokens(len(sizes), sizes, batch=2, heads=3, dim=4)
    same_steps(submission, reference, "KVCache", [2, 3, max_tokens, 4], steps, stored=False)


@grade("test_kv_cache")
@contract("KVCache", "ValueError when position + t > max_tokens, and then nothing changes")
def test_kv_cache_refuses_to_overflow_and_resets(submission, reference) -> None:
    steps = new_tokens(11, (5, 5, 1), 1, 2, 4)  # the third call does not fit
    steps += [{"reset": True}, *new_tokens(12, (2, 8, 1, 3), 1, 2, 4)]
    same_steps(submission, reference, "KVCache", [1, 2, 10, 4], steps, stored=False)


# -- the masks ---------------------------------------------------------------------------------


@grade("test_chunk_causal_mask")
@contract(
    "chunk_causal_mask",
    "a bool tensor [num_queries, num_keys]",
    "True where key j > i + (num_keys - num_queries)",
)
@pytest.mark.parametrize(("queries", "keys"), [(1, 1), (4, 4), (1, 9), (7, 30)])
def test_chunk_causal_mask_matches_reference(submission, reference, queries, keys) -> None:
    same_call(submission, reference, "chunk_causal_mask", queries, keys, **T)


@grade("test_sliding_window_mask")
@contract(
    "sliding_window_mask",
    "a bool tensor [num_queries, num_keys]",
    "True where key j > p or j <= p - window",
    "each query sees itself and the window - 1 keys before it",
)
@pytest.mark.parametrize(
    ("queries", "keys", "window"),
    [(6, 6, 1), (1, 12, 4), (4, 11, 3), (3, 7, 30)],
)
def test_sliding_window_mask_matches_reference(submission, reference, queries, keys, window):
    same_call(submission, reference, "sliding_window_mask", queries, keys, window, **T)


# -- the rolling cache -------------------------------------------------------------------------


@grade("test_rolling_cache")
@contract(
    "RollingKVCache",
    "two float32 tensors [batch, heads, kept + t, head_dim]",
    "the kept tokens followed by the new ones",
    "hold the last min(position, window) tokens",
    "self.position has grown by t",
    "(not modified)",
)
@pytest.mark.parametrize(
    ("sizes", "window"),
    [((2, 1, 1, 2, 1, 5, 1), 3), ((3, 4, 2), 20), ((4, 4), 1)],
)
def test_rolling_cache_matches_reference(submission, reference, sizes, window) -> None:
    steps = new_tokens(window + len(sizes), sizes, batch=2, heads=2, dim=4)
    same_steps(submission, reference, "RollingKVCache", [2, 2, window, 4], steps, stored=True)


@grade("test_rolling_cache")
@contract("RollingKVCache", "hold the last min(position, window) tokens")
def test_rolling_cache_starts_over_after_reset(submission, reference) -> None:
    first, second = new_tokens(21, (4, 2), 1, 1, 2), new_tokens(22, (1, 3), 1, 1, 2)
    steps = [*first, {"reset": True}, *second]
    same_steps(submission, reference, "RollingKVCache", [1, 1, 3, 2], steps, stored=True)


# -- rope --------------------------------------------------------------------------------------


@grade("test_rope")
@contract(
    "rope",
    "a tensor of the shape and dtype of x",
    "pair i is (x[..., i], x[..., i + h])",
    "rotated by the angle p * theta ** (-2 * i / head_dim)",
    "(a, b) -> (a * cos - b * sin, a * sin + b * cos)",
    "theta: a float, 10000.0 by default",
    "(not modified)",
)
@pytest.mark.parametrize(
    ("shape", "dtype", "theta"),
    [
        ((2, 3, 5, 8), np.float32, None),
        ((7, 16), np.float32, 10000.0),
        ((4, 2), np.float32, None),
        ((3, 6, 12), np.float64, 500.0),
    ],
)
def test_rope_matches_reference(submission, reference, shape, dtype, theta) -> None:
    x = randn(*shape, seed=shape[-1], dtype=dtype)
    positions = np.sort(rng(shape[-2]).choice(64, size=shape[-2], replace=False)).astype(np.int64)
    given = {} if theta is None else {"theta": theta}  # None: the default, theta = 10000
    same_call(submission, reference, "rope", x, positions, atol=1e-4, **given, **T)


def rotated(submission, x: np.ndarray, positions: np.ndarray, what: str) -> np.ndarray:
    out = submission.probe("rope").call(x, positions)["out"]
    return expect_shape(out, x.shape, kind="tensor", what=what).astype(np.float64)


DIMS = st.sampled_from([2, 4, 8, 16])
SEEDS = st.integers(0, 2**32 - 1)


@grade("test_rope")
@contract(
    "rope",
    "pair i is (x[..., i], x[..., i + h])",
    "the absolute position of each of the T tokens",
)
def test_rope_shifts_leave_every_dot_product_and_pair_length(submission) -> None:
    def check(head_dim: int, tokens: int, shift: int, seed: int) -> None:
        x = randn(2, tokens, head_dim, seed=seed)
        positions = rng(seed).integers(0, 200, size=tokens).astype(np.int64)
        near = rotated(submission, x, positions, "rope(x, positions)")
        far = rotated(submission, x, positions + shift, f"rope(x, positions + {shift})")
        half = head_dim // 2
        lengths = np.hypot(x[..., :half], x[..., half:])
        expect_array(
            {**T, "array": np.hypot(near[..., :half], near[..., half:])},
            lengths,
            what=f"the length of each pair (x[i], x[i + {half}]) after rope (head_dim {head_dim})",
            check_dtype=False,
            atol=1e-4,
        )
        expect_array(
            {**T, "array": far[0] @ far[1].T},
            near[0] @ near[1].T,
            what=f"the dot products q . k when every position moves on by {shift} "
            f"(head_dim {head_dim}, positions {positions.tolist()})",
            check_dtype=False,
            atol=1e-3,
            rtol=1e-3,
        )

    property_holds(61, 4, check, DIMS, st.integers(1, 6), st.integers(1, 300), SEEDS)


@grade("test_rope")
@contract("rope", "the absolute position of each of the T tokens")
def test_rope_of_one_token_is_its_row_of_the_sequence(submission) -> None:
    def check(head_dim: int, tokens: int, seed: int) -> None:
        generator = rng(seed)
        x = randn(1, 2, tokens, head_dim, seed=seed)
        positions = np.arange(tokens, dtype=np.int64) + int(generator.integers(0, 100))
        t = int(generator.integers(0, tokens))
        whole = rotated(submission, x, positions, "rope of the whole sequence")
        alone = rotated(submission, x[..., t : t + 1, :], positions[t : t + 1], "one token")
        expect_array(
            {**T, "array": alone},
            whole[..., t : t + 1, :],
            what=f"rope of token {t} alone, at position {positions[t]} (as in cached decoding)",
            check_dtype=False,
            atol=1e-5,
        )

    property_holds(62, 3, check, DIMS, st.integers(1, 8), SEEDS)


# -- grouped-query attention ---------------------------------------------------------------------

D_IN = 6


def layer(heads: int, kv: int, head_dim: int = 4, context: int = 12, window=None) -> list:
    return [D_IN, heads * head_dim, context, heads, kv, window]


@grade("test_grouped_query_attention")
@contract(
    "GroupedQueryAttention",
    "a float32 tensor [batch, t, d_out]",
    "queries, keys and values are split into heads as in lesson 4",
    "queries and keys are rotated by rope at their absolute positions",
    "query head h uses key/value head h // (num_heads // num_kv_heads)",
    "scores scaled by sqrt(head_dim)",
    "heads merged in order, then out_proj",
    "(not modified)",
)
@pytest.mark.parametrize(
    ("heads", "kv", "head_dim", "window"),
    [(4, 4, 4, None), (4, 1, 4, None), (4, 2, 2, 3)],  # groups of two: the next test
)
def test_gqa_matches_reference(submission, reference, heads, kv, head_dim, window) -> None:
    x = randn(2, 7, D_IN, seed=heads + kv)
    same_module(
        submission, reference, "GroupedQueryAttention", layer(heads, kv, head_dim, window=window),
        [x], seed=kv,
    )  # fmt: skip


def repeated_kv(state: dict[str, np.ndarray], group: int, head_dim: int) -> dict[str, np.ndarray]:
    """The same layer as multi-head attention: each key/value head's weights copied for every
    query head of its group."""
    copied = dict(state)
    for name in ("W_key.weight", "W_value.weight"):
        heads = state[name].reshape(-1, head_dim, state[name].shape[-1])
        copied[name] = np.repeat(heads, group, axis=0).reshape(-1, state[name].shape[-1])
    return copied


@grade("test_grouped_query_attention")
@contract(
    "GroupedQueryAttention",
    "query head h uses key/value head h // (num_heads // num_kv_heads)",
)
@pytest.mark.parametrize("kv", [2])  # groups of two: with one group, any order is right
def test_gqa_equals_multi_head_attention_after_a_weight_copy(submission, reference, kv) -> None:
    x = randn(2, 6, D_IN, seed=30 + kv)
    grouped = reference.probe("GroupedQueryAttention").module(layer(4, kv), [x], seed=kv)
    multi_head = reference.probe("GroupedQueryAttention").module(
        layer(4, 4), [x], state=repeated_kv(grouped["params"], 4 // kv, 4)
    )
    got = submission.probe("GroupedQueryAttention").module(
        layer(4, kv), [x], state=grouped["params"]
    )
    expect_array(
        got["out"],
        multi_head["out"]["array"],
        what=f"the output with {kv} key/value head(s), against multi-head attention whose "
        "heads of each group share their key/value weights",
        **T,
    )


def same_decode(submission, reference, exercise: str, init: list, chunks: list, seed: int):
    """Feed both the same chunks with a cache: every chunk's output, the one pass without a
    cache, the cache's position and shape after every chunk, as the reference's."""
    want = reference.probe(exercise).decode(init, chunks, seed=seed)
    state = reference.probe(exercise).module(init, [chunks[0]], seed=seed)["params"]
    got = submission.probe(exercise).decode(init, chunks, seed=seed, state=state)
    start = 0
    for index, (mine, theirs, chunk) in enumerate(
        zip(got["chunks"], want["chunks"], chunks, strict=True)
    ):
        t = chunk.shape[1]
        what = f"the output of chunk {index + 1} (tokens {start}-{start + t - 1}, with the cache)"
        expect_array(mine, theirs["array"], what=what, **T)
        mine_at, theirs_at = number(got["positions"][index]), number(want["positions"][index])
        if mine_at != theirs_at:
            raise CheckFailed(
                f"after chunk {index + 1} the cache is at position {mine_at}, expected {theirs_at}"
            )
        if not np.array_equal(np.asarray(got["stored"][index]), want["stored"][index]):
            raise CheckFailed(
                f"after chunk {index + 1} the cache holds keys of shape "
                f"{got['stored'][index]}, expected {list(want['stored'][index])}"
            )
        start += t
    expect_array(got["full"], want["full"]["array"], what="the output in one pass", **T)
    for index, chunk in enumerate(got["chunks"]):
        expect_kind(chunk, "tensor", f"the output of chunk {index + 1}")
    return got, want


CHUNKS = (4, 2, 1, 1)


@grade("test_grouped_query_attention")
@contract(
    "GroupedQueryAttention",
    "cache.position onwards; 0 onwards without a cache",
    "the rotated keys and the values are appended to it (num_kv_heads heads)",
    "the queries attend to every token it returns",
    "the t queries are masked against every key with chunk_causal_mask, or sliding_window_mask "
    "when the layer has a window",
)
def test_gqa_chunked_prefill_decoding_and_cache_bytes(submission, reference) -> None:
    measured = {}
    for kv, window in ((2, None), (2, 3)):
        x = randn(2, sum(CHUNKS), D_IN, seed=40 + kv)
        chunks = np.split(x, np.cumsum(CHUNKS)[:-1], axis=1)
        got, _ = same_decode(
            submission, reference, "GroupedQueryAttention", layer(4, kv, window=window), chunks,
            seed=kv,
        )  # fmt: skip
        measured.setdefault(kv, int(got["cache_bytes"]))
    for kv in (4, 1):  # one token is enough to make and fill a cache
        x = randn(2, 1, D_IN, seed=45 + kv)
        got, _ = same_decode(
            submission, reference, "GroupedQueryAttention", layer(4, kv), [x], seed=kv
        )
        measured[kv] = int(got["cache_bytes"])
    for kv in (2, 1):  # the cache's bytes fall by exactly num_heads / num_kv_heads
        if measured[kv] * (4 // kv) != measured[4]:
            raise CheckFailed(
                f"with 4 query heads, the cache holds {measured[4]} bytes with 4 key/value heads "
                f"and {measured[kv]} with {kv}: expected exactly 1/{4 // kv} of it",
                "Cache the keys and values before repeating them for the query heads.",
            )


@grade("test_grouped_query_attention")
@contract(
    "GroupedQueryAttention",
    "sliding_window_mask when the layer has a window",
    "the t queries are masked against every key",
)
def test_gqa_with_a_window_as_long_as_the_context_is_causal_attention(submission, reference):
    x = randn(1, 12, D_IN, seed=50)
    full = reference.probe("GroupedQueryAttention").module(layer(4, 2), [x], seed=3)
    windowed = submission.probe("GroupedQueryAttention").module(
        layer(4, 2, window=12), [x], state=full["params"]
    )
    expect_array(
        windowed["out"],
        full["out"]["array"],
        what="the output with a window of 12 on 12 tokens, against causal attention",
        **T,
    )


# -- the model ---------------------------------------------------------------------------------

VOCAB = 23


def model(window=None, context: int = 16) -> list:
    return [VOCAB, 16, context, 4, 2, 2, window]


@grade("test_tiny_decoder")
@contract(
    "TinyDecoder",
    "float32 logits [batch, t, vocab_size]",
    "the token embedding (no position embedding: rope adds the positions)",
    "then x = x + block(x, cache) for each block in order",
    "then head",
    "(not modified)",
)
@pytest.mark.parametrize("window", [None])  # with a window: test_generate
def test_tiny_decoder_matches_reference(submission, reference, window) -> None:
    ids = rng(70).integers(0, VOCAB, size=(2, 9)).astype(np.int64)
    same_module(submission, reference, "TinyDecoder", model(window), [ids], seed=7)


@grade("test_tiny_decoder")
@contract(
    "TinyDecoder",
    "with use_cache the tokens after those already cached",
    "with the block's own cache self.caches[i] when use_cache",
)
@pytest.mark.parametrize("window", [None])  # with a window: test_generate
def test_tiny_decoder_with_caches_matches_reference(submission, reference, window) -> None:
    ids = rng(71).integers(0, VOCAB, size=(2, sum(CHUNKS))).astype(np.int64)
    chunks = np.split(ids, np.cumsum(CHUNKS)[:-1], axis=1)
    same_decode(submission, reference, "TinyDecoder", model(window), chunks, seed=8)


# -- generation --------------------------------------------------------------------------------

GENERATOR = [VOCAB, 16, 40, 4, 2, 2]


def generated(result: dict[str, Any], index: int, what: str) -> tuple[np.ndarray, dict]:
    run = result["runs"][index]
    if run["raised"] is not None:
        raise CheckFailed(f"generate {raised(run)} on {what}")
    out = run["out"]
    if out["kind"] != "sequence" or len(out["items"]) != 2:
        raise CheckFailed("generate should return a pair (ids, logits)", stage="kind")
    return out["items"][0], out["items"][1]


def same_generation(
    submission, reference, init: list, shapes: list, new_tokens: int, seed: int
) -> None:
    """Generate from each prompt in turn, on one model: the ids ``torch.equal`` the
    reference's and those of greedy decoding without a cache, the logits agree closely with
    both, and the model is fed each prompt once, then one token a call."""
    generator = rng(seed)
    prompts = [generator.integers(0, VOCAB, size=shape).astype(np.int64) for shape in shapes]
    drawn = reference.probe("TinyDecoder").module(init, [prompts[0]], seed=seed)["params"]
    # Larger embeddings, for varied tokens (a copy: the reference's answers are kept).
    state = {**drawn, "token_embedding.weight": drawn["token_embedding.weight"] * 4}
    kwargs = {"seed": seed, "state": state}
    got = submission.probe("generate").generation(init, prompts, new_tokens, **kwargs)
    want = reference.probe("generate").generation(init, prompts, new_tokens, **kwargs)
    for index, prompt in enumerate(prompts):
        what = "the first prompt" if index == 0 else f"a second prompt, [{shapes[1][0]}, ...]"
        ids, logits = generated(got, index, what)
        want_ids, want_logits = want["runs"][index]["out"]["items"]
        expect_array(ids, want_ids["array"], what=f"the ids generated from {what}", **T)
        uncached = got["uncached"][index]
        if uncached["kind"] != "sequence" or not np.array_equal(
            ids["array"], uncached["items"][0]["array"]
        ):
            raise CheckFailed(f"the ids generated from {what} differ from those without a cache")
        expect_array(logits, want_logits["array"], what=f"the logits of {what}", atol=1e-4, **T)
        expect_array(
            logits,
            uncached["items"][1]["array"],
            what=f"the logits of {what}, against those without a cache",
            atol=1e-4,
        )
        fed = [int(n) for n in got["runs"][index]["fed"]]
        if fed[:1] != [prompt.shape[1]] or any(n != 1 for n in fed[1:]) or len(fed) > new_tokens:
            raise CheckFailed(
                f"the model was fed {fed} tokens a call for {what}: expected the prompt "
                f"({prompt.shape[1]}) once, then one token a call",
                "After the prefill, feed only the newest token: the cache holds the others.",
            )
        expect_array(
            {**T, "array": got["inputs_after"][index]}, prompt, what=f"{what} after generate"
        )


@grade("test_generate")
@contract(
    "generate",
    "ids, int64 [batch, T0 + max_new_tokens]",
    "the argmax of the logits at the last position",
    "logits, float32 [batch, max_new_tokens, vocab_size]",
    "the prompt fed once, then one token per call",
    "the same ids as generation without a cache",
    "Fresh caches for every prompt (model.start_caches)",
    "(not modified)",
)
@pytest.mark.parametrize(
    ("window", "shapes", "new_tokens"),
    [
        (None, [(2, 4)], 30),  # 30 tokens from one prompt (a model of one block)
        (4, [(2, 4), (2, 3)], 3),  # rolling caches past the window; a second prompt
        (4, [(2, 4), (1, 5)], 3),  # a second prompt of another batch size
    ],
)
def test_generate_matches_reference_and_uncached_generation(
    submission, reference, window, shapes, new_tokens
) -> None:
    init = [*GENERATOR[:-1], 1 if new_tokens >= 30 else GENERATOR[-1], window]
    same_generation(submission, reference, init, shapes, new_tokens, seed=80)
