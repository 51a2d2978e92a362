"""Visible checks for lesson 4, multi-head attention."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..assignments import ASSIGNMENTS
from ..compare import CheckFailed, expect_array, expect_kind, expect_shape, part
from ..probe import Probe
from .dropout import expect_weights_dropout
from .dtypes import expect_dtype
from .lesson_03 import BOOK, BOOK_BATCH
from .registry import visible

SLUG = "04_multihead_attention"


@visible(SLUG, "MultiHeadAttentionWrapper", "torch.manual_seed(123) reproduces the book's numbers")
def wrapper_book(probe: Probe) -> None:
    out = probe.module([3, 2, 6, 0.0, 2], [BOOK_BATCH], seed=123)["out"]
    expect_shape(out, (2, 6, 4), kind="tensor")
    expected = np.array([-0.4519, 0.2216, 0.4772, 0.1063])
    expect_array(part(out, (0, 0)), expected, what="the first context vector", **BOOK)


@visible(SLUG, "MultiHeadAttention", "torch.manual_seed(123) reproduces the book's numbers")
def mha_book(probe: Probe) -> None:
    out = probe.module([3, 2, 6, 0.0, 2], [BOOK_BATCH], seed=123)["out"]
    expect_shape(out, (2, 6, 2), kind="tensor")
    expect_array(
        part(out, (0, 0)), np.array([0.3190, 0.4858]), what="the first context vector", **BOOK
    )


@visible(
    SLUG,
    "MultiHeadAttention",
    "agrees with F.scaled_dot_product_attention(is_causal=True), with 2 heads and with 4",
    contract=("a float32 tensor [batch, T, d_out]",),
)
def mha_matches_torch(probe: Probe) -> None:
    RNG = np.random.default_rng(2240)  # fixed inputs: fingerprints depend on them
    x = RNG.normal(size=(3, 5, 6)).astype(np.float32)
    for heads in (2, 4):
        matches_torch(probe, x, heads)


def matches_torch(probe: Probe, x: np.ndarray, heads: int) -> None:
    """The layer (6, 8, 7, 0.0, heads) with biases against PyTorch's attention."""
    result = probe.module([6, 8, 7, 0.0, heads], [x], seed=5, init_kwargs={"qkv_bias": True})
    params = {n: torch.from_numpy(a) for n, a in result["params"].items()}
    for name in ("W_query.weight", "W_key.weight", "W_value.weight", "out_proj.weight"):
        if name not in params:
            raise CheckFailed(f"MultiHeadAttention has no parameter {name}")
    tx = torch.from_numpy(x)

    def split(prefix: str) -> torch.Tensor:
        projected = F.linear(tx, params[f"{prefix}.weight"], params.get(f"{prefix}.bias"))
        return projected.view(3, 5, heads, 8 // heads).transpose(1, 2)

    attended = F.scaled_dot_product_attention(
        split("W_query"), split("W_key"), split("W_value"), is_causal=True
    )
    merged = attended.transpose(1, 2).reshape(3, 5, 8)
    expected = F.linear(merged, params["out_proj.weight"], params.get("out_proj.bias"))
    expect_array(
        result["out"],
        expected.detach().numpy(),
        kind="tensor",
        what=f"the output with {heads} heads",
    )


@visible(
    SLUG, "MultiHeadAttention", "dropout in training mode drops attention weights, nothing else"
)
def mha_dropout(probe: Probe) -> None:
    expect_weights_dropout(probe, heads=2, p=0.3, seed=2241)


@visible(SLUG, "wrapper_d_out", "your wrapper with this d_out and 2 heads gives 2 features")
def wrapper_d_out(probe: Probe) -> None:
    value = probe.call()["out"]
    expect_kind(value, "number", "wrapper_d_out()")
    wrapper = probe.sibling(ASSIGNMENTS[SLUG].exercise("MultiHeadAttentionWrapper"))
    d_out = int(value["array"])
    out = wrapper.module([3, d_out, 6, 0.0, 2], [BOOK_BATCH], seed=123)["out"]
    expect_kind(out, "tensor", "the wrapper's output")
    features = out["array"].shape[-1]
    if features != 2:
        raise CheckFailed(f"with d_out={d_out} the wrapper gives {features} features, not 2")


@visible(
    SLUG, "gpt2_attention_parameters", "matches your MultiHeadAttention(768, 768, 1024, 0.0, 12)"
)
def gpt2_parameters(probe: Probe) -> None:
    value = probe.call()["out"]
    expect_kind(value, "number", "gpt2_attention_parameters()")
    mha = probe.sibling(ASSIGNMENTS[SLUG].exercise("MultiHeadAttention"))
    shapes = mha.parameter_shapes([768, 768, 1024, 0.0, 12])
    counted = sum(int(np.prod(shape)) for shape in shapes.values())
    if int(value["array"]) != counted:
        raise CheckFailed(
            f"gpt2_attention_parameters() returns {int(value['array']):,}, but your layer has "
            f"{counted:,} parameters",
            "Count every projection's weights and biases, including out_proj.",
        )


@visible(
    SLUG,
    "MultiHeadAttentionWrapper",
    "returns a float32 tensor",
    contract=("a float32 tensor [batch, T, num_heads * d_out]",),
)
def wrapper_float32(probe: Probe) -> None:
    out = probe.module([3, 2, 6, 0.0, 2], [BOOK_BATCH], seed=123)["out"]
    expect_dtype(out, np.float32, kind="tensor")
