"""Lesson 7's helpers: draw the tiles and their running statistics, and measure what tiling
buys on this machine.

All three are for the student's eyes. ``lesson.show_tiles`` draws the grid of tiles one
call of FlashAttention walks through, and how one query row's running maximum and sum
change tile after tile. ``lesson.compare_memory`` and ``lesson.compare_time`` run the
student's ``flash_attention`` and the naive attention that builds the whole score matrix, at
growing lengths T, and plot the memory each held and the time each took. The grader does not
run a cell that only calls them (see :func:`attnkit.notebook_code.is_check_cell`).
"""

from __future__ import annotations

import math
import textwrap
import time
from collections.abc import Callable, Sequence
from typing import Any

LENGTHS = (256, 512, 1024, 2048, 4096)
"""The lengths T the memory comparison runs at: the naive version's score matrix grows as T^2."""
TIMED = (256, 512, 1024, 2048)
"""The lengths T the time comparison runs at (a minute of a learner's time is enough)."""


def naive_attention(q: Any, k: Any, v: Any, causal: bool = False) -> tuple[Any, Any]:
    """Attention that builds the whole [..., T_q, T_k] score matrix: the baseline the
    comparisons measure against (output, log-sum-exp)."""
    import torch

    scores = torch.matmul(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5
    if causal:
        queries, keys = q.shape[-2], k.shape[-2]
        key_ahead = torch.arange(keys)[None, :] - torch.arange(queries)[:, None] > keys - queries
        scores = scores.masked_fill(key_ahead, -math.inf)
    lse = torch.logsumexp(scores, dim=-1)
    weights = torch.exp(scores - lse[..., None]).nan_to_num(0.0)
    return weights @ v, lse


def _tile_states(queries: int, keys: int, block_q: int, block_k: int, causal: bool) -> list[Any]:
    """Per tile: (row start, column start, rows, columns, state), state being "full",
    "partly masked" or "skipped" (every key in the future of every query)."""
    offset = keys - queries
    tiles = []
    for top in range(0, queries, block_q):
        rows = min(block_q, queries - top)
        for left in range(0, keys, block_k):
            cols = min(block_k, keys - left)
            state = "full"
            if causal and left > top + rows - 1 + offset:
                state = "skipped"
            elif causal and left + cols - 1 > top + offset:
                state = "partly masked"
            tiles.append((top, left, rows, cols, state))
    return tiles


def running_statistics(scores: Sequence[float], block: int) -> list[tuple[float, float, float]]:
    """(maximum, sum of exp(score - maximum), rescale factor exp(m_old - m_new)) after each
    block of one row of scores: what the online softmax keeps."""
    m, total, found = -math.inf, 0.0, []
    for start in range(0, len(scores), block):
        chunk = [s for s in scores[start : start + block] if s != -math.inf]
        m_new = max([m, *chunk])
        factor = math.exp(m - m_new) if m_new != -math.inf else 1.0
        total = total * factor + sum(math.exp(s - m_new) for s in chunk)
        found.append((m_new, total, factor))
        m = m_new
    return found


def show_tiles(
    num_queries: int = 10,
    num_keys: int = 13,
    block_q: int = 4,
    block_k: int = 5,
    causal: bool = True,
    seed: int = 7,
) -> list[tuple[float, float, float]]:
    """Draw the tiles of one FlashAttention call over a ``num_queries`` x ``num_keys`` score
    matrix (causal: aligned bottom-right), numbered in the order they are computed, the
    masked scores hatched and the skipped tiles grey; and, for the last query row, the
    running maximum and sum after each key tile. Returns that row's statistics."""
    import matplotlib.pyplot as plt

    fig, (grid, stats) = plt.subplots(1, 2, figsize=(11, 4.6), width_ratios=(1.1, 1))
    _draw_tiles(grid, num_queries, num_keys, block_q, block_k, causal)
    import random

    generator = random.Random(seed)
    last = num_queries - 1
    visible = last + num_keys - num_queries if causal else num_keys - 1
    row = [
        generator.gauss(0, 1.5) + 0.4 * j if j <= visible else -math.inf for j in range(num_keys)
    ]
    found = running_statistics(row, block_k)
    _draw_statistics(stats, found, last)
    fig.tight_layout()
    plt.show()
    return found


def _draw_tiles(
    grid: Any, num_queries: int, num_keys: int, block_q: int, block_k: int, causal: bool
) -> None:
    """The grid of tiles, numbered in order, the masked scores hatched."""
    from matplotlib.patches import Rectangle

    colours = {"full": "#9ecae1", "partly masked": "#c6dbef", "skipped": "#e0e0e0"}
    order = 0
    for i, j, rows, cols, state in _tile_states(num_queries, num_keys, block_q, block_k, causal):
        grid.add_patch(Rectangle((j, i), cols, rows, facecolor=colours[state], edgecolor="k"))
        if state != "skipped":
            order += 1
            label = f"{order}" + (" (tail)" if rows < block_q or cols < block_k else "")
            grid.text(j + cols / 2, i + rows / 2, label, ha="center", va="center", fontsize=9)
    for row in range(num_queries if causal else 0):
        for col in range(row + num_keys - num_queries + 1, num_keys):
            grid.add_patch(
                Rectangle((col, row), 1, 1, fill=False, hatch="///", linewidth=0, alpha=0.4)
            )
    grid.set_xlim(0, num_keys)
    grid.set_ylim(num_queries, 0)
    grid.set_aspect("equal")
    grid.set_xlabel(f"keys (T_k = {num_keys}, blocks of {block_k})")
    grid.set_ylabel(f"queries (T_q = {num_queries}, blocks of {block_q})")
    grid.set_title(
        "tiles, in the order they are computed\n(hatched: masked scores; grey: tiles skipped)",
        fontsize=10,
    )
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="k") for c in colours.values()]
    grid.legend(
        handles, list(colours), loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, fontsize=8
    )


def _draw_statistics(stats: Any, found: list[tuple[float, float, float]], last: int) -> None:
    """One row's running maximum and sum after each key tile, and where the sum shrank."""
    blocks = range(1, len(found) + 1)
    stats.plot(blocks, [m for m, _, _ in found], "o-", label="running maximum m")
    stats.plot(blocks, [t for _, t, _ in found], "s-", label="running sum l of exp(s - m)")
    for number, (_, total, factor) in zip(blocks, found, strict=True):
        if number > 1 and factor < 1:  # the first tile has no old sum to rescale
            stats.annotate(
                f"max grew: old sum x {factor:.2f}",
                (number, total),
                textcoords="offset points",
                xytext=(6, -14),
                fontsize=8,
            )
    stats.set_xticks(list(blocks))
    stats.set_xlabel("key tiles seen so far")
    stats.set_title(f"query row {last} (the last): m and l after each key tile", fontsize=10)
    stats.legend(fontsize=8)


def _inputs(length: int, heads: int, dim: int, seed: int) -> tuple[Any, Any, Any]:
    import torch

    generator = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(1, heads, length, dim, generator=generator) for _ in range(3))


def _both(flash_attention: Callable[..., Any], block: int) -> tuple[Callable[..., Any], ...]:
    """The naive version, then the student's with square tiles of ``block``."""

    def tiled(q: Any, k: Any, v: Any) -> Any:
        return flash_attention(q, k, v, block, block)

    return naive_attention, tiled


def measure_memory(
    flash_attention: Callable[..., Any],
    lengths: Sequence[int] = LENGTHS,
    heads: int = 2,
    dim: int = 16,
    block: int = 256,
) -> list[tuple[int, float, float]]:
    """(T, MiB the naive version held at once, MiB ``flash_attention`` held at once) at each
    length: the tensors each call made and kept alive together (see
    attnkit.tensor_memory.MemoryWatch), inputs not counted."""
    from .tensor_memory import MIB, MemoryWatch

    rows = []
    for length in lengths:
        q, k, v = _inputs(length, heads, dim, seed=length)
        held = []
        for run in _both(flash_attention, block):
            with MemoryWatch(live=True, numpy=True) as watch:
                run(q, k, v)
            held.append(max(watch.peak, watch.numpy_peak) / MIB)
        rows.append((length, held[0], held[1]))
    return rows


def measure_time(
    flash_attention: Callable[..., Any],
    lengths: Sequence[int] = TIMED,
    heads: int = 2,
    dim: int = 16,
    block: int = 256,
    repeats: int = 3,
) -> list[tuple[int, float, float]]:
    """(T, seconds of the naive version, seconds of ``flash_attention``) at each length, the
    best of ``repeats`` runs each, on one thread (a fair race: several threads on a busy
    machine wait for each other more than they work on tensors this small)."""
    import torch

    rows, threads = [], torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for length in lengths:
            rows.append(_timed(flash_attention, length, heads, dim, block, repeats))
    finally:
        torch.set_num_threads(threads)
    return rows


def _timed(
    flash_attention: Callable[..., Any], length: int, heads: int, dim: int, block: int, repeats: int
) -> tuple[int, float, float]:
    """(T, best seconds of the naive version, best seconds of ``flash_attention``)."""
    q, k, v = _inputs(length, heads, dim, seed=length)
    best = []
    for run in _both(flash_attention, block):
        seconds = math.inf
        for _ in range(repeats):
            started = time.perf_counter()
            run(q, k, v)
            seconds = min(seconds, time.perf_counter() - started)
        best.append(seconds)
    return length, best[0], best[1]


def _plot(rows: list[tuple[int, float, float]], ylabel: str, title: str, log: bool) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    lengths = [r[0] for r in rows]
    ax.plot(lengths, [r[1] for r in rows], "o-", label="naive: the whole T x T score matrix")
    ax.plot(lengths, [r[2] for r in rows], "s-", label="your flash_attention: one tile at a time")
    ax.set_xscale("log", base=2)
    if log:
        ax.set_yscale("log")
    ax.set_xticks(lengths, [str(n) for n in lengths])
    ax.set_xlabel("sequence length T")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    plt.show()


def compare_memory(
    flash_attention: Callable[..., Any], lengths: Sequence[int] = LENGTHS, block: int = 256
) -> list[tuple[int, float, float]]:
    """Measure and plot the memory of naive attention and of ``flash_attention`` against T
    (1 sequence, 2 heads of 16 features, blocks of ``block``); print the table."""
    rows = measure_memory(flash_attention, lengths, block=block)
    print(f"{'T':>6}  {'naive (MiB)':>12}  {'tiled (MiB)':>12}")
    for length, naive, tiled in rows:
        print(f"{length:>6}  {naive:>12.1f}  {tiled:>12.2f}")
    _plot(rows, "MiB of tensors held at once", "memory: T^2 against T", log=True)
    return rows


def compare_time(
    flash_attention: Callable[..., Any], lengths: Sequence[int] = TIMED, block: int = 256
) -> list[tuple[int, float, float]]:
    """Time naive attention and ``flash_attention`` against T on this machine's CPU, plot
    both and print the table, and what the numbers mean."""
    rows = measure_time(flash_attention, lengths, block=block)
    print(f"{'T':>6}  {'naive (s)':>10}  {'tiled (s)':>10}")
    for length, naive, tiled in rows:
        print(f"{length:>6}  {naive:>10.4f}  {tiled:>10.4f}")
    _plot(rows, "seconds (best of 3)", "time on this CPU, one thread", log=True)
    print(textwrap.fill(time_note(rows), width=88))
    return rows


def time_note(rows: list[tuple[int, float, float]]) -> str:
    """What the timings say, honestly: on a CPU tiling is about memory, and the time can go
    either way."""
    length, naive, tiled = rows[-1]
    if tiled < naive:
        why = (
            f"faster here at T = {length} ({tiled:.3g} s against {naive:.3g} s): each tile "
            "stays in the CPU's cache while the naive version streams its T x T matrices "
            "through main memory. That is a side effect on a CPU, and it varies with the "
            "machine and the sizes"
        )
    else:
        why = (
            f"slower here at T = {length} ({tiled:.3g} s against {naive:.3g} s): the naive "
            "version makes a few big matrix products that PyTorch runs at full speed, the "
            "tiled one many small ones driven by a Python loop"
        )
    return (
        f"On a CPU, tiling is about memory, not speed. The tiled version was {why}. What does "
        "not depend on the machine is the memory plot: T^2 against T. On a GPU, FlashAttention "
        "is faster by design: each tile stays in the chip's small fast memory, while the T x T "
        "matrix would travel to and from its large slow one."
    )
