"""A tiny decoder-only transformer built around lesson 4's multi-head attention.

Two attention-only blocks with residual connections are enough to learn a task whose right
attention pattern is known in advance: random segments of tokens, each repeated a few times
at a varying offset. To predict the next token of a repetition, a model must (1) find where
the current token appeared before and (2) copy the token that came after it. Trained, the
first layer grows *previous-token* heads and the second *induction* heads, the two-step
circuit Olsson et al. (2022) found in large language models. The offset must vary: with a
fixed one, "look back exactly P tokens" would do, and no such circuit is needed.

* :class:`MultiHeadAttention`: lesson 4's layer, which also keeps the weights of its last
  call (``last_weights``) so that we can watch them, and takes an optional padding mask;
* :class:`TinyTransformer`: token and position embeddings, the blocks, an output head;
* :func:`train_step`: one step of next-token training.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from attnkit.assignments import ATTENTION_CALLS

from .exercises import exercise

__all__ = ["MultiHeadAttention", "TinyTransformer", "train_step"]


class MultiHeadAttention(nn.Module):
    """Lesson 4's causal multi-head attention, keeping the weights of its last call.

    Constructor ``(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)`` and
    parameters as in lesson 4: ``W_query``, ``W_key``, ``W_value`` (Linear(d_in, d_out,
    bias=qkv_bias)), then ``out_proj`` (Linear(d_out, d_out)); buffer ``mask``.

    forward(x, padding=None): x [batch, T, d_in] -> [batch, T, d_out]. ``padding``, when
    given, is a bool mask broadcastable to [batch, heads, T, T], True where a key is
    blocked, applied on top of the causal mask. A query that may see no key at all gets
    all-zero weights. Afterwards ``last_weights`` holds the attention weights of the call,
    [batch, heads, T, T] (after softmax, before dropout), detached from the graph.
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        future = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1)
        self.register_buffer("mask", future)
        self.last_weights: torch.Tensor | None = None

    @exercise(
        "05_watch_attention_learn",
        "lesson 4's layer, keeping its weights, with a padding mask",
        forbidden=ATTENTION_CALLS,
    )
    def forward(self, x: torch.Tensor, padding: torch.Tensor | None = None) -> torch.Tensor:
        batch, num_tokens, _ = x.shape
        split = (batch, num_tokens, self.num_heads, self.head_dim)
        queries = self.W_query(x).view(split).transpose(1, 2)
        keys = self.W_key(x).view(split).transpose(1, 2)
        values = self.W_value(x).view(split).transpose(1, 2)
        scores = queries @ keys.transpose(-2, -1) / self.head_dim**0.5
        blocked = self.mask[:num_tokens, :num_tokens]
        if padding is not None:
            blocked = blocked | padding
        scores = scores.masked_fill(blocked, -torch.inf)
        # A query whose every key is blocked (a padding position at the start of a
        # left-padded sequence) has a row of -inf: softmax would give NaN. It gets zeros.
        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
        self.last_weights = weights.detach()
        context = (self.dropout(weights) @ values).transpose(1, 2)
        return self.out_proj(context.reshape(batch, num_tokens, self.d_out))


class TinyTransformer(nn.Module):
    """A decoder-only transformer with attention-only blocks.

    Constructor ``(vocab_size, d_model, context_length, num_heads, num_layers)``. Parameters,
    in this order: ``token_embedding`` (Embedding(vocab_size, d_model)),
    ``position_embedding`` (Embedding(context_length, d_model)), ``blocks`` (a ModuleList of
    ``num_layers`` MultiHeadAttention(d_model, d_model, context_length, 0.0, num_heads)) and
    ``head`` (Linear(d_model, vocab_size)).

    forward(ids, padding=None): ids [batch, T] int64 -> logits [batch, T, vocab_size]. Each
    block adds its output to its input (a residual connection: x = x + block(x, padding)).
    """

    def __init__(
        self, vocab_size: int, d_model: int, context_length: int, num_heads: int, num_layers: int
    ) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(context_length, d_model)
        self.blocks = nn.ModuleList(
            MultiHeadAttention(d_model, d_model, context_length, 0.0, num_heads)
            for _ in range(num_layers)
        )
        self.head = nn.Linear(d_model, vocab_size)

    @exercise(
        "05_watch_attention_learn",
        "embeddings, residual attention blocks, output head",
        forbidden=ATTENTION_CALLS,
        uses=("MultiHeadAttention",),
    )
    def forward(self, ids: torch.Tensor, padding: torch.Tensor | None = None) -> torch.Tensor:
        positions = torch.arange(ids.shape[-1], device=ids.device)
        x = self.token_embedding(ids) + self.position_embedding(positions)
        for block in self.blocks:
            x = x + block(x, padding)
        return self.head(x)


@exercise("05_watch_attention_learn", "one step of next-token training, returns the loss")
def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    inputs: torch.Tensor,
    targets: torch.Tensor,
) -> float:
    """One optimisation step of next-token prediction.

    The loss is the cross-entropy of ``model(inputs)`` (logits [batch, T, vocab]) against
    ``targets`` [batch, T], averaged over every position. Clear the old gradients,
    backpropagate, step the optimiser, and return the loss as a Python float.
    """
    logits = model(inputs)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()
