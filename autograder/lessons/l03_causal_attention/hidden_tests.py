"""Hidden tests for lesson 3, causal attention."""

from __future__ import annotations

import numpy as np
import pytest

from attnkit.compare import expect_array, expect_kind, pair
from attnkit.selfcheck.dropout import (
    expect_dropout_rate,
    expect_dropped_weights,
    readable_state,
    token_permutations,
    weights_in_output,
)
from attnkit_autograder.grading.harness import grade
from attnkit_autograder.grading.suite_support import (
    compare_outputs,
    contract,
    expect_causal,
    input_seed,
    randn,
    rng,
    same_call,
    same_module,
    verdict_embeddings,
)

T = {"kind": "tensor"}


@grade("test_causal_mask")
@contract(
    "causal_mask",
    "a torch.bool tensor [num_tokens, num_tokens]",
    "True strictly above the diagonal",
)
@pytest.mark.parametrize("num_tokens", [1, 3, 7])
def test_causal_mask_matches_reference(submission, reference, num_tokens) -> None:
    same_call(submission, reference, "causal_mask", num_tokens, **T)


@grade("test_apply_causal_mask")
@contract(
    "apply_causal_mask",
    "a new tensor of the same shape and dtype",
    "-inf where key j > query i",
    "scores: [..., T, T] (not modified)",
)
@pytest.mark.parametrize(("shape", "dtype"), [((4, 4), np.float32), ((2, 3, 5, 5), np.float64)])
def test_apply_causal_mask_matches_reference(submission, reference, shape, dtype) -> None:
    same_call(submission, reference, "apply_causal_mask", randn(*shape, seed=1, dtype=dtype), **T)


def qkv(batch: int, heads: int, t_q: int, t_k: int, d_k: int, d_v: int, seed: int):
    return (
        randn(batch, heads, t_q, d_k, seed=seed),
        randn(batch, heads, t_k, d_k, seed=seed + 1),
        randn(batch, heads, t_k, d_v, seed=seed + 2),
    )


@grade("test_sdpa_values")
@contract(
    "ScaledDotProductAttention",
    "(output [..., T_q, d_v], weights [..., T_q, T_k]), tensors of the dtype of q",
    "scores scaled by sqrt(d_k)",
    "(not modified)",
)
def test_sdpa_without_mask(submission, reference) -> None:
    # batch 2, heads 3, T_q 4, T_k 6, d_k 8, d_v 5: all different.
    same_module(
        submission,
        reference,
        "ScaledDotProductAttention",
        [],
        list(qkv(2, 3, 4, 6, 8, 5, 2)),
        outputs=2,
    )


@grade("test_sdpa_values")
@contract(
    "ScaledDotProductAttention",
    "True where blocked",
    "each row of weights that sees a key sums to 1",
)
def test_sdpa_with_mask_and_rows_sum_to_one(submission, reference) -> None:
    q, k, v = qkv(2, 3, 4, 6, 8, 5, seed=5)
    blocked = rng(6).random((4, 6)) > 0.5
    blocked[:, 2] = False
    got, _ = same_module(
        submission, reference, "ScaledDotProductAttention", [], [q, k, v, blocked], outputs=2
    )
    _, weights = pair(got["out"], "ScaledDotProductAttention")
    expect_array(
        {"kind": "tensor", "array": weights["array"].sum(-1)},
        np.ones((2, 3, 4)),
        what="the weight row sums",
        check_dtype=False,
    )


@grade("test_sdpa_values")
@contract("ScaledDotProductAttention", "Gradients flow through both results")
def test_sdpa_gradients(submission, reference) -> None:
    # No parameters here: this checks the forward pass stays differentiable end to end.
    q, k, v = qkv(1, 2, 3, 3, 4, 4, seed=7)
    same_module(submission, reference, "ScaledDotProductAttention", [], [q, k, v], outputs=2)


@grade("test_sdpa_masking")
@contract(
    "ScaledDotProductAttention", "Rows whose keys are all blocked get zero weights and zero output"
)
def test_sdpa_causal_and_fully_masked_rows(submission, reference) -> None:
    q, k, v = qkv(2, 1, 5, 5, 4, 3, seed=8)
    causal = np.triu(np.ones((5, 5), dtype=bool), k=1)
    same_module(
        submission, reference, "ScaledDotProductAttention", [], [q, k, v, causal], outputs=2
    )
    blocked = causal.copy()
    blocked[2] = True  # query 2 may see nothing: zero weights, zero output
    same_module(
        submission, reference, "ScaledDotProductAttention", [], [q, k, v, blocked], outputs=2
    )


@grade("test_sdpa_values")
@contract(
    "ScaledDotProductAttention",
    "q: [..., T_q, d_k], k: [..., T_k, d_k], v: [..., T_k, d_v]",
    "(output [..., T_q, d_v], weights [..., T_q, T_k]), tensors of the dtype of q",
)
def test_sdpa_on_three_axes(submission, reference) -> None:
    # [batch, T, d] without a heads axis (as CausalAttention calls it): only the last two
    # axes of k swap; a fixed axis (2, or 1) is right on 4-d inputs alone.
    q, k, v = randn(2, 4, 8, seed=18), randn(2, 6, 8, seed=19), randn(2, 6, 5, seed=20)
    same_module(submission, reference, "ScaledDotProductAttention", [], [q, k, v], outputs=2)


@grade("test_sdpa_masking")
@contract(
    "ScaledDotProductAttention",
    "bool broadcastable to [..., T_q, T_k]",
    "Rows whose keys are all blocked get zero weights and zero output",
)
def test_sdpa_per_head_mask_with_fully_masked_rows(submission, reference) -> None:
    # One [T_q, T_k] mask per head, broadcast over the batch; query 1 of head 2 and query 3
    # of head 0 see nothing. A fully blocked row is one whose *last* axis is all True.
    q, k, v = qkv(2, 3, 4, 6, 8, 5, seed=21)
    blocked = rng(22).random((3, 4, 6)) > 0.6
    blocked[2, 1] = True
    blocked[0, 3] = True
    same_module(
        submission, reference, "ScaledDotProductAttention", [], [q, k, v, blocked], outputs=2
    )


@grade("test_sdpa_masking")
@contract("ScaledDotProductAttention", "after dropout in training mode; no dropout in eval mode")
def test_sdpa_dropout_acts_on_weights_in_training_only(submission, reference) -> None:
    # Judged by the contract, not by one generator's pattern: in eval mode the result is
    # exact; in training mode each weight is 0 or w / (1 - p), the output is those weights
    # times v, and about p of them are dropped (see attnkit.selfcheck.dropout).
    p = 0.3
    q, k, v = qkv(4, 3, 5, 6, 4, 3, seed=9)
    _, want = same_module(
        submission, reference, "ScaledDotProductAttention", [p], [q, k, v], outputs=2
    )
    _, weights = pair(want["out"], "ScaledDotProductAttention")
    got = submission.probe("ScaledDotProductAttention").module(
        [p], [q, k, v], train=True, forward_seed=11
    )
    output, trained = pair(got["out"], "ScaledDotProductAttention in training mode")
    expect_kind(trained, "tensor", "the weights in training mode")
    dropped, counted = expect_dropped_weights(trained["array"], weights["array"], p)
    expect_dropout_rate(dropped, counted, p)
    expect_array(
        output,
        trained["array"] @ v,
        kind="tensor",
        what="the output in training mode (the returned weights times v)",
    )


@grade("test_causal_attention")
@contract(
    "CausalAttention",
    "context vectors [batch, T, d_out], a float32 tensor",
    "gradients reach every parameter",
    "T <= context_length",
    "(or [T, d_in])",
)
@pytest.mark.parametrize(("shape", "context_length"), [((2, 6, 3), 6), ((3, 4, 5), 9), ((5, 3), 7)])
def test_causal_attention_matches_reference(submission, reference, shape, context_length) -> None:
    # The last case is one sequence without a batch axis ([T, d_in]), which the contract allows.
    x = randn(*shape, seed=12)
    same_module(
        submission,
        reference,
        "CausalAttention",
        [shape[-1], 4, context_length, 0.0],
        [x],
        seed=4,
        grad_output=randn(*shape[:-1], 4, seed=13),
    )


@grade("test_causal_attention")
@contract(
    "CausalAttention",
    "Parameters are created in the order W_query, W_key, W_value",
    "(not modified)",
)
def test_causal_attention_on_verdict_and_book_seed(submission, reference) -> None:
    same_module(submission, reference, "CausalAttention", [16, 8, 6, 0.0], [verdict_embeddings()])
    # A book-seed test: its input is the same for every student (see suite_support).
    book = randn(2, 6, 3, seed=14, per_student=False)
    same_module(
        submission,
        reference,
        "CausalAttention",
        [3, 2, 6, 0.0],
        [book],
        seed=123,
        shared_weights=False,
    )


@grade("test_causal_attention")
@contract("CausalAttention", "token t only sees tokens 0..t")
def test_causal_attention_ignores_the_future(submission) -> None:
    expect_causal(
        submission,
        "CausalAttention",
        [3, 4, 8, 0.0],
        randn(2, 6, 3, seed=15),
        changed_from=4,
        seed=5,
    )


@grade("test_causal_attention_dropout")
@contract("CausalAttention", "dropout on the weights in training mode only")
def test_causal_attention_dropout(submission, reference) -> None:
    # The output shows the weights (one-hot tokens, values that copy them twice), so
    # dropout is judged by its contract whatever order the random draws come in.
    p, tokens = 0.3, 6
    x = token_permutations(12, tokens, seed=input_seed(16))
    init = [tokens, 2 * tokens, tokens, p]
    base = reference.probe("CausalAttention").module(init, [x], seed=6)
    state = readable_state(base["params"], heads=1, tokens=tokens)
    want = reference.probe("CausalAttention").module(init, [x], state=state)
    got = submission.probe("CausalAttention").module(init, [x], state=state)
    compare_outputs(got["out"], want["out"], "CausalAttention", "tensor", 1, 1e-5, 1e-4)
    weights = weights_in_output(want["out"]["array"], x, heads=1)
    trained = submission.probe("CausalAttention").module(
        init, [x], state=state, train=True, forward_seed=17
    )
    expect_kind(trained["out"], "tensor", "the output in training mode")
    shown = weights_in_output(trained["out"]["array"], x, heads=1, what="the output")
    dropped, counted = expect_dropped_weights(shown, weights, p)
    expect_dropout_rate(dropped, counted, p)
