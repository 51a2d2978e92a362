"""Dropout judged by its contract, never by the order of random draws.

Dropout on attention weights, with probability ``p``, in training mode:

* every weight is either 0 (dropped) or its eval-mode value divided by ``1 - p`` (kept);
* the weights that multiplied ``v`` are those weights (so a row's output is their mix);
* the fraction dropped is ``p`` up to chance: among ``n`` weights, the count dropped is
  Binomial(n, p), and it must lie within :data:`Z_BOUND` standard deviations of ``n p``.

Which weights are dropped depends on how the random numbers are drawn (one call for all
heads, one per head, ``torch.rand`` by hand, ``nn.Dropout``), and every such order is
correct. So nothing here compares a pattern with a particular generator's.

Module exercises return only their context vectors. :func:`readable_state` chooses
parameters that make the attention weights readable from the output: every token is a
one-hot vector, the values copy it twice (``v = [x | x]`` per head), and ``out_proj`` is
the identity, so a row of the output is that row's weights, written twice. Dropout on the
weights keeps the two copies equal; dropout anywhere else (on the values, the context or
the output) drops the copies independently and is caught.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..compare import CheckFailed

Z_BOUND = 5.0
"""Standard deviations allowed around n p. An honest dropout lands outside with
probability below 1e-6; a rate of 1 - p, 0 or 1 is far outside for the sizes used here."""
ATOL = 1e-5
RTOL = 1e-4
SMALLEST_COUNTED = 1e-3
"""Weights below this are not counted: 0 and w / (1 - p) are too close to tell apart."""


def expect_dropped_weights(
    trained: np.ndarray, weights: np.ndarray, p: float, what: str = "the weights"
) -> tuple[int, int]:
    """``trained`` is ``weights`` after dropout with probability ``p``: each entry 0 or
    ``weights / (1 - p)``. Returns (dropped, counted) over the entries that tell."""
    trained = np.asarray(trained, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    if trained.shape != weights.shape:
        raise CheckFailed(
            f"{what} in training mode have shape {list(trained.shape)}, "
            f"expected {list(weights.shape)}",
            stage="shape",
        )
    kept = weights / (1.0 - p)
    is_zero = np.abs(trained) <= ATOL
    is_kept = np.abs(trained - kept) <= ATOL + RTOL * np.abs(kept)
    wrong = ~(is_zero | is_kept)
    if wrong.any():
        at = tuple(int(i) for i in np.argwhere(wrong)[0])
        raise CheckFailed(
            f"{what} in training mode are not a dropout of the eval-mode weights: at "
            f"{list(at)} got {trained[at]:.4g}, expected 0 (dropped) or "
            f"{weights[at]:.4g} / (1 - {p:g}) = {kept[at]:.4g} (kept)",
            "Dropout zeroes each weight with probability p and divides the others by "
            "1 - p (nn.Dropout does both); apply it to the softmax weights, after masking.",
        )
    counted = weights > SMALLEST_COUNTED
    return int((is_zero & counted).sum()), int(counted.sum())


def expect_dropout_rate(dropped: int, counted: int, p: float, what: str = "weights") -> None:
    """The fraction dropped is p, within :data:`Z_BOUND` binomial standard deviations."""
    if counted == 0:
        raise CheckFailed(f"no {what} to count in training mode")
    spread = Z_BOUND * math.sqrt(p * (1 - p) / counted)
    rate = dropped / counted
    if abs(rate - p) > spread:
        raise CheckFailed(
            f"training mode dropped {dropped} of {counted} {what} ({rate:.0%}); with "
            f"dropout p = {p:g} about {p:.0%} should be dropped (between "
            f"{max(p - spread, 0):.0%} and {min(p + spread, 1):.0%})",
            "Drop each weight with probability p, not 1 - p, and only in training mode.",
        )


def token_permutations(batch: int, tokens: int, seed: int) -> np.ndarray:
    """[batch, T, T] float32: each sequence's tokens are the one-hot vectors, shuffled."""
    rng = np.random.default_rng(seed)
    eye = np.eye(tokens, dtype=np.float32)
    return np.stack([eye[rng.permutation(tokens)] for _ in range(batch)])


def readable_state(params: dict[str, np.ndarray], heads: int, tokens: int) -> dict[str, np.ndarray]:
    """``params`` with W_value (and out_proj) chosen so the output shows the weights:
    per head, the values are the one-hot token written twice, and out_proj is identity.

    Needs d_in == tokens and a head width of 2 * tokens; W_query and W_key are kept.
    """
    eye = np.eye(tokens, dtype=np.float32)
    state = dict(params)
    state["W_value.weight"] = np.concatenate([eye, eye] * heads, axis=0)
    if "W_value.bias" in state:
        state["W_value.bias"] = np.zeros_like(state["W_value.bias"])
    if "out_proj.weight" in state:
        state["out_proj.weight"] = np.eye(heads * 2 * tokens, dtype=np.float32)
    if "out_proj.bias" in state:
        state["out_proj.bias"] = np.zeros_like(state["out_proj.bias"])
    return state


def weights_in_output(
    output: np.ndarray, x: np.ndarray, heads: int, what: str = "the output"
) -> np.ndarray:
    """[batch, heads, T, T]: the weights a :func:`readable_state` output shows.

    Each head's two copies must agree: the same weights multiplied both.
    """
    batch, tokens, _ = x.shape
    if output.shape != (batch, tokens, heads * 2 * tokens):
        raise CheckFailed(
            f"{what} has shape {list(output.shape)}, expected "
            f"{[batch, tokens, heads * 2 * tokens]}",
            stage="shape",
        )
    split = output.astype(np.float64).reshape(batch, tokens, heads, 2, tokens)
    first, second = split[:, :, :, 0], split[:, :, :, 1]
    if not np.allclose(first, second, atol=ATOL, rtol=RTOL):
        raise CheckFailed(
            f"{what} in training mode is not the dropped-out weights times the values: two "
            "copies of the same values came out different",
            "Apply dropout to the attention weights (after softmax), not to the values, "
            "the context or the output.",
        )
    # first[b, t, h, j] = sum_s w[b, h, t, s] x[b, s, j]; x[b] is a permutation matrix.
    weights = np.einsum("bthj,bsj->bhts", first, x.astype(np.float64))
    return weights


def describe_output(value: dict[str, Any]) -> np.ndarray:
    """The array of a tensor result (a CheckFailed for anything else)."""
    if value.get("kind") != "tensor" or "array" not in value:
        raise CheckFailed("the output is not a tensor", stage="kind")
    return value["array"]


def expect_weights_dropout(probe: Any, heads: int, p: float, seed: int) -> None:
    """A multi-head layer built with dropout ``p`` drops its attention weights in training
    mode, and only those: read from the output of :func:`readable_state` parameters, the
    training-mode weights are a dropout of the eval-mode weights, at rate ``p``.

    ``probe`` runs the layer ``(d_in, d_out, context_length, dropout, num_heads)``; only
    the student's own layer is run, in both modes.
    """
    tokens = 5
    x = token_permutations(8, tokens, seed=seed)
    init = [tokens, heads * 2 * tokens, tokens, p, heads]
    state = readable_state(probe.module(init, [x], seed=seed)["params"], heads, tokens)
    evaluated = describe_output(probe.module(init, [x], state=state)["out"])
    weights = weights_in_output(evaluated, x, heads, what="the output in eval mode")
    trained = probe.module(init, [x], state=state, train=True, forward_seed=seed + 1)
    shown = weights_in_output(describe_output(trained["out"]), x, heads)
    dropped, counted = expect_dropped_weights(shown, weights, p)
    expect_dropout_rate(dropped, counted, p)
