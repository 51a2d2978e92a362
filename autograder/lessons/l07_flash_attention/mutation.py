"""Lesson 7's mutation testing: fresh inputs for each exercise, to tell an equivalent mutant
from a survivor, and the survivors a human judged equivalent to the reference, with why
(see :mod:`attnkit_autograder.quality.mutation`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..requests import Request, calls, randn
from .exact import exact_attention


def flash_requests() -> list[Request]:
    """Tail tiles, T_q != T_k both ways (causal: some rows see nothing), blocks of one and
    blocks larger than T, 2-d to 4-d inputs, large scores, float64."""
    found = []
    for seed, (lead, n_q, n_k, block_q, block_k, causal) in enumerate(
        [
            ((2,), 23, 23, 5, 7, False),
            ((2,), 23, 23, 5, 7, True),
            ((1, 3), 9, 30, 4, 8, True),
            ((3,), 30, 9, 8, 4, True),
            ((), 11, 13, 1, 2, True),
            ((2, 1), 6, 6, 10, 10, True),
        ]
    ):
        q = randn(*lead, n_q, 6, seed=20 + seed)
        k, v = randn(*lead, n_k, 6, seed=40 + seed), randn(*lead, n_k, 3, seed=60 + seed)
        found.append(([q, k, v, block_q, block_k, causal], {}))
    big = [randn(2, 12, 4, seed=80) * 300, randn(2, 15, 4, seed=81), randn(2, 15, 4, seed=82)]
    found.append(([*big, 4, 5, True], {}))
    wide = [randn(7, 4, seed=83, dtype=np.float64), randn(9, 4, seed=84, dtype=np.float64)]
    found.append(([*wide, randn(9, 2, seed=85, dtype=np.float64), 3, 4, True], {}))
    return calls(*found)


def backward_requests() -> list[Request]:
    """The same shapes, with the output and log-sum-exp of exact attention."""
    found = []
    for args, _ in [(r[1]["args"], None) for r in flash_requests()]:
        q, k, v, block_q, block_k, causal = args
        out, lse = (a.astype(q.dtype) for a in exact_attention(q, k, v, causal))
        grad = randn(*out.shape, seed=out.size % 97, dtype=q.dtype)
        found.append(([q, k, v, out, lse, grad, block_q, block_k, causal], {}))
    return calls(*found)


def softmax_requests() -> list[Request]:
    x = randn(3, 4, 11, seed=90) * 5
    x[0, 1, ::2] = -np.inf
    x[1, 2] = -np.inf
    x[2, 0] = np.linspace(-1e4, 1e4, 11, dtype=np.float32)
    return calls(
        *[([x, block], {}) for block in (1, 2, 3, 5, 11, 20)],
        ([randn(5, seed=91, dtype=np.float64) * 40, 2], {}),
    )


REQUESTS: dict[str, Callable[[], list[Request]]] = {
    "online_softmax": softmax_requests,
    "flash_attention": flash_requests,
    "flash_attention_backward": backward_requests,
}
"""Per exercise: the requests (shapes the contract allows, none of them the suite's own)."""

SKIP = "if causal and j > rows[-1] + offset:"
SKIPPED = (
    "skipping the tiles in the future of every row of the query tile only saves time: "
    "every weight in them is exp(-inf) = 0"
)
SAME_D = "q and k have the same width d by contract"
BROADCAST = (
    "a start without the rows' axes broadcasts to them at the first update; a query tile "
    "that sees no key at all keeps it, and the final where()s broadcast it to zeros and -inf"
)
UNSEEN = (
    "the branch is taken only while a row's maximum is -inf, that is (the causal mask aligned "
    "bottom-right: every row that sees a key sees key 0 in its first tile) by a row that sees "
    "no key at all: whatever its sums become, seen is False and the final where()s set its "
    "output row to zeros and its lse to -inf"
)

JUDGED: list[tuple[str, str, tuple[str, ...], str]] = [
    (
        "online_softmax",
        "shift = torch.where(m == -math.inf, 0.0, m)",
        ("shift = torch.where(m == -math.inf, 0.0, m) -> pass",),
        "the last block's shift was computed from the final maximum already (n >= 1)",
    ),
    (
        "online_softmax",
        "shift = torch.where(m == -math.inf, 0.0, m)",
        ("0.0 -> 1.0",),
        "only a row of nothing but -inf takes the branch, and exp(-inf - 1) is 0 too",
    ),
    (
        "online_softmax",
        "shift = torch.where(m_new == -math.inf, 0.0, m_new)",
        ("0.0 -> 1.0",),
        "a maximum still -inf means every score so far is -inf: exp(-inf - 1) is 0 too",
    ),
    (
        "online_softmax",
        "m = torch.full(scores.shape[:-1], -math.inf, dtype=scores.dtype)",
        ("1 -> 0",),
        "a 0-d start broadcasts to the rows' shape at the first block, which every row has",
    ),
    (
        "online_softmax",
        "total = torch.zeros(scores.shape[:-1], dtype=scores.dtype)",
        ("1 -> 0",),
        "a 0-d start broadcasts to the rows' shape at the first block, which every row has",
    ),
    (
        "flash_attention",
        "lse = q.new_full(q.shape[:-1], -math.inf)",
        ("-math.inf -> math.inf", "-math.inf -> 0.0"),
        "every row of lse is written once its query tile's key loop is done",
    ),
    ("flash_attention", SKIP, (f"{SKIP} -> pass",), SKIPPED),
    ("flash_attention", "break", ("break -> pass",), SKIPPED),
    (
        "flash_attention",
        "n_q, n_k = (q.shape[-2], k.shape[-2])",
        ("k.shape -> v.shape",),
        "k and v have the same T_k by contract",
    ),
    ("flash_attention", "scale = 1 / math.sqrt(q.shape[-1])", ("q.shape -> k.shape",), SAME_D),
    (
        "flash_attention",
        "safe = torch.where(seen, total, 1.0)",
        ("1.0 -> 0.0",),
        "safe is read only where seen is True: the 0/0 of a row that sees nothing is never used",
    ),
    (
        "flash_attention",
        "shift = torch.where(m_new == -math.inf, 0.0, m_new)",
        ("0.0 -> 1.0", "-math.inf -> math.inf", "-math.inf -> 0.0"),
        UNSEEN,
    ),
    ("flash_attention", "m = q.new_full(q_tile.shape[:-1], -math.inf)", ("1 -> 0",), BROADCAST),
    ("flash_attention", "total = q.new_zeros(q_tile.shape[:-1])", ("1 -> 0",), BROADCAST),
    (
        "flash_attention",
        "acc = q.new_zeros(*q_tile.shape[:-1], v.shape[-1])",
        ("1 -> 0",),
        BROADCAST,
    ),
    ("flash_attention_backward", SKIP, (f"{SKIP} -> pass",), SKIPPED),
    ("flash_attention_backward", "break", ("break -> pass",), SKIPPED),
    (
        "flash_attention_backward",
        "scale = 1 / math.sqrt(q.shape[-1])",
        ("q.shape -> k.shape",),
        SAME_D,
    ),
    (
        "flash_attention_backward",
        "rows = torch.arange(i, i + q_tile.shape[-2])",
        ("q_tile.shape -> g_tile.shape",),
        "grad_out's tile has q's rows by contract",
    ),
    (
        "flash_attention_backward",
        "cols = torch.arange(j, j + k_tile.shape[-2])",
        ("k_tile.shape -> v_tile.shape",),
        "v's tile has k's rows by contract",
    ),
]
"""Survivors a human judged equivalent: (exercise, statement, changes, why)."""
