"""Hidden tests for lesson 2, self-attention in PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

from attnkit.book import BOOK_INPUTS
from attnkit.compare import CheckFailed, expect_array, expect_shape
from attnkit_autograder.grading.harness import grade
from attnkit_autograder.grading.suite_support import (
    contract,
    randn,
    rng,
    same_call,
    same_module,
    verdict_embeddings,
)

T = {"kind": "tensor"}


# --- softmax ----------------------------------------------------------------------------


@grade("test_softmax_values")
@contract(
    "softmax", "a tensor of the same shape, dtype and device", "sum to 1", "not modified in place"
)
@pytest.mark.parametrize(("shape", "dim"), [((7,), 0), ((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1)])
def test_softmax_matches_reference(submission, reference, shape, dim) -> None:
    x = randn(*shape, seed=sum(shape) + dim, scale=3.0)
    same_call(submission, reference, "softmax", x, dim=dim, **T)


@grade("test_softmax_values")
@contract("softmax", "same shape, dtype and device", "sum to 1")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_keeps_dtype_and_sums_to_one(submission, reference, dtype) -> None:
    got, _ = same_call(
        submission, reference, "softmax", randn(4, 6, seed=3, dtype=dtype), dim=-1, **T
    )
    sums = got["out"]["array"].sum(-1)
    expect_array({"kind": "tensor", "array": sums}, np.ones(4, dtype=dtype), what="the row sums")


@grade("test_softmax_stability")
@contract("softmax", "finite for values around +-1000", "all -inf becomes all zeros")
def test_softmax_huge_logits_and_masked_rows(submission, reference) -> None:
    x = np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -999.0]], dtype=np.float32)
    same_call(submission, reference, "softmax", x, dim=-1, **T)
    masked = np.array([[-np.inf, -np.inf], [0.0, -np.inf]], dtype=np.float32)
    same_call(submission, reference, "softmax", masked, dim=-1, **T)


@grade("test_softmax_values")
@contract("softmax", "sum to 1")
def test_softmax_default_dim_is_the_last(submission, reference) -> None:
    # No dim given, on three axes of different lengths: the default is dim=-1, and only on
    # a 3-d input does a default of 1 (or 0) differ from it.
    same_call(submission, reference, "softmax", randn(2, 3, 4, seed=33), **T)


@grade("test_softmax_stability")
@contract("softmax", "finite for values around +-1000")
def test_softmax_logits_spanning_two_thousand(submission, reference) -> None:
    # +1000 and -1000 in one row: shifting by the row's maximum keeps every exponent <= 0;
    # shifting by anything else (the minimum, the mean) overflows float32 to inf.
    x = np.array([[1000.0, -1000.0, 0.0], [-1000.0, 1000.0, 999.0]], dtype=np.float32)
    same_call(submission, reference, "softmax", x, dim=-1, **T)


# --- attention without weights ----------------------------------------------------------------


@grade("test_simple_attention_loop")
@contract(
    "simple_attention_loop",
    "(context [T, d], weights [T, T]), tensors of the dtype of inputs",
    "softmax over j of the dot product inputs[i] . inputs[j]",
    "inputs: [T, d] (not modified)",
)
@pytest.mark.parametrize("source", ["book", "random"])
def test_loop_matches_reference(submission, reference, source) -> None:
    x = BOOK_INPUTS if source == "book" else randn(5, 4, seed=4)
    same_call(submission, reference, "simple_attention_loop", x, outputs=2, **T)


@grade("test_simple_attention_loop")
@contract(
    "simple_attention_loop", "(context [T, d], weights [T, T]), tensors of the dtype of inputs"
)
def test_loop_keeps_float64(submission, reference) -> None:
    x = randn(4, 3, seed=31, dtype=np.float64)
    same_call(submission, reference, "simple_attention_loop", x, outputs=2, **T)


@grade("test_simple_attention_matrix")
@contract(
    "simple_attention_matrix",
    "(context [..., T, d], weights [..., T, T]), tensors of the dtype of inputs",
)
def test_matrix_keeps_float64(submission, reference) -> None:
    x = randn(2, 4, 3, seed=32, dtype=np.float64)
    same_call(submission, reference, "simple_attention_matrix", x, outputs=2, **T)


@grade("test_simple_attention_matrix")
@contract(
    "simple_attention_matrix",
    "(context [..., T, d], weights [..., T, T]), tensors of the dtype of inputs",
    "the same values as the loop version",
    "inputs: [..., T, d] (not modified)",
)
@pytest.mark.parametrize("shape", [(6, 3), (5, 4), (3, 5, 4)])
def test_matrix_matches_reference(submission, reference, shape) -> None:
    x = BOOK_INPUTS if shape == (6, 3) else randn(*shape, seed=len(shape))
    same_call(submission, reference, "simple_attention_matrix", x, outputs=2, **T)


# --- SelfAttention_v1 / v2 -----------------------------------------------------------------------


@grade("test_v1_forward")
@contract(
    "SelfAttention_v1",
    "context vectors [..., T, d_out], a float32 tensor",
    "scores scaled by sqrt(d_out)",
    "(not modified)",
)
@pytest.mark.parametrize(("d_in", "d_out", "tokens"), [(3, 2, 6), (5, 3, 4), (4, 7, 2)])
def test_v1_matches_reference(submission, reference, d_in, d_out, tokens) -> None:
    x = randn(tokens, d_in, seed=d_in * d_out)
    same_module(submission, reference, "SelfAttention_v1", [d_in, d_out], [x], seed=d_out)


@grade("test_v1_forward")
@contract("SelfAttention_v1", "Parameters are created in the order W_query, W_key, W_value")
def test_v1_book_seed(submission, reference) -> None:
    # Parameters created in the documented order: the seed alone must reproduce the book.
    same_module(
        submission,
        reference,
        "SelfAttention_v1",
        [3, 2],
        [BOOK_INPUTS],
        seed=123,
        shared_weights=False,
        atol=1e-4,
    )


@grade("test_v1_forward")
@contract("SelfAttention_v1", "gradients reach W_query, W_key and W_value")
def test_v1_gradients_reach_every_parameter(submission, reference) -> None:
    x = randn(5, 4, seed=7)
    same_module(
        submission,
        reference,
        "SelfAttention_v1",
        [4, 3],
        [x],
        seed=1,
        grad_output=randn(5, 3, seed=8),
    )


@grade("test_v1_batched")
@contract("SelfAttention_v1", "[batch, T, d_in]", "context vectors [..., T, d_out]")
@pytest.mark.parametrize("source", ["random", "verdict"])
def test_v1_batched_matches_reference(submission, reference, source) -> None:
    # batch 4, tokens 6, d_in 5, d_out 3 all differ; the verdict batch is [8, 6, 16].
    x = randn(4, 6, 5, seed=9) if source == "random" else verdict_embeddings()
    d_in = x.shape[-1]
    got, _ = same_module(submission, reference, "SelfAttention_v1", [d_in, 3], [x], seed=2)
    expect_shape(got["out"], (*x.shape[:2], 3), **T)


@grade("test_v2_forward")
@contract(
    "SelfAttention_v2",
    "context [..., T, d_out], a float32 tensor",
    "with qkv_bias=True the projections add their biases",
    "gradients reach every parameter",
    "(not modified)",
)
@pytest.mark.parametrize("qkv_bias", [False, True])
def test_v2_matches_reference(submission, reference, qkv_bias) -> None:
    x = randn(2, 5, 4, seed=10)
    same_module(
        submission,
        reference,
        "SelfAttention_v2",
        [4, 3],
        [x],
        seed=3,
        init_kwargs={"qkv_bias": qkv_bias},
        grad_output=randn(2, 5, 3, seed=11),
    )


@grade("test_v2_forward")
@contract(
    "SelfAttention_v2",
    "Parameters are created in the order W_query, W_key, W_value",
    "[batch, T, d_in]",
)
def test_v2_book_seed_and_verdict(submission, reference) -> None:
    same_module(
        submission,
        reference,
        "SelfAttention_v2",
        [3, 2],
        [BOOK_INPUTS],
        seed=789,
        shared_weights=False,
        atol=1e-4,
    )
    same_module(submission, reference, "SelfAttention_v2", [16, 8], [verdict_embeddings()])


# --- weight transfer ---------------------------------------------------------------------


@grade("test_weight_transfer")
@contract(
    "copy_v2_weights_into_v1",
    "returns: v1, whose W_query/W_key/W_value now hold the transposed Linear weights",
)
@pytest.mark.parametrize(("d_in", "d_out"), [(3, 2), (5, 4)])
def test_transfer_copies_transposed_weights(submission, d_in, d_out) -> None:
    # The grader chooses v2's weights, so v1 is compared with values computed here, never
    # with what the submission's process reports about its own v2.
    generator = rng(1000 + d_in)
    v2_state = {
        f"{name}.weight": generator.standard_normal((d_out, d_in)).astype(np.float32)
        for name in ("W_query", "W_key", "W_value")
    }
    result = submission.probe("copy_v2_weights_into_v1").transfer(
        d_in, d_out, seed=d_in, v2_state=v2_state
    )
    for name in ("W_query", "W_key", "W_value"):
        if name not in result["v1"]:
            raise CheckFailed(f"SelfAttention_v1 has no parameter {name}")
        expect_array(
            {"kind": "tensor", "array": result["v1"][name]},
            v2_state[f"{name}.weight"].T,
            what=f"v1.{name} after the copy",
        )
    if not result["returned_v1"]:
        raise CheckFailed("copy_v2_weights_into_v1 should return v1")


@grade("test_weight_transfer")
@contract("copy_v2_weights_into_v1", "v2 without biases (else ValueError)")
def test_transfer_refuses_biases(submission) -> None:
    result = submission.probe("copy_v2_weights_into_v1").transfer(3, 2, qkv_bias=True)
    if "ValueError" not in result["raised_as"]:
        got = "returned normally" if result["raised"] is None else f"raised {result['raised']}"
        raise CheckFailed(
            f"copying a v2 built with qkv_bias=True {got}; expected ValueError",
            "v1 has no bias to receive v2's biases: refuse with a ValueError.",
        )
