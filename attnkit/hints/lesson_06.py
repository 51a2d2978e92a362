"""The hint ladder's words for lesson 6, attention at inference."""

from __future__ import annotations

from . import ExerciseHints, MistakeHints

EXERCISES = {
    "KVCache": ExerciseHints(
        idea=(
            "The cache keeps every token's keys and values in buffers of a fixed size. A "
            "call writes the t new tokens at position .. position + t - 1, moves position "
            "on by t, and returns only the filled part. New tokens that do not fit are "
            "refused before anything changes."
        ),
        look=(
            "Feed a cache of 6 slots 3 tokens, then 1, then 1, then 2: print position and "
            "the shape returned after each call, and whether the last one is refused."
        ),
    ),
    "chunk_causal_mask": ExerciseHints(
        idea=(
            "The queries are the last num_queries tokens of the text, so query i sits at "
            "position i + num_keys - num_queries. It may see every key up to that position: "
            "the mask is the bottom rows of the square causal mask."
        ),
        look="Print chunk_causal_mask(3, 6) next to the square 6 x 6 mask: which rows match?",
    ),
    "sliding_window_mask": ExerciseHints(
        idea=(
            "Each query sees itself and the window - 1 keys before it, no more. Positions "
            "are measured as in chunk_causal_mask: query i of the chunk sits at i + "
            "num_keys - num_queries."
        ),
        look=(
            "Print the mask for a few queries against more keys, and count the visible keys "
            "in each row: window of them once the text is long enough."
        ),
    ),
    "RollingKVCache": ExerciseHints(
        idea=(
            "A sliding window never looks further back than window - 1 tokens, so the cache "
            "keeps only the last window tokens. A call returns the kept tokens followed by "
            "all the new ones, and trims only what it keeps for the next call."
        ),
        look=(
            "Feed a cache with window 4 a chunk of 3, then single tokens: print how many "
            "keys each call returns and how many the cache keeps afterwards."
        ),
    ),
    "rope": ExerciseHints(
        idea=(
            "Pair i is feature i with feature i + head_dim / 2, and at position p it turns by "
            "the angle p * theta ** (-2i / head_dim), as a point in the plane. A rotation "
            "keeps lengths, and the dot product of two rotated vectors depends only on the "
            "distance between their positions."
        ),
        look=(
            "Print the angles for head_dim 8 at position 1, and which two features each pair holds."
        ),
    ),
    "GroupedQueryAttention": ExerciseHints(
        idea=(
            "Lesson 4's layer with fewer key/value heads, each shared by a group of "
            "consecutive query heads. Queries and keys are rotated at their absolute "
            "positions in the text; with a cache, the shared heads are appended to it and "
            "the new queries attend to all it returns, masked bottom-right."
        ),
        look=(
            "Run the layer on a whole sequence, then on the same sequence in chunks with a "
            "cache, and compare: the first chunk that differs tells you which step to read."
        ),
    ),
    "TinyDecoder": ExerciseHints(
        idea=(
            "The token embedding, then each block adds what it computes to what came in, "
            "then the output head. Positions come from rope inside the blocks. With the "
            "cache on, each block reads and extends its own cache."
        ),
        look="Check which cache each block is given, and that it is given one at all.",
    ),
    "generate": ExerciseHints(
        idea=(
            "Fresh caches for the prompt, the prompt once, then each chosen token alone. "
            "Each new token is the argmax of the logits at the last position, and the "
            "cached tokens must be exactly the uncached ones."
        ),
        look=(
            "Feed the generated ids to the model once without a cache: each new token must "
            "be the argmax of the logits at the position before it."
        ),
    ),
}

# No line is pointed at in this lesson: its mistakes' lines are not yet checked by hand
# against a corpus (the precision rule), so its words say where to look.
MISTAKES: dict[tuple[str, str], MistakeHints] = {
    ("KVCache", "position_not_advanced"): MistakeHints(
        idea=(
            "position counts the tokens cached so far. After t new tokens are written, the "
            "next call writes t slots further on."
        ),
        look="Look at what happens to self.position after the new tokens are written.",
    ),
    ("KVCache", "empty_slots_returned"): MistakeHints(
        idea=(
            "Slots not written yet hold zeros, and a key of zeros still takes weight in "
            "softmax. Only the tokens cached so far are keys."
        ),
        look="Look at how much of the buffers you return.",
    ),
    ("KVCache", "no_capacity_check"): MistakeHints(
        idea=(
            "The buffers have max_tokens slots. New tokens that do not fit are refused with a "
            "ValueError that says so, before anything is written or moved."
        ),
        look="Look at what your code does before it writes: does it compare with max_tokens?",
    ),
    ("KVCache", "full_cache_refused"): MistakeHints(
        idea=(
            "A cache of max_tokens slots holds max_tokens tokens: new tokens that end exactly "
            "at the last slot still fit. Only position + t greater than max_tokens does not."
        ),
        look="Look at the comparison that decides whether to refuse.",
    ),
    ("chunk_causal_mask", "aligned_top_left"): MistakeHints(
        idea=(
            "The top rows of the square mask belong to tokens 0, 1, 2 of the text. A chunk of "
            "the last tokens sits num_keys - num_queries further on, so each of its queries "
            "sees that many more keys."
        ),
        look="Look at the position you give query i when you compare it with the keys.",
    ),
    ("chunk_causal_mask", "diagonal_blocked"): MistakeHints(
        idea=(
            "Causal means no key after the query. The query's own key is not after it, so "
            "it stays visible: every query sees at least itself."
        ),
        look="Look at the comparison on the diagonal, where the key is the query itself.",
    ),
    ("sliding_window_mask", "window_plus_one"): MistakeHints(
        idea=(
            "The window counts the query itself: it sees its own key and the window - 1 "
            "before it. A key window steps back is already outside."
        ),
        look="Look at the comparison that blocks old keys: is the key window steps back blocked?",
    ),
    ("sliding_window_mask", "window_top_left"): MistakeHints(
        idea=(
            "The window is measured from the query's position in the text, i + num_keys - "
            "num_queries, as in chunk_causal_mask, not from its row number i."
        ),
        look="Look at the position you give query i: try fewer queries than keys.",
    ),
    ("RollingKVCache", "keeps_the_first"): MistakeHints(
        idea=(
            "A sliding window moves with the text: the tokens a future query may still see "
            "are the most recent ones, so the cache keeps the end of the sequence."
        ),
        look="Look at which end of the joined keys and values you keep.",
    ),
    ("RollingKVCache", "never_trimmed"): MistakeHints(
        idea=(
            "No future query looks further back than window - 1 tokens, so the cache keeps at "
            "most window tokens: its memory stays the same however long the text."
        ),
        look="Look at what self.keys and self.values hold after a long text.",
    ),
    ("RollingKVCache", "trimmed_before_returning"): MistakeHints(
        idea=(
            "The first query of a chunk of t looks window - 1 tokens behind itself, further "
            "back than the last window tokens. The call returns the kept tokens and all the "
            "new ones; only what is kept for the next call is trimmed."
        ),
        look="Look at the order of the steps: do you trim before you return?",
    ),
    ("rope", "interleaved_pairs"): MistakeHints(
        idea=(
            "This lesson pairs the two halves of the features: pair i is (x[..., i], "
            "x[..., i + head_dim / 2]). Neighbours (x0, x1) are the paper's pairing, a "
            "different model."
        ),
        look="Look at how you split x into the two members of each pair.",
    ),
    ("rope", "theta_exponent"): MistakeHints(
        idea=(
            "Pair i turns at theta ** (-2i / head_dim): the exponent runs from 0 towards "
            "-1, so the first pair turns one radian a step and the last ones nearly "
            "theta ** -1."
        ),
        look="Look at the exponent of theta in your frequencies, for i = 0 .. head_dim/2 - 1.",
    ),
    ("rope", "rotated_backwards"): MistakeHints(
        idea=(
            "Rotating (a, b) by a positive angle gives (a cos - b sin, a sin + b cos). The "
            "other signs turn it by the negative angle."
        ),
        look="Look at the signs of the sin terms in the two rotated features.",
    ),
    ("GroupedQueryAttention", "repeat_not_interleave"): MistakeHints(
        idea=(
            "Query head h uses key/value head h // group: each shared head is copied for "
            "consecutive query heads, [k0, k0, k1, k1], not tiled as [k0, k1, k0, k1]."
        ),
        look="Look at how you copy the key/value heads for their groups, and print the order.",
    ),
    ("GroupedQueryAttention", "mask_skipped_with_cache"): MistakeHints(
        idea=(
            "One new token may see every cached key, but a chunk of several new tokens is "
            "still causal: each of them must not see the ones after it."
        ),
        look="Look at when the mask is applied: is it skipped when there is a cache?",
    ),
    ("GroupedQueryAttention", "positions_from_zero"): MistakeHints(
        idea=(
            "A token's position is its place in the whole text. When the cache holds p "
            "tokens, the first new token sits at position p, not 0."
        ),
        look="Look at the positions you give rope when there is a cache.",
    ),
    ("GroupedQueryAttention", "query_offset_after_append"): MistakeHints(
        idea=(
            "Queries and keys of the same new tokens sit at the same positions. Appending to "
            "the cache moves cache.position on by t, so the new tokens' positions are those "
            "it held before."
        ),
        look="Look at when you read cache.position for the queries: before or after the append?",
    ),
    ("GroupedQueryAttention", "repeated_before_caching"): MistakeHints(
        idea=(
            "Sharing key/value heads is what makes the cache smaller: it holds num_kv_heads "
            "heads. They are copied for the query heads only after the cache returns them."
        ),
        look="Look at the order of the steps: is the repeat before or after the cache?",
    ),
    ("TinyDecoder", "one_cache_for_every_block"): MistakeHints(
        idea=(
            "Each block computes its own keys and values from its own input, so each block "
            "has its own cache: block i reads and extends self.caches[i]."
        ),
        look="Look at which cache you give each block.",
    ),
    ("TinyDecoder", "caches_not_passed"): MistakeHints(
        idea=(
            "With use_cache, the new tokens attend to every token before them, and those "
            "tokens' keys and values are only in the blocks' caches."
        ),
        look=(
            "Look at what each block gets when use_cache is True: the model's own caches, "
            "started once per prompt (start_caches), never new ones in forward."
        ),
    ),
    ("generate", "stale_caches"): MistakeHints(
        idea=(
            "A new prompt is a new text: its first token is at position 0, and it must not "
            "attend to the last prompt's tokens. Every prompt starts with fresh caches."
        ),
        look="Look at what you do with the caches before the prefill.",
    ),
    ("generate", "cleared_not_rebuilt"): MistakeHints(
        idea=(
            "A cache's buffers are sized for one batch. A prompt of another batch size needs "
            "caches of its size, so each prompt gets new ones, not old ones emptied."
        ),
        look="Look at how the caches are made ready for a new prompt.",
    ),
    ("generate", "first_position_logits"): MistakeHints(
        idea=(
            "The logits at position i predict token i + 1. The next token comes after the "
            "last position, so it is chosen from the last position's logits."
        ),
        look="Look at which position's logits you take after each call of the model.",
    ),
    ("generate", "whole_sequence_each_step"): MistakeHints(
        idea=(
            "The cache already holds every earlier token. Feeding them again appends their "
            "keys a second time: at each step only the newest token is new."
        ),
        look="Look at what you feed the model inside the loop.",
    ),
    ("generate", "cache_not_used"): MistakeHints(
        idea=(
            "The cache makes each step cost the same: the prompt goes through once with "
            "use_cache=True, and then each step feeds only the token just chosen."
        ),
        look="Look at how you call the model: is use_cache ever on?",
    ),
}
