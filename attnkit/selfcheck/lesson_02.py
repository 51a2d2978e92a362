"""Visible checks for lesson 2, self-attention in PyTorch."""

from __future__ import annotations

import numpy as np
import torch

from ..book import BOOK_INPUTS
from ..compare import CheckFailed, expect_array, expect_shape, expect_unchanged, pair, part
from ..probe import Probe
from .dtypes import expect_dtype
from .registry import visible

SLUG = "02_self_attention"
# Published in "Build a Large Language Model from Scratch", chapter 3.
BOOK_WEIGHTS_QUERY_2 = np.array([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
BOOK_CONTEXT_QUERY_2 = np.array([0.4419, 0.6515, 0.5683])
BOOK = {"atol": 6e-5, "rtol": 0.0, "check_dtype": False}


def torch_softmax(x: np.ndarray, dim: int) -> np.ndarray:
    return torch.softmax(torch.from_numpy(x), dim=dim).numpy()


@visible(
    SLUG,
    "softmax",
    "matches torch.softmax along dim=-1",
    contract=("a tensor of the same shape, dtype and device",),
)
def softmax_last(probe: Probe) -> None:
    RNG = np.random.default_rng(1356)  # fixed inputs: fingerprints depend on them
    x = RNG.normal(size=(3, 5)).astype(np.float32)
    expect_array(probe.call(x, dim=-1)["out"], torch_softmax(x, -1), kind="tensor")


@visible(SLUG, "softmax", "respects the dim argument")
def softmax_dim(probe: Probe) -> None:
    RNG = np.random.default_rng(5718)  # fixed inputs: fingerprints depend on them
    x = RNG.normal(size=(2, 4, 3)).astype(np.float32)
    expect_array(
        probe.call(x, dim=1)["out"], torch_softmax(x, 1), kind="tensor", what="softmax(x, dim=1)"
    )


@visible(SLUG, "softmax", "stays finite for logits around +-1000, input unchanged")
def softmax_stable(probe: Probe) -> None:
    x = np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -1002.0]], dtype=np.float32)
    result = probe.call(x, dim=-1)
    expect_array(result["out"], torch_softmax(x, -1), kind="tensor")
    expect_unchanged(x, result["inputs_after"][0], "the input x")


def book_attention(probe: Probe) -> None:
    context, weights = pair(probe.call(BOOK_INPUTS)["out"], probe.exercise.name)
    expect_shape(weights, (6, 6), kind="tensor", what="the attention weights")
    expect_array(part(weights, 1), BOOK_WEIGHTS_QUERY_2, what="the weights of query 2", **BOOK)
    expect_shape(context, (6, 3), kind="tensor", what="the context vectors")
    expect_array(
        part(context, 1), BOOK_CONTEXT_QUERY_2, what="the context vector of query 2", **BOOK
    )


for _name in ("simple_attention_loop", "simple_attention_matrix"):
    visible(SLUG, _name, "reproduces the book's weights and context for query 2")(book_attention)


@visible(SLUG, "SelfAttention_v1", "torch.manual_seed(123) reproduces the book's numbers")
def v1_book(probe: Probe) -> None:
    out = probe.module([3, 2], [BOOK_INPUTS], seed=123)["out"]
    expect_shape(out, (6, 2), kind="tensor")
    expected = np.array([[0.2996, 0.8053], [0.3061, 0.8210]])
    expect_array(part(out, slice(0, 2)), expected, what="the first two context vectors", **BOOK)


@visible(SLUG, "SelfAttention_v1", "a batch [2, 6, 3] gives [2, 6, 2], each row as alone")
def v1_batched(probe: Probe) -> None:
    alone = probe.module([3, 2], [BOOK_INPUTS], seed=123)["out"]["array"]
    batch = np.stack([BOOK_INPUTS, BOOK_INPUTS[::-1].copy()])
    out = probe.module([3, 2], [batch], seed=123)["out"]
    expect_shape(out, (2, 6, 2), kind="tensor", what="the batched output")
    expect_array(part(out, 0), alone, what="sequence 0 of the batch")


@visible(SLUG, "SelfAttention_v2", "torch.manual_seed(789) reproduces the book's numbers")
def v2_book(probe: Probe) -> None:
    out = probe.module([3, 2], [BOOK_INPUTS], seed=789)["out"]
    expect_shape(out, (6, 2), kind="tensor")
    expect_array(part(out, 0), np.array([-0.0739, 0.0713]), what="the first context vector", **BOOK)


@visible(SLUG, "copy_v2_weights_into_v1", "v1 receives the transposed nn.Linear weights")
def transfer(probe: Probe) -> None:
    result = probe.transfer(3, 2)
    for projection in ("W_query", "W_key", "W_value"):
        got = result["v1"].get(projection)
        if got is None:
            raise CheckFailed(f"v1 has no parameter {projection}")
        expect_array(
            {"kind": "tensor", "array": got},
            result["v2"][f"{projection}.weight"].T,
            what=f"v1.{projection} after the copy",
        )


@visible(SLUG, "simple_attention_matrix", "a batch [2, 6, 3] gives each sequence's own result")
def matrix_batched(probe: Probe) -> None:
    batch = np.stack([BOOK_INPUTS, BOOK_INPUTS[::-1].copy()])
    context, weights = pair(probe.call(batch)["out"], probe.exercise.name)
    expect_shape(weights, (2, 6, 6), kind="tensor", what="the batched weights")
    alone_context, alone_weights = pair(probe.call(batch[1])["out"], probe.exercise.name)
    expect_array(part(weights, 1), alone_weights["array"], what="the weights of sequence 1")
    expect_array(part(context, 1), alone_context["array"], what="the context of sequence 1")


@visible(
    SLUG,
    "SelfAttention_v2",
    "qkv_bias=True: the biases are part of the projections",
    contract=("context [..., T, d_out], a float32 tensor",),
)
def v2_bias(probe: Probe) -> None:
    RNG = np.random.default_rng(2481)  # fixed inputs: fingerprints depend on them
    x = RNG.normal(size=(2, 4, 3)).astype(np.float32)
    result = probe.module([3, 2], [x], seed=7, init_kwargs={"qkv_bias": True})
    params = {n: torch.from_numpy(a) for n, a in result["params"].items()}
    for projection in ("W_query", "W_key", "W_value"):
        if f"{projection}.bias" not in params:
            raise CheckFailed(f"with qkv_bias=True, {projection} should have a bias")
    tx = torch.from_numpy(x)
    q, k, v = (
        tx @ params[f"{n}.weight"].T + params[f"{n}.bias"] for n in ("W_query", "W_key", "W_value")
    )
    expected = torch.softmax(q @ k.transpose(-2, -1) / 2**0.5, dim=-1) @ v
    expect_array(result["out"], expected.numpy(), kind="tensor")


@visible(SLUG, "softmax", "a row that is all -inf (fully masked) becomes all zeros, not NaN")
def softmax_fully_masked(probe: Probe) -> None:
    x = np.array([[0.5, -1.0, 2.0], [-np.inf, -np.inf, -np.inf]], dtype=np.float32)
    expected = torch_softmax(x, -1)
    expected[1] = 0.0  # the kit's policy: a query that may see nothing gets zero weight
    expect_array(
        probe.call(x, dim=-1)["out"], expected, kind="tensor", what="softmax of masked rows"
    )


@visible(
    SLUG,
    "SelfAttention_v1",
    "a second d_out: scores scaled by sqrt(d_out = 5)",
    contract=("context vectors [..., T, d_out], a float32 tensor",),
)
def v1_second_d_out(probe: Probe) -> None:
    RNG = np.random.default_rng(3907)  # fixed inputs: fingerprints depend on them
    x = RNG.normal(size=(2, 4, 3)).astype(np.float32)
    result = probe.module([3, 5], [x], seed=5)
    params = {n: torch.from_numpy(a) for n, a in result["params"].items()}
    for projection in ("W_query", "W_key", "W_value"):
        if params.get(projection) is None or tuple(params[projection].shape) != (3, 5):
            raise CheckFailed(f"SelfAttention_v1(3, 5) should have a [3, 5] parameter {projection}")
    tx = torch.from_numpy(x)
    q, k, v = (tx @ params[n] for n in ("W_query", "W_key", "W_value"))
    expected = torch.softmax(q @ k.transpose(-2, -1) / 5**0.5, dim=-1) @ v
    expect_array(result["out"], expected.numpy(), kind="tensor", what="SelfAttention_v1(3, 5)")


@visible(SLUG, "copy_v2_weights_into_v1", "refuses a v2 with biases: raises ValueError")
def transfer_refuses_bias(probe: Probe) -> None:
    result = probe.transfer(3, 2, qkv_bias=True)
    raised = result["raised"]
    if "ValueError" not in result["raised_as"]:
        what = "did not raise" if raised is None else f"raised {raised}"
        raise CheckFailed(
            f"copying a v2 built with qkv_bias=True {what}; it should raise ValueError",
            "v1 has no bias to receive v2's: refuse with raise ValueError(...).",
        )


# -- dtypes ------------------------------------------------------------------------------------


@visible(
    SLUG,
    "softmax",
    "float64 stays float64",
    contract=("a tensor of the same shape, dtype and device",),
)
def softmax_float64(probe: Probe) -> None:
    x = np.random.default_rng(3305).normal(size=(2, 5))
    out = probe.call(x, dim=-1)["out"]
    expect_dtype(out, np.float64, kind="tensor", what="softmax of a float64 tensor")
    expect_array(out, torch_softmax(x, -1), kind="tensor", what="softmax of a float64 tensor")


def keeps_input_dtype(probe: Probe) -> None:
    for dtype in (np.float32, np.float64):
        inputs = BOOK_INPUTS.astype(dtype)
        context, weights = pair(probe.call(inputs)["out"], probe.exercise.name)
        name = np.dtype(dtype).name
        expect_dtype(context, dtype, kind="tensor", what=f"the context of {name} inputs")
        expect_dtype(weights, dtype, kind="tensor", what=f"the weights of {name} inputs")


visible(
    SLUG,
    "simple_attention_loop",
    "float32 and float64 inputs keep their dtype",
    contract=("(context [T, d], weights [T, T]), tensors of the dtype of inputs",),
)(keeps_input_dtype)
visible(
    SLUG,
    "simple_attention_matrix",
    "float32 and float64 inputs keep their dtype",
    contract=("(context [..., T, d], weights [..., T, T]), tensors of the dtype of inputs",),
)(keeps_input_dtype)
