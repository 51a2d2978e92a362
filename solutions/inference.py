"""Attention at inference: how a trained model generates text fast, and with little memory.

A decoder generates one token at a time, and each new token attends to every token before
it. The keys and values of those earlier tokens never change, so a model computes them once
and keeps them: the *KV cache*. Everything in this module serves that cache.

* :class:`KVCache`: keys and values of the tokens so far, in buffers of a fixed size, with
  the position where the next token goes; it refuses to overflow.
* :func:`chunk_causal_mask`: the causal mask of a chunk of queries against a longer run of
  keys. The queries are the *last* tokens, so the mask is aligned bottom-right.
* :func:`sliding_window_mask` and :class:`RollingKVCache`: attention to the last ``window``
  tokens only, and a cache that keeps only those (its size is ``min(T, window)``).
* :func:`rope`: rotary position embeddings, applied to queries and keys at their absolute
  positions, so a cached key keeps the position it was computed at.
* :class:`GroupedQueryAttention`: lesson 4's causal multi-head attention, where groups of
  query heads share one key/value head (``num_kv_heads == num_heads`` is multi-head
  attention, ``num_kv_heads == 1`` multi-query attention), with RoPE and a cache.
* :class:`TinyDecoder` and :func:`generate`: a tiny model built from those layers, and
  greedy generation with its caches, which must give exactly the tokens of generation
  without them.

Off-limits to students: ``F.scaled_dot_product_attention`` and ``nn.MultiheadAttention``.
"""

from __future__ import annotations

import torch
from torch import nn

from attnkit.assignments import ATTENTION_CALLS

from .exercises import exercise

__all__ = [
    "GroupedQueryAttention",
    "KVCache",
    "RollingKVCache",
    "TinyDecoder",
    "chunk_causal_mask",
    "generate",
    "rope",
    "sliding_window_mask",
]

SLUG = "06_attention_at_inference"


class KVCache(nn.Module):
    """Keys and values of every token seen so far, in buffers of a fixed size.

    Constructor ``(batch, heads, max_tokens, head_dim, dtype=torch.float32)``: buffers
    ``keys`` and ``values``, zeros of shape [batch, heads, max_tokens, head_dim], and
    ``position``, the number of tokens cached (0). ``reset()`` forgets them all.

    forward(keys, values): keys, values [batch, heads, t, head_dim], the new tokens'.
    Writes them at positions ``position .. position + t - 1``, advances ``position`` by t,
    and returns (keys, values) of every token cached so far, [batch, heads, position,
    head_dim]. When the new tokens do not fit, it raises ValueError and changes nothing.
    """

    def __init__(
        self, batch: int, heads: int, max_tokens: int, head_dim: int, dtype=torch.float32
    ) -> None:
        super().__init__()
        self.max_tokens = max_tokens
        self.register_buffer("keys", torch.zeros(batch, heads, max_tokens, head_dim, dtype=dtype))
        self.register_buffer("values", torch.zeros(batch, heads, max_tokens, head_dim, dtype=dtype))
        self.position = 0

    def reset(self) -> None:
        """Forget every token: the next one is written at position 0."""
        self.position = 0

    @exercise(SLUG, "append keys and values, advance the position, refuse to overflow")
    def forward(
        self, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        start, end = self.position, self.position + keys.shape[-2]
        if end > self.max_tokens:
            raise ValueError(
                f"the cache holds {self.max_tokens} tokens: {start} cached and "
                f"{end - start} new ones do not fit"
            )
        self.keys[:, :, start:end] = keys
        self.values[:, :, start:end] = values
        self.position = end
        return self.keys[:, :, :end], self.values[:, :, :end]


@exercise(SLUG, "causal mask of the last queries against all keys, True where blocked")
def chunk_causal_mask(num_queries: int, num_keys: int) -> torch.Tensor:
    """Bool [num_queries, num_keys], True where key j is blocked for query i.

    The queries are the last ``num_queries`` of the ``num_keys`` tokens: query i is the token
    at position ``i + num_keys - num_queries``, and it may see the keys up to that position.
    The mask is aligned bottom-right; with as many queries as keys it is lesson 3's mask.
    """
    offset = num_keys - num_queries
    return torch.ones(num_queries, num_keys, dtype=torch.bool).triu(offset + 1)


@exercise(SLUG, "causal mask that also blocks keys `window` or more steps back")
def sliding_window_mask(num_queries: int, num_keys: int, window: int) -> torch.Tensor:
    """Bool [num_queries, num_keys], True where key j is blocked for query i.

    Aligned bottom-right as :func:`chunk_causal_mask`: query i is at position
    ``p = i + num_keys - num_queries``. It sees the ``window`` keys ``p - window + 1 .. p``
    (itself included); every other key is blocked.
    """
    offset = num_keys - num_queries
    query = torch.arange(num_queries)[:, None] + offset
    key = torch.arange(num_keys)[None, :]
    return (key > query) | (key <= query - window)


class RollingKVCache(nn.Module):
    """A cache for sliding-window attention: it keeps only the last ``window`` tokens.

    Constructor ``(batch, heads, window, head_dim, dtype=torch.float32)``: ``keys`` and
    ``values``, empty [batch, heads, 0, head_dim], and ``position``, the number of tokens
    seen (0). ``reset()`` forgets them all.

    forward(keys, values): keys, values [batch, heads, t, head_dim], the new tokens'.
    Returns (keys, values): the kept tokens followed by the new ones, [batch, heads, kept +
    t, head_dim], so that each new query finds the ``window`` keys it may see. Afterwards
    the cache keeps the last ``min(position, window)`` of them, and ``position`` has grown
    by t.
    """

    def __init__(
        self, batch: int, heads: int, window: int, head_dim: int, dtype=torch.float32
    ) -> None:
        super().__init__()
        self.window = window
        self.register_buffer("keys", torch.zeros(batch, heads, 0, head_dim, dtype=dtype))
        self.register_buffer("values", torch.zeros(batch, heads, 0, head_dim, dtype=dtype))
        self.position = 0

    def reset(self) -> None:
        """Forget every token."""
        self.keys, self.values = self.keys[:, :, :0], self.values[:, :, :0]
        self.position = 0

    @exercise(SLUG, "a cache that keeps only the last `window` tokens")
    def forward(
        self, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        all_keys = torch.cat([self.keys, keys], dim=2)
        all_values = torch.cat([self.values, values], dim=2)
        # The new queries need the kept keys as well as the new ones (the first new query
        # looks window - 1 tokens back), so trim only what is stored, not what is returned.
        self.keys = all_keys[:, :, -self.window :]
        self.values = all_values[:, :, -self.window :]
        self.position += keys.shape[2]
        return all_keys, all_values


@exercise(SLUG, "rotate pairs of features by angles that grow with the position")
def rope(x: torch.Tensor, positions: torch.Tensor, theta: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding of ``x`` [..., T, head_dim] at ``positions`` [T] (int64).

    The features are paired half against half: pair i is ``(x[..., i], x[..., i + h])`` with
    ``h = head_dim // 2``. At position p, pair i is rotated by the angle
    ``p * theta ** (-2 * i / head_dim)``: ``(a, b) -> (a cos - b sin, a sin + b cos)``.
    Low pairs turn fast, high pairs slowly. The result has the shape and dtype of ``x``.
    """
    half = x.shape[-1] // 2
    # Angles in float64: at position 10,000 a float32 angle is already off by 1e-3 rad.
    pairs = torch.arange(half, dtype=torch.float64)
    frequencies = theta ** (-2 * pairs / x.shape[-1])
    angles = positions.to(torch.float64)[:, None] * frequencies[None, :]  # [T, half]
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


class GroupedQueryAttention(nn.Module):
    """Causal attention where groups of query heads share key/value heads, with RoPE and a cache.

    Constructor ``(d_in, d_out, context_length, num_heads, num_kv_heads, window=None)``:
    ``head_dim = d_out // num_heads`` (even, for RoPE), and ``num_heads`` a multiple of
    ``num_kv_heads``. Parameters, in this order: ``W_query`` Linear(d_in, d_out),
    ``W_key`` and ``W_value`` Linear(d_in, num_kv_heads * head_dim), all without bias, then
    ``out_proj`` Linear(d_out, d_out). ``new_cache(batch)`` makes the cache this layer needs:
    a KVCache of ``context_length`` tokens, or with a ``window`` a RollingKVCache.

    forward(x, cache=None): x [batch, t, d_in] -> [batch, t, d_out].
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        num_heads: int,
        num_kv_heads: int,
        window: int | None = None,
    ) -> None:
        super().__init__()
        if d_out % num_heads or num_heads % num_kv_heads:
            raise ValueError("d_out must divide into num_heads, and num_heads into num_kv_heads")
        self.d_out, self.num_heads, self.num_kv_heads = d_out, num_heads, num_kv_heads
        self.head_dim = d_out // num_heads
        self.context_length, self.window = context_length, window
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, num_kv_heads * self.head_dim, bias=False)
        self.W_value = nn.Linear(d_in, num_kv_heads * self.head_dim, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)

    def new_cache(self, batch: int) -> nn.Module:
        """An empty cache for ``batch`` sequences: num_kv_heads heads, not num_heads."""
        if self.window is None:
            return KVCache(batch, self.num_kv_heads, self.context_length, self.head_dim)
        return RollingKVCache(batch, self.num_kv_heads, self.window, self.head_dim)

    @exercise(
        SLUG,
        "shared key/value heads, RoPE at absolute positions, a cache",
        forbidden=ATTENTION_CALLS,
        uses=("KVCache", "chunk_causal_mask", "sliding_window_mask", "RollingKVCache", "rope"),
    )
    def forward(self, x: torch.Tensor, cache: nn.Module | None = None) -> torch.Tensor:
        batch, num_tokens, _ = x.shape
        queries = self.W_query(x).view(batch, num_tokens, self.num_heads, self.head_dim)
        keys = self.W_key(x).view(batch, num_tokens, self.num_kv_heads, self.head_dim)
        values = self.W_value(x).view(batch, num_tokens, self.num_kv_heads, self.head_dim)
        queries, keys, values = (t.transpose(1, 2) for t in (queries, keys, values))

        # The new tokens' absolute positions: after the ones the cache already holds.
        start = 0 if cache is None else cache.position
        positions = torch.arange(start, start + num_tokens)
        # Queries and keys share their positions: one call of rope turns both.
        both = rope(torch.cat([queries, keys], dim=1), positions)
        queries, keys = both.split([self.num_heads, self.num_kv_heads], dim=1)
        if cache is not None:
            keys, values = cache(keys, values)  # every cached token's, the new ones last

        # Query head h uses key/value head h // group: each group's shared head, repeated
        # next to itself ([k0, k0, k1, k1] for two groups of two), not tiled.
        group = self.num_heads // self.num_kv_heads
        keys = keys.repeat_interleave(group, dim=1)
        values = values.repeat_interleave(group, dim=1)

        scores = queries @ keys.transpose(-2, -1) / self.head_dim**0.5
        if self.window is None:
            blocked = chunk_causal_mask(num_tokens, keys.shape[-2])
        else:
            blocked = sliding_window_mask(num_tokens, keys.shape[-2], self.window)
        weights = torch.softmax(scores.masked_fill(blocked, -torch.inf), dim=-1)
        context = (weights @ values).transpose(1, 2).reshape(batch, num_tokens, self.d_out)
        return self.out_proj(context)


class TinyDecoder(nn.Module):
    """A decoder of attention-only blocks with rotary positions: no position embedding.

    Constructor ``(vocab_size, d_model, context_length, num_heads, num_kv_heads,
    num_layers, window=None)``. Parameters, in this order: ``token_embedding``
    (Embedding(vocab_size, d_model)), ``blocks`` (a ModuleList of ``num_layers``
    GroupedQueryAttention(d_model, d_model, context_length, num_heads, num_kv_heads, window))
    and ``head`` (Linear(d_model, vocab_size)). ``start_caches(batch)`` gives every block a
    fresh cache of its own, in ``self.caches``.

    forward(ids, use_cache=False): ids [batch, t] int64 -> logits [batch, t, vocab_size].
    Each block adds its output to its input; with ``use_cache``, block i reads and extends
    ``self.caches[i]``, and ``ids`` are the tokens after the ones already cached.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        context_length: int,
        num_heads: int,
        num_kv_heads: int,
        num_layers: int,
        window: int | None = None,
    ) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(
            GroupedQueryAttention(d_model, d_model, context_length, num_heads, num_kv_heads, window)
            for _ in range(num_layers)
        )
        self.head = nn.Linear(d_model, vocab_size)
        self.caches: list[nn.Module] | None = None

    def start_caches(self, batch: int) -> None:
        """A fresh, empty cache for each block, sized for ``batch`` sequences."""
        self.caches = [block.new_cache(batch) for block in self.blocks]

    @exercise(
        SLUG,
        "residual blocks, each with its own cache",
        forbidden=ATTENTION_CALLS,
        uses=("GroupedQueryAttention",),
    )
    def forward(self, ids: torch.Tensor, use_cache: bool = False) -> torch.Tensor:
        x = self.token_embedding(ids)
        caches = self.caches if use_cache else [None] * len(self.blocks)
        for block, cache in zip(self.blocks, caches, strict=True):
            x = x + block(x, cache)
        return self.head(x)


@exercise(
    SLUG,
    "greedy decoding with the caches: prefill, then one token a step",
    uses=("TinyDecoder",),
)
def generate(
    model: nn.Module, prompt: torch.Tensor, max_new_tokens: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy generation with the model's caches.

    Start fresh caches for this prompt, feed the whole prompt once (the *prefill*), then
    feed each chosen token alone. Each step picks the argmax of the logits at the last
    position. Returns (ids, logits): the prompt followed by the ``max_new_tokens`` chosen
    ids, and the logits [batch, max_new_tokens, vocab_size] each choice was made from.
    """
    model.start_caches(prompt.shape[0])
    ids, chosen_from = prompt, []
    logits = model(prompt, use_cache=True)[:, -1]
    for step in range(max_new_tokens):
        chosen_from.append(logits)
        next_id = logits.argmax(dim=-1, keepdim=True)
        ids = torch.cat([ids, next_id], dim=1)
        if step + 1 < max_new_tokens:
            logits = model(next_id, use_cache=True)[:, -1]
    return ids, torch.stack(chosen_from, dim=1)
