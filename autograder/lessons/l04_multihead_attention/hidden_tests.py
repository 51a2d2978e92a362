"""Hidden tests for lesson 4, multi-head attention."""

from __future__ import annotations

import numpy as np
import pytest

from attnkit.compare import CheckFailed, expect_kind
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
    same_module,
    verdict_embeddings,
)


@grade("test_mha_wrapper")
@contract(
    "MultiHeadAttentionWrapper",
    "[batch, T, num_heads * d_out], the heads' outputs concatenated along the last axis",
    "head 0 first",
    "gradients reach every parameter",
    "(not modified)",
)
@pytest.mark.parametrize(("d_in", "d_out", "heads", "tokens"), [(3, 2, 2, 6), (5, 3, 4, 7)])
def test_wrapper_matches_reference(submission, reference, d_in, d_out, heads, tokens) -> None:
    x = randn(2, tokens, d_in, seed=heads)
    same_module(
        submission,
        reference,
        "MultiHeadAttentionWrapper",
        [d_in, d_out, 8, 0.0, heads],
        [x],
        seed=1,
        grad_output=randn(2, tokens, heads * d_out, seed=2),
    )


@grade("test_mha_wrapper")
@contract("MultiHeadAttentionWrapper", "a float32 tensor [batch, T, num_heads * d_out]")
def test_wrapper_on_verdict_batch(submission, reference) -> None:
    same_module(
        submission,
        reference,
        "MultiHeadAttentionWrapper",
        [16, 4, 6, 0.0, 3],
        [verdict_embeddings()],
    )


@grade("test_mha_values")
@contract(
    "MultiHeadAttention",
    "a float32 tensor [batch, T, d_out]",
    "heads merged in order, then out_proj",
    "(not modified)",
)
@pytest.mark.parametrize(
    ("d_in", "d_out", "heads", "tokens", "context"),
    [(6, 8, 2, 7, 10), (3, 2, 2, 6, 6), (5, 12, 3, 4, 9)],
)
def test_mha_matches_reference(submission, reference, d_in, d_out, heads, tokens, context) -> None:
    x = randn(3, tokens, d_in, seed=d_out)
    same_module(
        submission, reference, "MultiHeadAttention", [d_in, d_out, context, 0.0, heads], [x], seed=3
    )


@grade("test_mha_values")
@contract(
    "MultiHeadAttention", "Parameters are created in the order W_query, W_key, W_value, out_proj"
)
def test_mha_on_verdict_batch_and_book_seed(submission, reference) -> None:
    same_module(
        submission, reference, "MultiHeadAttention", [16, 12, 6, 0.0, 3], [verdict_embeddings()]
    )
    same_module(
        submission,
        reference,
        "MultiHeadAttention",
        [3, 2, 6, 0.0, 2],
        [randn(2, 6, 3, seed=4, per_student=False)],  # a book-seed test: the same for all
        seed=123,
        shared_weights=False,
    )


@grade("test_mha_heads")
@contract(
    "MultiHeadAttention",
    "scores scaled by sqrt(head_dim)",
    "with qkv_bias=True the projections add their biases",
    "gradients reach every parameter",
)
def test_mha_head_dim_scaling_bias_and_gradients(submission, reference) -> None:
    # 4 heads of width 2: sqrt(head_dim) and sqrt(d_out) differ by a factor of 2.
    x = randn(2, 5, 6, seed=5)
    same_module(
        submission,
        reference,
        "MultiHeadAttention",
        [6, 8, 5, 0.0, 4],
        [x],
        seed=6,
        init_kwargs={"qkv_bias": True},
        grad_output=randn(2, 5, 8, seed=7),
    )


@grade("test_mha_heads")
@contract(
    "MultiHeadAttention",
    "dropout on the weights in training mode only",
    "token t only sees tokens 0..t",
)
def test_mha_dropout_and_causality(submission, reference) -> None:
    # Each head's weights are read from the output (one-hot tokens, values that copy them
    # twice, out_proj the identity): one draw for all heads or one per head both pass.
    p, tokens, heads = 0.3, 5, 2
    x = token_permutations(10, tokens, seed=input_seed(8))
    init = [tokens, heads * 2 * tokens, tokens, p, heads]
    base = reference.probe("MultiHeadAttention").module(init, [x], seed=9)
    state = readable_state(base["params"], heads=heads, tokens=tokens)
    want = reference.probe("MultiHeadAttention").module(init, [x], state=state)
    got = submission.probe("MultiHeadAttention").module(init, [x], state=state)
    compare_outputs(got["out"], want["out"], "MultiHeadAttention", "tensor", 1, 1e-5, 1e-4)
    weights = weights_in_output(want["out"]["array"], x, heads=heads)
    trained = submission.probe("MultiHeadAttention").module(
        init, [x], state=state, train=True, forward_seed=10
    )
    expect_kind(trained["out"], "tensor", "the output in training mode")
    shown = weights_in_output(trained["out"]["array"], x, heads=heads, what="the output")
    dropped, counted = expect_dropped_weights(shown, weights, p)
    expect_dropout_rate(dropped, counted, p)
    expect_causal(
        submission,
        "MultiHeadAttention",
        [4, 6, 6, 0.0, 3],
        randn(2, 6, 4, seed=8),
        changed_from=4,
        shift=-7.0,
        seed=11,
    )


def expect_number(submission, reference, exercise: str) -> None:
    got = submission.probe(exercise).call()["out"]
    want = reference.probe(exercise).call()["out"]
    expect_kind(got, "number", f"{exercise}()")
    if not np.array_equal(got["array"], want["array"]):
        raise CheckFailed(f"{exercise}() returns {got['array']}, which is not right")


@grade("test_wrapper_d_out")
@contract("wrapper_d_out", "returns an int")
def test_wrapper_d_out(submission, reference) -> None:
    expect_number(submission, reference, "wrapper_d_out")


@grade("test_gpt2_parameters")
@contract("gpt2_attention_parameters", "returns an int")
def test_gpt2_parameters(submission, reference) -> None:
    expect_number(submission, reference, "gpt2_attention_parameters")
