"""Lesson 6's mutation testing: fresh inputs for each exercise, to tell an equivalent mutant
from a survivor, and the survivors a human judged equivalent to the reference, with why
(see :mod:`attnkit_autograder.quality.mutation`)."""

from __future__ import annotations

from collections.abc import Callable

from ..requests import Request

REQUESTS: dict[str, Callable[[], list[Request]]] = {}
"""Per exercise: the requests (shapes the contract allows, none of them the suite's own)."""

FOUR_D = "the new keys are always 4-d [batch, heads, t, head_dim]: dim 2 is dim -2"
SAME_LENGTH = "the cache returns as many values as keys: their token axes have one length"
CHUNK_MASK = "blocked = chunk_causal_mask(num_tokens, keys.shape[-2])"
WINDOW_MASK = "blocked = sliding_window_mask(num_tokens, keys.shape[-2], self.window)"

JUDGED: list[tuple[str, str, tuple[str, ...], str]] = [
    (
        "KVCache",
        "start, end = (self.position, self.position + keys.shape[-2])",
        ("-2 -> 2",),
        FOUR_D,
    ),
    (
        "sliding_window_mask",
        "return (key > query) | (key <= query - window)",
        ("(key > query) | (key <= query - window) -> (key <= query - window) | (key > query)",),
        "| is symmetric",
    ),
    (
        "GroupedQueryAttention",
        "start = 0 if cache is None else cache.position",
        ("0 -> 1", "0 -> -1"),
        "without a cache every token's position moves by the same amount, and a score after "
        "rope depends only on the distance between query and key (the suite checks that "
        "property of rope itself); with a cache the positions are the cache's",
    ),
    (
        "GroupedQueryAttention",
        "scores = queries @ keys.transpose(-2, -1) / self.head_dim ** 0.5",
        ("-2 -> 2",),
        "keys is always 4-d [batch, heads, keys, head_dim]: dim 2 is dim -2",
    ),
    (
        "GroupedQueryAttention",
        CHUNK_MASK,
        ("keys.shape -> values.shape",),
        SAME_LENGTH,
    ),
    (
        "GroupedQueryAttention",
        CHUNK_MASK,
        ("-2 -> 2",),
        "keys is always 4-d [batch, heads, keys, head_dim]: dim 2 is dim -2",
    ),
    (
        "GroupedQueryAttention",
        WINDOW_MASK,
        ("keys.shape -> values.shape",),
        SAME_LENGTH,
    ),
    (
        "GroupedQueryAttention",
        WINDOW_MASK,
        ("-2 -> 2",),
        "keys is always 4-d [batch, heads, keys, head_dim]: dim 2 is dim -2",
    ),
    (
        "TinyDecoder",
        "for block, cache in zip(self.blocks, caches, strict=True):",
        ("True -> False",),
        "there is one cache (or None) per block: the lengths are always equal",
    ),
    (
        "generate",
        "next_id = logits.argmax(dim=-1, keepdim=True)",
        ("-1 -> 1",),
        "logits is always 2-d [batch, vocab_size]: dim 1 is dim -1",
    ),
    (
        "generate",
        "logits = model(next_id, use_cache=True)[:, -1]",
        ("1 -> 0",),
        "the model is fed one token here: position 0 is the last position",
    ),
]
"""Survivors a human judged equivalent: (exercise, statement, changes, why)."""
