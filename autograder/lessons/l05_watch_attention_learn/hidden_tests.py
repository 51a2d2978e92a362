"""Hidden tests for lesson 5, watching attention learn."""

from __future__ import annotations

import numpy as np
import pytest

from attnkit.compare import (
    CheckFailed,
    expect_array,
    expect_detached,
    expect_kind,
    expect_unchanged,
)
from attnkit.selfcheck.dropout import (
    expect_dropout_rate,
    expect_dropped_weights,
    readable_state,
    token_permutations,
    weights_in_output,
)
from attnkit_autograder.grading.harness import grade
from attnkit_autograder.grading.suite_support import (
    contract,
    input_seed,
    randn,
    rng,
    same_call,
    same_module,
)
from attnkit_autograder.lessons.l05_watch_attention_learn.checkpoint import load_patterns

T = {"kind": "tensor"}
MHA = "MultiHeadAttention"
MODEL = "TinyTransformer"
PATTERNS = load_patterns()
"""Attention weights [layers, heads, T, T] of the lesson's model, trained (see checkpoint.py
beside this file): real previous-token, first-token and induction heads."""


def causal_pattern(*shape: int, seed: int) -> np.ndarray:
    """Random attention weights [..., T, T]: causal rows that sum to 1."""
    logits = randn(*shape, seed=seed)
    logits = np.where(np.triu(np.ones(shape[-2:], dtype=bool), 1), -np.inf, logits)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)).astype(np.float32)


def same_weights(got: dict, want: dict, what: str = "self.last_weights") -> None:
    kept = got.get("kept", {}).get("last_weights")
    if kept is None or kept["kind"] == "none":
        raise CheckFailed(f"{what} is not set after a call", "Store the weights after softmax.")
    expect_array(kept, want["kept"]["last_weights"]["array"], what=what, **T)
    expect_detached(kept, what)


@grade("test_mha_keeps_weights")
@contract(
    "MultiHeadAttention",
    "a float32 tensor [batch, T, d_out]",
    "as lesson 4's layer",
    "scores scaled by sqrt(head_dim)",
    "heads merged in order, then out_proj",
    "with qkv_bias=True the projections add their biases",
    "self.last_weights holds the weights of the call, [batch, heads, T, T], detached, after "
    "softmax and before dropout",
    "(not modified)",
)
@pytest.mark.parametrize(("d", "heads", "tokens", "bias"), [(8, 2, 5, False), (12, 4, 7, True)])
def test_mha_matches_reference_and_keeps_its_weights(submission, reference, d, heads, tokens, bias):
    got, want = same_module(
        submission, reference, MHA, [d, d, 9, 0.0, heads], [randn(2, tokens, d, seed=d)],
        seed=heads, keep=["last_weights"], init_kwargs={"qkv_bias": bias},
        grad_output=np.ones((2, tokens, d), dtype=np.float32),  # on the graph: kept detached?
    )  # fmt: skip
    same_weights(got, want)


@grade("test_mha_keeps_weights")
@contract(
    "MultiHeadAttention",
    "dropout on the weights in training mode only",
    "after softmax and before dropout",
)
def test_mha_dropout_in_training_only(submission, reference) -> None:
    # Each head's weights are read from the output (one-hot tokens, values that copy them
    # twice, out_proj the identity): one draw for all heads or one per head both pass.
    p, tokens, heads = 0.3, 5, 2
    x = token_permutations(10, tokens, seed=input_seed(8))
    init = [tokens, heads * 2 * tokens, tokens, p, heads]
    base = reference.probe("MultiHeadAttention").module(init, [x], seed=9)
    state = readable_state(base["params"], heads=heads, tokens=tokens)
    want = reference.probe("MultiHeadAttention").module(
        init, [x], state=state, keep=["last_weights"]
    )
    got = submission.probe("MultiHeadAttention").module(init, [x], state=state)
    expect_array(got["out"], want["out"]["array"], what="the output in eval mode", **T)
    trained = submission.probe("MultiHeadAttention").module(
        init, [x], state=state, train=True, forward_seed=10, keep=["last_weights"]
    )
    expect_kind(trained["out"], "tensor", "the output in training mode")
    weights = weights_in_output(want["out"]["array"], x, heads=heads)
    shown = weights_in_output(trained["out"]["array"], x, heads=heads, what="the output")
    dropped, counted = expect_dropped_weights(shown, weights, p)
    expect_dropout_rate(dropped, counted, p)
    same_weights(trained, want, "self.last_weights in training mode")


@grade("test_mha_keeps_weights")
@contract(
    "MultiHeadAttention",
    "True where a key is blocked (on top of the causal mask)",
    "a query that may see no key gets all-zero weights",
)
def test_mha_padding_and_fully_blocked_rows(submission, reference) -> None:
    padding = np.zeros((3, 1, 6, 6), dtype=bool)
    padding[1, :, :, :2] = True  # two tokens of left padding: rows 0 and 1 fully blocked
    padding[2, :, :, 4] = True  # one key blocked for every query
    got, want = same_module(
        submission, reference, MHA, [6, 6, 8, 0.0, 2], [randn(3, 6, 6, seed=9), padding],
        seed=2, keep=["last_weights"],
    )  # fmt: skip
    same_weights(got, want)


MODEL_ARGS = [13, 8, 10, 2, 2]


@grade("test_tiny_model")
@contract(
    "TinyTransformer",
    "float32 logits [batch, T, vocab_size]",
    "token embedding plus the embedding of the position 0..T-1",
    "x = x + block(x, padding) for each block in order, then head",
    "gradients reach every parameter",
    "(not modified)",
)
@pytest.mark.parametrize(("batch", "tokens"), [(2, 6), (1, 10)])
def test_model_matches_reference(submission, reference, batch, tokens) -> None:
    ids = rng(tokens).integers(0, 13, size=(batch, tokens)).astype(np.int64)
    same_module(
        submission, reference, MODEL, MODEL_ARGS, [ids], seed=5,
        grad_output=randn(batch, tokens, 13, seed=tokens),
    )  # fmt: skip


@grade("test_tiny_model")
@contract("TinyTransformer", "a bool mask passed to every block")
def test_model_passes_the_padding_mask_to_every_block(submission, reference) -> None:
    ids = np.array([[3, 1, 4, 1, 5, 9], [0, 0, 2, 7, 1, 8]], dtype=np.int64)
    padding = np.zeros((2, 1, 6, 6), dtype=bool)
    padding[1, :, :, :2] = True
    got, want = same_module(
        submission, reference, MODEL, MODEL_ARGS, [ids, padding], seed=6,
        keep=["blocks.last_weights"],
    )  # fmt: skip
    for index, (mine, theirs) in enumerate(
        zip(got["kept"]["blocks.last_weights"]["items"],
            want["kept"]["blocks.last_weights"]["items"], strict=True)
    ):  # fmt: skip
        expect_array(mine, theirs["array"], what=f"block {index}'s weights", **T)


def same_steps(submission, reference, steps: int, seed: int) -> None:
    generator = rng(seed)
    inputs = generator.integers(0, 9, size=(4, 5)).astype(np.int64)
    targets = generator.integers(0, 9, size=(4, 5)).astype(np.int64)
    kwargs = {"learning_rate": 0.3, "seed": seed, "steps": steps}
    got = submission.probe("train_step").train_step(9, 6, inputs, targets, **kwargs)
    want = reference.probe("train_step").train_step(9, 6, inputs, targets, **kwargs)
    after = got["inputs_after"] + [None] * (2 - len(got["inputs_after"]))
    for name, before, now in zip(("inputs", "targets"), (inputs, targets), after[:2], strict=True):
        expect_unchanged(before, now, name)
    expect_kind(got["out"], "number", "what train_step returns")
    expect_array(got["out"], want["out"]["array"], what="the loss returned")
    for name, expected in want["params"].items():
        actual = got["params"].get(name)
        if actual is None:
            raise CheckFailed(f"the model lost its parameter {name}")
        expect_array({**T, "array": actual}, expected, what=f"{name} after {steps} step(s)")


@grade("test_train_step")
@contract(
    "train_step",
    "the loss as a Python float",
    "the cross-entropy of model(inputs) against targets, averaged over every position",
    "applied with one optimizer.step()",
    "(not modified)",
)
def test_one_step_matches_reference(submission, reference) -> None:
    same_steps(submission, reference, steps=1, seed=1)


@grade("test_train_step")
@contract("train_step", "the gradients are cleared, computed and applied")
def test_three_steps_match_reference(submission, reference) -> None:
    same_steps(submission, reference, steps=3, seed=2)


@grade("test_diagonal_score")
@contract(
    "diagonal_score",
    "a tensor of the leading shape [...] and the dtype of weights",
    "the mean of weights[..., i, i - offset] over the queries i >= offset",
    "(not modified)",
)
@pytest.mark.parametrize(("offset", "shape"), [(0, (2, 3, 6, 6)), (1, (4, 6, 6)), (3, (6, 6))])
def test_diagonal_score_matches_reference(submission, reference, offset, shape) -> None:
    same_call(submission, reference, "diagonal_score", causal_pattern(*shape, seed=offset),
              offset, **T)  # fmt: skip


@grade("test_diagonal_score")
@contract("diagonal_score", "the mean of weights[..., i, i - offset] over the queries i >= offset")
@pytest.mark.parametrize("sample", sorted(PATTERNS))
def test_diagonal_score_on_a_trained_model(submission, reference, sample) -> None:
    for offset in (0, 1):
        same_call(submission, reference, "diagonal_score", PATTERNS[sample], offset, **T)


@grade("test_first_token_score")
@contract(
    "first_token_score",
    "a tensor of the leading shape [...] and the dtype of weights",
    "the mean of weights[..., i, 0] over the queries i >= 1",
    "(not modified)",
)
def test_first_token_score_matches_reference(submission, reference) -> None:
    same_call(submission, reference, "first_token_score", causal_pattern(3, 5, 5, seed=4), **T)
    for sample in sorted(PATTERNS):
        same_call(submission, reference, "first_token_score", PATTERNS[sample], **T)


@grade("test_induction_score")
@contract(
    "induction_score",
    "a tensor of the leading shape [...] and the dtype of weights",
    "the mean of weights[..., i, i - period + 1] over the queries i >= period",
    "(not modified)",
)
@pytest.mark.parametrize("period", [1, 2, 5])
def test_induction_score_matches_reference(submission, reference, period) -> None:
    same_call(submission, reference, "induction_score", causal_pattern(2, 7, 7, seed=period),
              period, **T)  # fmt: skip


@grade("test_induction_score")
@contract(
    "induction_score", "the mean of weights[..., i, i - period + 1] over the queries i >= period"
)
@pytest.mark.parametrize("sample", sorted(PATTERNS))
def test_induction_score_on_a_trained_model(submission, reference, sample) -> None:
    period = int(sample.split("_")[1])
    same_call(submission, reference, "induction_score", PATTERNS[sample], period, **T)


@grade("test_padding_causal_mask")
@contract(
    "padding_causal_mask",
    "a bool tensor [batch, 1, num_tokens, num_tokens]",
    "True where key j > query i or j < num_tokens - lengths[b]",
    "(not modified)",
)
@pytest.mark.parametrize(("lengths", "tokens"), [([5, 2, 1], 5), ([1], 1), ([4, 7], 7)])
def test_padding_causal_mask_matches_reference(submission, reference, lengths, tokens) -> None:
    same_call(submission, reference, "padding_causal_mask", np.array(lengths, dtype=np.int64),
              tokens, **T)  # fmt: skip


@grade("test_softmax_jacobian_norm")
@contract(
    "softmax_jacobian_norm",
    "a tensor of the leading shape [...] and the dtype of scores",
    "the norm of diag(s) - s s^T for s = softmax(scores) along the last axis",
    "(not modified)",
)
# Scores 30 apart saturate the softmax: in float32 a formula that subtracts nearly equal
# sums (the expanded square) cancels to a small negative number, and its square root to NaN.
@pytest.mark.parametrize(("shape", "scale", "dtype"), [
    ((4, 3), 1.0, np.float32), ((2, 3, 6), 8.0, np.float32), ((5,), 30.0, np.float64),
    ((16, 8), 30.0, np.float32),
])  # fmt: skip
def test_softmax_jacobian_norm_matches_reference(submission, reference, shape, scale, dtype):
    scores = randn(*shape, seed=len(shape), dtype=dtype, scale=scale)
    same_call(submission, reference, "softmax_jacobian_norm", scores, **T)


@grade("test_permutation_gap")
@contract(
    "permutation_gap",
    "a Python float, the largest absolute difference between layer(x[:, perm]) and "
    "layer(x)[:, perm]",
    "(not modified)",
)
@pytest.mark.parametrize("layer", ["attention", "attention_after_positions"])
def test_permutation_gap_matches_reference(submission, reference, layer) -> None:
    x = randn(2, 6, 5, seed=8)
    perm = np.array([5, 2, 0, 1, 4, 3], dtype=np.int64)
    got = submission.probe("permutation_gap").with_layer(layer, x, perm, seed=3)
    want = reference.probe("permutation_gap").with_layer(layer, x, perm, seed=3)
    expect_kind(got["out"], "number", "what permutation_gap returns")
    expect_array(got["out"], want["out"]["array"], what="the gap", atol=1e-5, rtol=1e-3)
    for name, before, after in zip(("x", "perm"), (x, perm), got["inputs_after"], strict=False):
        expect_unchanged(before, after, name)
