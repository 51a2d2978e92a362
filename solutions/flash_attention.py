"""FlashAttention on a CPU: the online softmax, and attention computed tile by tile.

Attention over T tokens builds a T x T matrix of scores, per batch and head: at T = 4096
that is 64 MiB of float32 for one head, before softmax makes a second one. FlashAttention
(Dao et al., 2022) never builds it. It walks over *tiles*: a block of queries against a
block of keys, keeping for each query row three running statistics, the largest score
seen so far ``m``, the sum of ``exp(score - m)`` so far ``l``, and the output accumulated
so far ``acc`` (weighted by ``exp(score - m)``). When a new tile raises a row's maximum,
``l`` and ``acc`` are rescaled by ``exp(m_old - m_new)``; at the end ``acc / l`` is the
output, and ``m + log(l)`` the row's log-sum-exp, all the backward pass needs besides the
inputs and the output.

* :func:`online_softmax`: the running maximum and sum, in one pass over blocks of a row;
* :func:`flash_attention`: the tiled forward pass, returning the output and the log-sum-exp;
* :func:`flash_attention_backward`: the gradients, recomputing each tile's weights from the
  log-sum-exp instead of storing them.

The causal mask is aligned bottom-right, as in decoding with a cache: with T_q queries and
T_k keys, query i (counted from 0) may see key j when ``j <= i + (T_k - T_q)``. A query that
may see no key gets an all-zero output and a log-sum-exp of -inf (the kit's convention for
fully masked rows: never NaN).

Off-limits to students: every library softmax and fused attention.
"""

from __future__ import annotations

import math

import torch

from attnkit.assignments import ATTENTION_CALLS, SOFTMAX_CALLS

from .exercises import exercise

__all__ = ["flash_attention", "flash_attention_backward", "online_softmax"]

FORBIDDEN = SOFTMAX_CALLS + ATTENTION_CALLS


@exercise(
    "07_flash_attention", "softmax from a running max and sum over blocks", forbidden=FORBIDDEN
)
def online_softmax(scores: torch.Tensor, block: int) -> torch.Tensor:
    """Softmax over the last axis of ``scores``, whose running maximum and sum are found in
    one pass over blocks of ``block`` columns; a row of only -inf gives zeros."""
    m = torch.full(scores.shape[:-1], -math.inf, dtype=scores.dtype)
    total = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
    for start in range(0, scores.shape[-1], block):
        chunk = scores[..., start : start + block]
        m_new = torch.maximum(m, chunk.amax(dim=-1))
        shift = torch.where(m_new == -math.inf, 0.0, m_new)
        total = total * torch.exp(m - shift) + torch.exp(chunk - shift[..., None]).sum(dim=-1)
        m = m_new
    shift = torch.where(m == -math.inf, 0.0, m)
    total = torch.where(total == 0, 1.0, total)
    return torch.exp(scores - shift[..., None]) / total[..., None]


@exercise("07_flash_attention", "tiled attention: output and log-sum-exp", forbidden=FORBIDDEN)
def flash_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    block_q: int,
    block_k: int,
    causal: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(output [..., T_q, d_v], log-sum-exp [..., T_q]) of softmax(q k^T / sqrt(d)) v,
    computed one block_q x block_k tile at a time with a running max, sum and output."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    offset = n_k - n_q
    out = q.new_zeros(*q.shape[:-1], v.shape[-1])
    lse = q.new_full(q.shape[:-1], -math.inf)
    for i in range(0, n_q, block_q):
        q_tile = q[..., i : i + block_q, :]
        rows = torch.arange(i, i + q_tile.shape[-2])
        m = q.new_full(q_tile.shape[:-1], -math.inf)
        total = q.new_zeros(q_tile.shape[:-1])
        acc = q.new_zeros(*q_tile.shape[:-1], v.shape[-1])
        for j in range(0, n_k, block_k):
            if causal and j > rows[-1] + offset:
                break  # this tile and every later one is in the future of every row
            k_tile = k[..., j : j + block_k, :]
            s = q_tile @ k_tile.transpose(-2, -1) * scale
            if causal:
                cols = torch.arange(j, j + k_tile.shape[-2])
                s = s.masked_fill(cols[None, :] > rows[:, None] + offset, -math.inf)
            m_new = torch.maximum(m, s.amax(dim=-1))
            shift = torch.where(m_new == -math.inf, 0.0, m_new)
            p = torch.exp(s - shift[..., None])
            alpha = torch.exp(m - shift)
            total = total * alpha + p.sum(dim=-1)
            acc = acc * alpha[..., None] + p @ v[..., j : j + block_k, :]
            m = m_new
        seen = total > 0
        safe = torch.where(seen, total, 1.0)
        out[..., i : i + block_q, :] = torch.where(seen[..., None], acc / safe[..., None], 0.0)
        lse[..., i : i + block_q] = torch.where(seen, m + torch.log(safe), -math.inf)
    return out, lse


@exercise("07_flash_attention", "gradients by recomputing each tile's weights", forbidden=FORBIDDEN)
def flash_attention_backward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    grad_out: torch.Tensor,
    block_q: int,
    block_k: int,
    causal: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv) of attention's output against ``grad_out``, each tile's weights
    recomputed as exp(s - lse): P = softmax(S) is never stored whole."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    offset = n_k - n_q
    # A fully masked row has lse = -inf and no weight anywhere: shift it by +inf instead.
    lse = torch.where(lse == -math.inf, math.inf, lse)
    delta = (grad_out * out).sum(dim=-1)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for i in range(0, n_q, block_q):
        q_tile, g_tile = q[..., i : i + block_q, :], grad_out[..., i : i + block_q, :]
        rows = torch.arange(i, i + q_tile.shape[-2])
        for j in range(0, n_k, block_k):
            if causal and j > rows[-1] + offset:
                break
            k_tile, v_tile = k[..., j : j + block_k, :], v[..., j : j + block_k, :]
            s = q_tile @ k_tile.transpose(-2, -1) * scale
            if causal:
                cols = torch.arange(j, j + k_tile.shape[-2])
                s = s.masked_fill(cols[None, :] > rows[:, None] + offset, -math.inf)
            p = torch.exp(s - lse[..., i : i + block_q, None])
            dv[..., j : j + block_k, :] += p.transpose(-2, -1) @ g_tile
            ds = p * (g_tile @ v_tile.transpose(-2, -1) - delta[..., i : i + block_q, None])
            dq[..., i : i + block_q, :] += ds @ k_tile * scale
            dk[..., j : j + block_k, :] += ds.transpose(-2, -1) @ q_tile * scale
    return dq, dk, dv
