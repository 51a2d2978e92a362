"""Visible checks for lesson 3, causal attention."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..book import BOOK_INPUTS
from ..compare import expect_array, expect_kind, expect_shape, expect_unchanged, pair, part
from ..probe import Probe
from .dropout import expect_dropout_rate, expect_dropped_weights
from .dtypes import expect_dtype
from .lesson_02 import BOOK
from .registry import visible

SLUG = "03_causal_attention"
BOOK_BATCH = np.stack([BOOK_INPUTS, BOOK_INPUTS])


def upper(num_tokens: int) -> np.ndarray:
    return np.array([[j > i for j in range(num_tokens)] for i in range(num_tokens)])


@visible(
    SLUG,
    "causal_mask",
    "bool tensor [T, T]: True above the diagonal (blocked)",
    contract=("a torch.bool tensor [num_tokens, num_tokens]",),
)
def mask_pattern(probe: Probe) -> None:
    expect_array(probe.call(5)["out"], upper(5), kind="tensor", what="causal_mask(5)")


@visible(
    SLUG,
    "apply_causal_mask",
    "future scores become -inf, the rest stay, input untouched",
    contract=("a new tensor of the same shape and dtype",),
)
def apply_mask(probe: Probe) -> None:
    RNG = np.random.default_rng(5499)  # fixed inputs: fingerprints depend on them
    scores = RNG.normal(size=(2, 4, 4)).astype(np.float32)
    result = probe.call(scores)
    expected = np.where(upper(4), -np.inf, scores).astype(np.float32)
    expect_array(result["out"], expected, kind="tensor")
    expect_unchanged(scores, result["inputs_after"][0], "the scores")


@visible(
    SLUG,
    "ScaledDotProductAttention",
    "matches F.scaled_dot_product_attention (mask inverted)",
    contract=("(output [..., T_q, d_v], weights [..., T_q, T_k]), tensors of the dtype of q",),
)
def sdpa_matches_torch(probe: Probe) -> None:
    RNG = np.random.default_rng(1613)  # fixed inputs: fingerprints depend on them
    q = RNG.normal(size=(2, 3, 4, 8)).astype(np.float32)
    k = RNG.normal(size=(2, 3, 6, 8)).astype(np.float32)
    v = RNG.normal(size=(2, 3, 6, 5)).astype(np.float32)
    blocked = RNG.random((4, 6)) > 0.6
    blocked[:, 0] = False
    output, weights = pair(probe.module([], [q, k, v, blocked])["out"], "ScaledDotProductAttention")
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    allowed = torch.from_numpy(~blocked)
    expected = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=allowed).numpy()
    expect_array(output, expected, kind="tensor", what="the output")
    expected_weights = torch.softmax(
        (tq @ tk.transpose(-2, -1) / 8**0.5).masked_fill(torch.from_numpy(blocked), -torch.inf), -1
    )
    expect_array(weights, expected_weights.numpy(), kind="tensor", what="the weights")


@visible(SLUG, "CausalAttention", "torch.manual_seed(123) reproduces the book's numbers")
def causal_book(probe: Probe) -> None:
    out = probe.module([3, 2, 6, 0.0], [BOOK_BATCH], seed=123)["out"]
    expect_shape(out, (2, 6, 2), kind="tensor")
    expected = np.array([[-0.4519, 0.2216], [-0.5874, 0.0058]])
    expect_array(
        part(out, (0, slice(0, 2))), expected, what="the first two context vectors", **BOOK
    )


@visible(SLUG, "CausalAttention", "earlier outputs ignore later tokens; T < context_length works")
def causal_no_leak(probe: Probe) -> None:
    RNG = np.random.default_rng(710)  # fixed inputs: fingerprints depend on them
    x = RNG.normal(size=(2, 5, 3)).astype(np.float32)  # 5 tokens, context_length 8
    changed = x.copy()
    changed[:, 3:] += 5.0
    base = probe.module([3, 4, 8, 0.0], [x], seed=1)["out"]
    expect_shape(base, (2, 5, 4), kind="tensor")
    moved = probe.module([3, 4, 8, 0.0], [changed], seed=1)["out"]
    expect_array(
        part(moved, (slice(None), slice(0, 3))),
        base["array"][:, :3],
        what="outputs of tokens 0-2 after changing tokens 3-4",
    )


@visible(SLUG, "ScaledDotProductAttention", "a fully masked query gets zero weights and output")
def sdpa_fully_masked(probe: Probe) -> None:
    RNG = np.random.default_rng(4420)  # fixed inputs: fingerprints depend on them
    q = RNG.normal(size=(1, 2, 3, 4)).astype(np.float32)
    k = RNG.normal(size=(1, 2, 4, 4)).astype(np.float32)
    v = RNG.normal(size=(1, 2, 4, 6)).astype(np.float32)
    blocked = np.zeros((3, 4), dtype=bool)
    blocked[1] = True  # query 1 may see no key
    blocked[2, 3] = True
    output, weights = pair(probe.module([], [q, k, v, blocked])["out"], "ScaledDotProductAttention")
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    scores = (tq @ tk.transpose(-2, -1) / 2.0).masked_fill(torch.from_numpy(blocked), -torch.inf)
    expected = torch.nan_to_num(torch.softmax(scores, -1), nan=0.0)  # the kit's policy: zeros
    expect_array(weights, expected.numpy(), kind="tensor", what="the weights")
    expect_array(output, (expected @ tv).numpy(), kind="tensor", what="the output")


@visible(
    SLUG,
    "ScaledDotProductAttention",
    "dropout acts on the weights in training (rows no longer sum to 1), not in eval",
)
def sdpa_dropout(probe: Probe) -> None:
    # Any honest dropout passes, whatever order it draws its random numbers in: each
    # weight is 0 or w / (1 - p), about p of them are dropped, and eval mode is exact.
    RNG = np.random.default_rng(5127)  # fixed inputs: fingerprints depend on them
    q, k = (RNG.normal(size=(2, 3, 6, 4)).astype(np.float32) for _ in range(2))
    v = RNG.normal(size=(2, 3, 6, 3)).astype(np.float32)
    tq, tk = torch.from_numpy(q), torch.from_numpy(k)
    weights = torch.softmax(tq @ tk.transpose(-2, -1) / 2.0, -1).numpy()
    _, evaluated = pair(probe.module([0.3], [q, k, v], train=False)["out"], "eval mode")
    expect_array(evaluated, weights, kind="tensor", what="the weights in eval mode")
    trained = probe.module([0.3], [q, k, v], train=True, forward_seed=11)["out"]
    output, weights_out = pair(trained, "training mode")
    expect_kind(weights_out, "tensor", "the weights in training mode")
    dropped, counted = expect_dropped_weights(weights_out["array"], weights, 0.3)
    expect_dropout_rate(dropped, counted, 0.3)
    expect_array(
        output,
        weights_out["array"] @ v,
        kind="tensor",
        what="the output in training mode (the returned weights times v)",
    )


@visible(
    SLUG,
    "CausalAttention",
    "returns a float32 tensor",
    contract=("context vectors [batch, T, d_out], a float32 tensor",),
)
def causal_float32(probe: Probe) -> None:
    out = probe.module([3, 2, 6, 0.0], [BOOK_BATCH], seed=123)["out"]
    expect_dtype(out, np.float32, kind="tensor")
