"""Lesson 6's figures, drawn from the learner's own code: what a sliding window lets each
query see, what RoPE does to a dot product as the distance grows, how much memory the
cache of a large model takes with multi-head, grouped-query and multi-query attention,
and how long each generated token takes with and without the cache.

They are for the student's eyes. The grader does not run a cell that only calls one of
them (see :func:`attnkit.notebook_code.is_check_cell`): no exercise is graded on what they
show, and the timing alone would add seconds to every submission.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def _show(fig: Any) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    plt.show()


def show_window(
    sliding_window_mask: Callable[[int, int, int], Any], num_tokens: int = 16, window: int = 4
) -> Any:
    """Draw ``sliding_window_mask``: the whole sequence (every token a query), and a chunk of
    the last four queries against every key, as a cached chunk of decoding sees them. A
    visible key is dark. Returns the mask of the whole sequence."""
    import matplotlib.pyplot as plt
    import numpy as np

    whole = sliding_window_mask(num_tokens, num_tokens, window)
    chunk = sliding_window_mask(4, num_tokens, window)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [4, 4]})
    for ax, mask, title in (
        (axes[0], whole, f"{num_tokens} queries, window {window}"),
        (axes[1], chunk, f"the last 4 queries against {num_tokens} keys"),
    ):
        seen = ~np.asarray(mask, dtype=bool)
        ax.imshow(seen, cmap="Blues", vmin=0, vmax=1.4, aspect="equal")
        rows = seen.shape[0]
        first = num_tokens - rows
        ax.set_yticks(range(rows), [str(first + i) for i in range(rows)], fontsize=7)
        ax.set_xticks(range(num_tokens), [str(j) for j in range(num_tokens)], fontsize=7)
        ax.set_xlabel("key position")
        ax.set_ylabel("query position")
        ax.set_title(title, fontsize=10)
        for i in range(rows):
            visible = int(seen[i].sum())
            ax.text(num_tokens - 0.4, i, f" {visible}", va="center", fontsize=7, color="grey")
    fig.suptitle("sliding-window attention: each query sees itself and the window - 1 keys before")
    _show(fig)
    return whole


def rope_dot_products(rope: Callable[..., Any], num_positions: int, head_dim: int) -> Any:
    """[num_positions, num_positions]: the dot product of a query at position m with a key at
    position n, both the all-ones vector before ``rope`` rotates them, divided by head_dim."""
    import torch

    ones = torch.ones(num_positions, head_dim, dtype=torch.float64)
    positions = torch.arange(num_positions)
    rotated = rope(ones, positions)
    return (rotated @ rotated.T / head_dim).numpy()


def show_rope(rope: Callable[..., Any], num_positions: int = 128, head_dim: int = 64) -> Any:
    """Draw what ``rope`` does to the dot product of a query and a key as their positions
    move apart: a heatmap over (query position, key position), which depends only on the
    distance between them, and the dot product against the distance. Returns the map."""
    import matplotlib.pyplot as plt
    import numpy as np

    dots = rope_dot_products(rope, num_positions, head_dim)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    image = axes[0].imshow(dots, cmap="RdBu_r", vmin=-1, vmax=1)
    fig.colorbar(image, ax=axes[0], fraction=0.046, pad=0.04)
    axes[0].set_xlabel("key position n")
    axes[0].set_ylabel("query position m")
    axes[0].set_title("q . k after rope, q = k = ones (divided by head_dim)", fontsize=10)
    distance = np.arange(num_positions)
    axes[1].plot(distance, dots[num_positions - 1, num_positions - 1 - distance], marker=".")
    axes[1].axhline(0, color="grey", linewidth=0.6)
    axes[1].set_xlabel("distance m - n")
    axes[1].set_ylabel("q . k / head_dim")
    axes[1].set_title("the same dot product against the distance", fontsize=10)
    fig.suptitle(
        "RoPE: the score of two identical vectors falls as they move apart, "
        "and depends only on the distance"
    )
    _show(fig)
    return dots


LARGE_MODEL = {"layers": 32, "heads": 32, "head_dim": 128}
"""A Llama-2-7B-sized stack of attention layers, for the cache-memory figure."""


def cache_bytes(
    attention_class: Any,
    context_length: int,
    num_kv_heads: int,
    window: int | None = None,
    heads: int = LARGE_MODEL["heads"],
    head_dim: int = LARGE_MODEL["head_dim"],
) -> int:
    """Bytes one layer's cache holds after ``context_length`` tokens: the layer is the
    learner's ``attention_class`` with ``heads`` query heads of ``head_dim``, its cache what
    its ``new_cache(1)`` makes, filled by the cache's own forward. Built on PyTorch's
    "meta" device: shapes and sizes without memory, so a 32k-token cache costs nothing."""
    import torch

    with torch.device("meta"):
        layer = attention_class(8, heads * head_dim, context_length, heads, num_kv_heads, window)
        cache = layer.new_cache(1)
        new = torch.empty(1, num_kv_heads, context_length, head_dim)
        cache(new, new)
    return sum(
        tensor.numel() * tensor.element_size()
        for tensor in (getattr(cache, "keys", None), getattr(cache, "values", None))
        if isinstance(tensor, torch.Tensor)
    )


def show_cache_memory(
    attention_class: Any,
    contexts: tuple[int, ...] = (1024, 2048, 4096, 8192, 16384, 32768),
    window: int = 4096,
) -> dict[str, list[float]]:
    """Draw the memory of a 32-layer model's caches (32 query heads of 128 features, float32)
    against the context length, with the learner's ``GroupedQueryAttention`` and caches:
    multi-head (32 key/value heads), grouped-query (8), multi-query (1), and grouped-query
    with a sliding window. Prints the table and returns it, in GiB."""
    import matplotlib.pyplot as plt

    variants = {
        "multi-head (32 kv heads)": (32, None),
        "grouped-query (8 kv heads)": (8, None),
        "multi-query (1 kv head)": (1, None),
        f"grouped-query (8), window {window}": (8, window),
    }
    layers = LARGE_MODEL["layers"]
    gib = {
        label: [layers * cache_bytes(attention_class, n, kv, w) / 2**30 for n in contexts]
        for label, (kv, w) in variants.items()
    }
    # The table's headings are short, so that it fits a notebook's output area.
    short = dict(
        zip(gib, ("multi-head", "grouped (8)", "multi-query", f"window {window}"), strict=True)
    )
    print("context  " + "  ".join(f"{short[label]:>14}" for label in gib))
    for index, n in enumerate(contexts):
        print(f"{n:7}  " + "  ".join(f"{gib[label][index]:10.2f} GiB" for label in gib))
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for label, values in gib.items():
        ax.plot(contexts, values, marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(contexts, [f"{n // 1024}k" for n in contexts])
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("KV cache, GiB (32 layers, float32)")
    ax.set_title("one sequence's KV cache, from your GroupedQueryAttention and caches")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    _show(fig)
    return gib


def time_generation(
    model_class: Any,
    generate: Callable[..., Any],
    new_tokens: int = 320,
    prompt_tokens: int = 16,
) -> dict[str, list[float]]:
    """Time each generated token, on this CPU, of the learner's ``model_class`` (a
    TinyDecoder of 4 layers, 128 features, 8 query heads sharing 2 key/value heads) with
    the learner's ``generate`` (the cache) and with greedy decoding that feeds the whole
    sequence at every step (no cache). Draws milliseconds per token against its position and
    returns them."""
    import matplotlib.pyplot as plt
    import torch

    torch.manual_seed(0)
    context = prompt_tokens + new_tokens
    model = model_class(512, 128, context, 8, 2, 4).eval()
    prompt = torch.randint(0, 512, (1, prompt_tokens), generator=torch.Generator().manual_seed(1))
    # Tiny tensors: one thread is faster than several that wait for each other, and it
    # measures the work rather than the waiting.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        cached, uncached, same = _timed(model, generate, prompt, new_tokens)
    finally:
        torch.set_num_threads(threads)
    print(
        f"{new_tokens} tokens: {sum(cached) / 1000:.2f} s with the cache, "
        f"{sum(uncached) / 1000:.2f} s without ({sum(uncached) / max(sum(cached), 1e-9):.1f}x); "
        f"the same tokens: {same}"
    )
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(range(1, len(uncached) + 1), uncached, label="no cache: the whole sequence again")
    ax.plot(range(1, len(cached) + 1), cached, label="your generate: prefill, then one token")
    ax.set_xlabel("generated token (the first one includes the prefill)")
    ax.set_ylabel("milliseconds")
    ax.set_title("time per generated token, measured on this CPU")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    _show(fig)
    return {"cached_ms": cached, "uncached_ms": uncached}


def _timed(
    model: Any, generate: Callable[..., Any], prompt: Any, new_tokens: int
) -> tuple[list[float], list[float], bool]:
    """Milliseconds per token with ``generate`` (the end of each model call stamped), and
    with greedy decoding that feeds the whole sequence each step; and whether the ids agree."""
    import torch

    stamps: list[float] = []

    def stamp(*_: Any) -> None:
        stamps.append(time.perf_counter())

    with torch.no_grad():
        handle = model.register_forward_hook(stamp)
        start = time.perf_counter()
        cached_ids, _ = generate(model, prompt, new_tokens)
        handle.remove()
        cached = [1000 * (b - a) for a, b in zip([start, *stamps], stamps, strict=False)]
        uncached, ids = [], prompt
        for _ in range(new_tokens):
            began = time.perf_counter()
            next_id = model(ids)[:, -1].argmax(dim=-1, keepdim=True)
            uncached.append(1000 * (time.perf_counter() - began))
            ids = torch.cat((ids, next_id), dim=-1)  # the whole sequence again, next step
    return cached, uncached, torch.equal(ids, cached_ids)
