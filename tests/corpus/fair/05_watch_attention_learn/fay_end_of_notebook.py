# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "rewrote TinyTransformer with a positions buffer; left the measuring stubs and wrote them all at the end, deleting two demos"
PATTERNS = ["answer-at-end", "cells-deleted-or-edited", "edited-constructor"]
SAVE = {}
EDITS = [
    (
        "fill",
        "MultiHeadAttention",
        """
n, t, _ = x.shape
split = lambda y: y.unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
att = q @ k.mT / math.sqrt(k.shape[-1])
blocked = self.mask[:t, :t] if padding is None else padding | self.mask[:t, :t]
att = att.masked_fill(blocked, -math.inf).softmax(-1)
att = torch.where(torch.isnan(att), torch.zeros_like(att), att)
self.last_weights = att.detach()
y = self.dropout(att) @ v
return self.out_proj(y.transpose(1, 2).flatten(-2))
""",
    ),
    (
        "replace",
        "TinyTransformer",
        '''
class TinyTransformer(nn.Module):
    """Token + position embeddings, residual attention blocks, a linear head."""

    def __init__(self, vocab_size, d_model, context_length, num_heads, num_layers):
        super().__init__()
        self.context_length = context_length
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(context_length, d_model)
        blocks = []
        for _ in range(num_layers):
            blocks.append(MultiHeadAttention(d_model, d_model, context_length, 0.0, num_heads))
        self.blocks = nn.ModuleList(blocks)
        self.head = nn.Linear(d_model, vocab_size)
        self.register_buffer("positions", torch.arange(context_length), persistent=False)

    def forward(self, ids, padding=None):
        T = ids.shape[1]
        x = self.token_embedding(ids) + self.position_embedding(self.positions[:T])
        for block in self.blocks:
            x = x + block(x, padding)
        return self.head(x)
''',
    ),
    (
        "fill",
        "train_step",
        """
optimizer.zero_grad()
log_p = model(inputs).log_softmax(dim=-1)
picked = log_p.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # [batch, T]
loss = -picked.mean()
loss.backward()
optimizer.step()
return loss.item()
""",
    ),
    ("delete", "layer head  current previous", None),
    ("delete", "attention after positions: gap", None),
    (
        "replace",
        "lesson.check(diagonal_score)",
        "# diagonal_score etc.: see the end of the notebook",
    ),
    (
        "end",
        None,
        """
def diagonal_score(weights, offset):
    T = weights.shape[-1]
    i = torch.arange(offset, T)
    return weights[..., i, i - offset].mean(-1)


def first_token_score(weights):
    return weights[..., 1:, 0].sum(-1) / (weights.shape[-1] - 1)


def induction_score(weights, period):
    T = weights.shape[-1]
    i = torch.arange(period, T)
    return weights[..., i, i + 1 - period].mean(-1)


def padding_causal_mask(lengths, num_tokens):
    j = torch.arange(num_tokens)
    i = j.view(-1, 1)
    start = (num_tokens - lengths).view(-1, 1, 1, 1)
    return (j > i) | (j < start)


def softmax_jacobian_norm(scores):
    s = torch.softmax(scores, dim=-1)
    eye = torch.eye(s.shape[-1], dtype=s.dtype)
    J = eye * s.unsqueeze(-1) - s.unsqueeze(-1) * s.unsqueeze(-2)  # diag(s) - s s^T
    return J.pow(2).sum(dim=(-2, -1)).sqrt()


def permutation_gap(layer, x, perm):
    out_perm = layer(x[:, perm])
    perm_out = layer(x)[:, perm]
    return (out_perm - perm_out).abs().max().item()
""",
    ),
    (
        "end",
        None,
        """
for f in (diagonal_score, first_token_score, induction_score, padding_causal_mask,
          softmax_jacobian_norm, permutation_gap):
    lesson.check(f)
""",
    ),
]
