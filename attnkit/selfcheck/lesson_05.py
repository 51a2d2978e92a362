"""Visible checks for lesson 5, watching attention learn.

The detectors and the mask are checked on patterns whose answers follow from their
definition by hand (a perfect previous-token head scores 1); the model's checks are
properties (causal, position-aware, every parameter trained) rather than its numbers.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from ..adapters import kit_layer
from ..compare import CheckFailed, expect_array, expect_detached, expect_kind, expect_shape
from ..probe import Probe
from .dropout import expect_weights_dropout
from .dtypes import expect_dtype
from .registry import visible

SLUG = "05_watch_attention_learn"
MHA = [8, 8, 6, 0.0, 2]
"""MultiHeadAttention(d_in=8, d_out=8, context_length=6, dropout=0.0, num_heads=2)."""
MODEL = [11, 8, 6, 2, 2]
"""TinyTransformer(vocab_size=11, d_model=8, context_length=6, num_heads=2, num_layers=2)."""


def expected_attention(
    params: dict[str, np.ndarray], x: np.ndarray, heads: int, blocked: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(output, weights) of causal multi-head attention with these parameters."""
    p = {n: torch.from_numpy(a) for n, a in params.items()}
    if not {"W_query.weight", "W_key.weight", "W_value.weight", "out_proj.weight"} <= set(p):
        raise CheckFailed("MultiHeadAttention lacks lesson 4's parameters (W_query ... out_proj)")
    tx = torch.from_numpy(x)
    batch, tokens, _ = x.shape

    def split(name: str) -> torch.Tensor:
        projected = F.linear(tx, p[f"{name}.weight"], p.get(f"{name}.bias"))
        return projected.view(batch, tokens, heads, -1).transpose(1, 2)

    q, k, v = split("W_query"), split("W_key"), split("W_value")
    # PyTorch's own attention, whose bool mask means "may attend": the opposite polarity.
    visible_keys = ~torch.from_numpy(blocked)
    attended = F.scaled_dot_product_attention(q, k, v, attn_mask=visible_keys)
    merged = torch.where(attended.isnan(), 0.0, attended).transpose(1, 2).reshape(batch, tokens, -1)
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
    weights = F.softmax(scores + torch.where(visible_keys, 0.0, -math.inf), dim=-1)
    weights = torch.where(weights.isnan(), 0.0, weights)
    out = F.linear(merged, p["out_proj.weight"], p.get("out_proj.bias"))
    return out.numpy(), weights.numpy()


def f32(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def causal(tokens: int) -> np.ndarray:
    return np.triu(np.ones((tokens, tokens), dtype=bool), 1)


@visible(
    SLUG,
    "MultiHeadAttention",
    "computes lesson 4's attention and keeps its weights, detached",
    contract=("a float32 tensor [batch, T, d_out]",),
)
def mha_keeps_weights(probe: Probe) -> None:
    x = np.random.default_rng(5501).normal(size=(2, 5, 8)).astype(np.float32)
    grad = np.ones((2, 5, 8), dtype=np.float32)  # run with autograd on: is what it keeps detached?
    result = probe.module(MHA, [x], seed=3, keep=["last_weights"], grad_output=grad)
    out, weights = expected_attention(result["params"], x, 2, causal(5))
    expect_dtype(result["out"], np.float32, kind="tensor")
    expect_array(result["out"], out, kind="tensor")
    expect_array(result["kept"]["last_weights"], weights, kind="tensor", what="self.last_weights")
    expect_detached(result["kept"]["last_weights"], "self.last_weights")


@visible(SLUG, "MultiHeadAttention", "with 4 heads and qkv_bias=True too")
def mha_any_heads_and_biases(probe: Probe) -> None:
    x = np.random.default_rng(5503).normal(size=(2, 5, 8)).astype(np.float32)
    four = [*MHA[:4], 4]
    result = probe.module(four, [x], seed=5, init_kwargs={"qkv_bias": True})
    out, _ = expected_attention(result["params"], x, 4, causal(5))
    expect_array(result["out"], out, kind="tensor", what="the output with 4 heads and biases")


@visible(
    SLUG, "MultiHeadAttention", "dropout in training mode drops attention weights, nothing else"
)
def mha_dropout(probe: Probe) -> None:
    expect_weights_dropout(probe, heads=2, p=0.3, seed=5504)


@visible(SLUG, "MultiHeadAttention", "a padding mask blocks keys; a fully blocked row is all zeros")
def mha_padding(probe: Probe) -> None:
    x = np.random.default_rng(5502).normal(size=(2, 4, 8)).astype(np.float32)
    padding = np.zeros((2, 1, 4, 4), dtype=bool)
    padding[1, :, :, :2] = True  # sequence 1: the first two positions are padding
    result = probe.module(MHA, [x, padding], seed=4, keep=["last_weights"])
    out, weights = expected_attention(result["params"], x, 2, causal(4) | padding)
    expect_array(result["kept"]["last_weights"], weights, kind="tensor", what="self.last_weights")
    expect_array(result["out"], out, kind="tensor", what="the output with a padding mask")


def model_run(probe: Probe, ids: np.ndarray, **kwargs: object) -> dict:
    return probe.module(MODEL, [ids], seed=7, **kwargs)


@visible(
    SLUG,
    "TinyTransformer",
    "logits [batch, T, vocab_size], float32, and no token sees the future",
    contract=("float32 logits [batch, T, vocab_size]",),
)
def model_is_causal(probe: Probe) -> None:
    ids = np.array([[1, 4, 2, 9, 3], [0, 0, 7, 7, 10]], dtype=np.int64)
    out = model_run(probe, ids)["out"]
    expect_dtype(out, np.float32, kind="tensor", what="the logits")
    expect_shape(out, (2, 5, 11), kind="tensor", what="the logits")
    changed = ids.copy()
    changed[:, 3:] = 5  # a different future
    later = model_run(probe, changed)["out"]
    expect_array(
        {**later, "array": later["array"][:, :3]},
        out["array"][:, :3],
        kind="tensor",
        what="the logits of tokens 0..2 when tokens 3.. change",
    )


@visible(SLUG, "TinyTransformer", "positions matter, and gradients reach every parameter")
def model_uses_everything(probe: Probe) -> None:
    ids = np.array([[3, 3, 3, 3]], dtype=np.int64)  # one token, repeated: only positions differ
    grad = np.ones((1, 4, 11), dtype=np.float32)
    result = model_run(probe, ids, grad_output=grad)
    logits = result["out"]
    expect_kind(logits, "tensor", "the logits")
    if np.allclose(logits["array"][0, 0], logits["array"][0, 3], atol=1e-6):
        raise CheckFailed(
            "the same token at positions 0 and 3 gets the same logits: the position embedding "
            "is not added",
            "Add position_embedding(torch.arange(T)) to the token embeddings.",
        )
    missing = [n for n, g in result["grads"].items() if g is None or not np.any(g)]
    if missing:
        raise CheckFailed(
            f"no gradient reaches {', '.join(sorted(missing)[:4])}",
            "Every block and the head must be used, in forward's result.",
        )


def stepped(inputs: np.ndarray, targets: np.ndarray, seed: int, steps: int) -> tuple[float, dict]:
    """The first loss, and the parameters after ``steps`` steps, of the model the kit's
    ``train_step`` call builds (adapters.train_step), trained here with PyTorch."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Embedding(7, 5), torch.nn.Linear(5, 7))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        logits = model(torch.from_numpy(inputs))
        loss = F.cross_entropy(logits.flatten(0, 1), torch.from_numpy(targets).flatten())
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses[0], {n: p.detach().numpy() for n, p in model.named_parameters()}


def expect_stepped(probe: Probe, seed: int, steps: int) -> dict:
    rng = np.random.default_rng(5500 + seed)
    inputs, targets = (rng.integers(0, 7, size=(3, 4)).astype(np.int64) for _ in range(2))
    result = probe.train_step(7, 5, inputs, targets, learning_rate=0.5, seed=seed, steps=steps)
    loss, params = stepped(inputs, targets, seed, steps)
    for name, expected in params.items():
        got = result["params"].get(name)
        if got is None:
            raise CheckFailed(f"the model lost its parameter {name}")
        described = {"kind": "ndarray", "dtype": str(got.dtype), "array": got}
        expect_array(described, expected, kind="ndarray", what=f"{name} after {steps} step(s)")
    expect_kind(result["out"], "number", "what train_step returns")
    expect_array(result["out"], np.array(loss), kind="number", what="the loss returned")
    return result


@visible(SLUG, "train_step", "returns the cross-entropy before the step, and takes one step")
def train_step_one(probe: Probe) -> None:
    expect_stepped(probe, seed=11, steps=1)


@visible(SLUG, "train_step", "a second step starts from fresh gradients")
def train_step_twice(probe: Probe) -> None:
    expect_stepped(probe, seed=12, steps=2)


def uniform_causal(tokens: int) -> np.ndarray:
    """Every query spreads its attention evenly over itself and the past."""
    spread = np.tril(np.ones((tokens, tokens))) / np.arange(1, tokens + 1)[:, None]
    return spread.astype(np.float32)


def shifted(tokens: int, back: int) -> np.ndarray:
    """Each query i >= back attends only to i - back; the others only to token 0."""
    pattern = np.zeros((tokens, tokens), dtype=np.float32)
    for i in range(tokens):
        pattern[i, i - back if i >= back else 0] = 1.0
    return pattern


@visible(
    SLUG,
    "diagonal_score",
    "a perfect previous-token head scores 1; an even spread scores the mean of 1/(i+1)",
    contract=("a tensor of the leading shape [...] and the dtype of weights",),
)
def diagonal_scores(probe: Probe) -> None:
    heads = np.stack([shifted(5, 1), uniform_causal(5)])  # [heads=2, 5, 5]
    previous = probe.call(heads, 1)["out"]
    expect_dtype(previous, np.float32, kind="tensor", what="diagonal_score(weights, 1)")
    # uniform: queries 1..4 pay 1/(i+1) to i-1: (1/2 + 1/3 + 1/4 + 1/5) / 4
    expect_array(
        previous,
        f32(1.0, (1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 4),
        kind="tensor",
        what="diagonal_score(weights, 1)",
    )
    current = probe.call(heads, 0)["out"]
    expect_array(
        current,
        f32(0.2, (1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 5),
        kind="tensor",
        what="diagonal_score(weights, 0)",
    )


@visible(
    SLUG,
    "first_token_score",
    "a head resting on token 0 scores 1; queries from 1 on count",
    contract=("a tensor of the leading shape [...] and the dtype of weights",),
)
def first_token_scores(probe: Probe) -> None:
    heads = np.stack([shifted(4, 10), uniform_causal(4)])  # shifted by 10: all on token 0
    got = probe.call(heads)["out"]
    expect_dtype(got, np.float32, kind="tensor", what="first_token_score(weights)")
    expect_array(got, f32(1.0, (1 / 2 + 1 / 3 + 1 / 4) / 3), kind="tensor")


@visible(
    SLUG,
    "induction_score",
    "a perfect induction head on period 3 scores 1; queries from `period` on count",
    contract=("a tensor of the leading shape [...] and the dtype of weights",),
)
def induction_scores(probe: Probe) -> None:
    induction = shifted(7, 2)  # period 3: key i - 3 + 1 = i - 2
    got = probe.call(np.stack([induction, uniform_causal(7)]), 3)["out"]
    expect_dtype(got, np.float32, kind="tensor", what="induction_score(weights, 3)")
    expected = np.mean([1 / (i + 1) for i in range(3, 7)])  # queries 3..6 pay 1/(i+1)
    expect_array(got, f32(1.0, expected), kind="tensor")


@visible(
    SLUG,
    "padding_causal_mask",
    "blocks the future and the left padding",
    contract=("a bool tensor [batch, 1, num_tokens, num_tokens]",),
)
def padding_mask(probe: Probe) -> None:
    got = probe.call(np.array([3, 1], dtype=np.int64), 3)["out"]
    expect_dtype(got, np.bool_, kind="tensor", what="the mask")
    future = [[False, True, True], [False, False, True], [False, False, False]]
    padded = [[True, True, True], [True, True, True], [True, True, False]]  # only key 2 is real
    expect_array(got, np.array([[future], [padded]]), kind="tensor", what="the mask")


@visible(
    SLUG,
    "softmax_jacobian_norm",
    "0.5 for two equal scores, about 0 for a saturated softmax",
    contract=("a tensor of the leading shape [...] and the dtype of scores",),
)
def jacobian_norms(probe: Probe) -> None:
    scores = np.array([[0.0, 0.0], [100.0, 0.0], [3.0, 3.0]], dtype=np.float32)
    got = probe.call(scores)["out"]
    expect_dtype(got, np.float32, kind="tensor", what="softmax_jacobian_norm(scores)")
    # s = (1/2, 1/2): J = [[1/4, -1/4], [-1/4, 1/4]], norm sqrt(4/16) = 1/2.
    expect_array(got, f32(0.5, 0.0, 0.5), kind="tensor")


@visible(SLUG, "softmax_jacobian_norm", "stays finite and right for nearly saturated float32 rows")
def jacobian_saturated(probe: Probe) -> None:
    scores = np.random.default_rng(5506).normal(size=(6, 5)).astype(np.float32) * 30
    got = probe.call(scores)["out"]
    # PyTorch's own Jacobian of softmax, row by row, as the oracle.
    rows = [
        torch.autograd.functional.jacobian(lambda r: torch.softmax(r, dim=-1), row).norm()
        for row in torch.from_numpy(scores)
    ]
    expect_array(got, torch.stack(rows).numpy(), kind="tensor", atol=1e-6)


@visible(SLUG, "permutation_gap", "0 for attention alone; the largest difference after positions")
def permutation_gaps(probe: Probe) -> None:
    x = np.random.default_rng(5504).normal(size=(1, 5, 4)).astype(np.float32)
    perm = np.array([3, 0, 4, 1, 2], dtype=np.int64)
    plain = probe.with_layer("attention", x, perm)["out"]
    expect_kind(plain, "number", "what permutation_gap returns")
    if not float(plain["array"]) < 1e-4:
        raise CheckFailed(
            f"permutation_gap is {float(plain['array']):.4g} for attention without positions, "
            "which cannot tell the order of its tokens: compare layer(x[:, perm]) with "
            "layer(x)[:, perm]"
        )
    ordered = probe.with_layer("attention_after_positions", x, perm, seed=2)["out"]
    layer, tx, tp = (
        kit_layer("attention_after_positions", seed=2),
        torch.from_numpy(x),
        torch.from_numpy(perm),
    )
    differences = (layer(tx[:, tp]) - layer(tx)[:, tp]).abs()
    expect_array(
        ordered,
        np.array(differences.max().item()),
        kind="number",
        what="permutation_gap after positions",
    )
