"""Reading what attention heads do, and three facts about attention that training shows.

Head detectors turn an attention pattern [..., T, T] (rows: queries, columns: keys, each
row summing to 1) into one number per head: the average attention a query pays to one
particular key. A *current-token* head looks at the query's own position (the diagonal),
a *previous-token* head one step back (the first sub-diagonal), a *first-token* head at
position 0 (a common resting place), and an *induction* head, on a sequence that repeats
with period P, at the token just after the previous occurrence of the current one:
position i - P + 1.

* :func:`padding_causal_mask`: where fully masked rows really come from (left padding).
* :func:`softmax_jacobian_norm`: why scores are divided by sqrt(d_k) (saturated softmax
  has vanishing gradients).
* :func:`permutation_gap`: without positions, attention cannot tell the order of tokens.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .exercises import exercise

__all__ = [
    "diagonal_score",
    "first_token_score",
    "induction_score",
    "padding_causal_mask",
    "permutation_gap",
    "softmax_jacobian_norm",
]


@exercise("05_watch_attention_learn", "mean attention on the diagonal `offset` steps back")
def diagonal_score(weights: torch.Tensor, offset: int) -> torch.Tensor:
    """The mean of ``weights[..., i, i - offset]`` over the queries ``i >= offset``.

    offset 0 scores a current-token head, offset 1 a previous-token head. ``weights`` is
    [..., T, T] with 0 <= offset < T; the result has the leading shape [...].
    """
    return torch.diagonal(weights, offset=-offset, dim1=-2, dim2=-1).mean(dim=-1)


@exercise("05_watch_attention_learn", "mean attention on the first token")
def first_token_score(weights: torch.Tensor) -> torch.Tensor:
    """The mean of ``weights[..., i, 0]`` over the queries ``i >= 1`` (query 0 can see
    nothing else, so it says nothing about the head). ``weights`` is [..., T, T], T >= 2;
    the result has the leading shape [...]."""
    return weights[..., 1:, 0].mean(dim=-1)


@exercise("05_watch_attention_learn", "mean attention on the token after the last occurrence")
def induction_score(weights: torch.Tensor, period: int) -> torch.Tensor:
    """On a sequence that repeats with period ``period``: the mean of
    ``weights[..., i, i - period + 1]`` over the queries ``i >= period``, the attention each
    query pays to the token that followed its previous occurrence. ``weights`` is
    [..., T, T] with 1 <= period < T; the result has the leading shape [...]."""
    return torch.diagonal(weights, offset=-(period - 1), dim1=-2, dim2=-1)[..., 1:].mean(dim=-1)


@exercise("05_watch_attention_learn", "causal and left-padding mask, True where blocked")
def padding_causal_mask(lengths: torch.Tensor, num_tokens: int) -> torch.Tensor:
    """Bool [batch, 1, T, T], True where attention is blocked, for sequences left-padded to
    ``num_tokens``: sequence b's real tokens are its last ``lengths[b]`` positions.

    Key j is blocked for query i when it is in the future (j > i) or padding
    (j < num_tokens - lengths[b]). The rows of padding queries are then fully blocked.
    """
    positions = torch.arange(num_tokens)
    future = positions[None, :] > positions[:, None]
    padding = positions[None, :] < (num_tokens - lengths)[:, None]
    return (future[None, :, :] | padding[:, None, :])[:, None, :, :]


@exercise("05_watch_attention_learn", "size of softmax's Jacobian, per row of scores")
def softmax_jacobian_norm(scores: torch.Tensor) -> torch.Tensor:
    """The Frobenius norm of the Jacobian of softmax over the last axis, per row.

    With s = softmax(scores) along the last axis, the Jacobian of one row is
    J = diag(s) - s s^T. ``scores`` is [..., n]; the result has the leading shape [...].
    A saturated softmax (one weight near 1) has a Jacobian near 0: no gradient flows.
    """
    s = torch.softmax(scores, dim=-1)
    jacobian = torch.diag_embed(s) - s[..., :, None] * s[..., None, :]
    return jacobian.flatten(-2).norm(dim=-1)


@exercise("05_watch_attention_learn", "how far a layer is from permutation-equivariant")
def permutation_gap(
    layer: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, perm: torch.Tensor
) -> float:
    """The largest absolute difference between ``layer(x[:, perm])`` (the tokens shuffled,
    then the layer) and ``layer(x)[:, perm]`` (the layer, then the shuffle), as a float.

    ``x`` is [batch, T, d]; ``perm`` a permutation of range(T). 0 means the layer cannot
    tell the order of its tokens.
    """
    return (layer(x[:, perm]) - layer(x)[:, perm]).abs().max().item()
