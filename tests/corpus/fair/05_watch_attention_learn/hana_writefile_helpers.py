# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "her attention step and score reader live in a module written by %%writefile; torch.func for the Jacobian; a CrossEntropyLoss object"
PATTERNS = ["writefile-helper", "magics", "lookalike-names"]
SAVE = {}
EDITS = [
    (
        "above",
        "MultiHeadAttention",
        '''
%%writefile hana_attention_tools.py
import math

import torch


def scaled_dot_product_attention(q, k, v, blocked, dropout):
    """My attention step (not torch's): the context, and the weights before dropout."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(blocked, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    weights = torch.nan_to_num(weights, nan=0.0)  # rows with nothing to look at
    return dropout(weights) @ v, weights


def mean_over(weights, queries, keys):
    """Mean of weights[..., queries[n], keys[n]] over n."""
    return weights[..., queries, keys].mean(dim=-1)
''',
    ),
    ("above", "MultiHeadAttention", "import hana_attention_tools as tools"),
    (
        "fill",
        "MultiHeadAttention",
        """
b, T, _ = x.shape
q, k, v = (
    lin(x).view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
    for lin in (self.W_query, self.W_key, self.W_value)
)
blocked = self.mask[:T, :T] if padding is None else torch.logical_or(self.mask[:T, :T], padding)
context, weights = tools.scaled_dot_product_attention(q, k, v, blocked, self.dropout)
self.last_weights = weights.detach()
return self.out_proj(context.transpose(1, 2).reshape(b, T, self.d_out))
""",
    ),
    (
        "fill",
        "TinyTransformer",
        """
where = torch.arange(ids.shape[-1], device=ids.device)
x = torch.add(self.token_embedding(ids), self.position_embedding(where))
for block in self.blocks:
    x = torch.add(x, block(x, padding))
return self.head(x)
""",
    ),
    (
        "fill",
        "train_step",
        """
criterion = nn.CrossEntropyLoss()  # reduction="mean": over every position
optimizer.zero_grad()
scores = model(inputs)
loss = criterion(scores.flatten(end_dim=-2), targets.flatten())
loss.backward()
optimizer.step()
return loss.item()
""",
    ),
    (
        "fill",
        "diagonal_score",
        """
i = torch.arange(offset, weights.shape[-1])
return tools.mean_over(weights, i, i - offset)
""",
    ),
    (
        "fill",
        "first_token_score",
        """
rows = torch.arange(1, weights.shape[-1])
return tools.mean_over(weights, rows, torch.zeros_like(rows))
""",
    ),
    (
        "fill",
        "induction_score",
        """
i = torch.arange(period, weights.shape[-1])
return tools.mean_over(weights, i, i - (period - 1))
""",
    ),
    (
        "fill",
        "padding_causal_mask",
        """
import numpy as np

n = num_tokens
future = np.triu(np.ones((n, n), dtype=bool), k=1)
starts = n - lengths.numpy()
padded = np.arange(n)[None, :] < starts[:, None]  # [batch, key]
mask = future[None, None, :, :] | padded[:, None, None, :]
return torch.from_numpy(mask)
""",
    ),
    (
        "fill",
        "softmax_jacobian_norm",
        """
n = scores.shape[-1]
flat = scores.reshape(-1, n)
jacobians = torch.func.vmap(torch.func.jacrev(lambda r: torch.softmax(r, dim=-1)))(flat)
return torch.linalg.matrix_norm(jacobians).reshape(scores.shape[:-1])
""",
    ),
    (
        "fill",
        "permutation_gap",
        """
a = layer(x[:, perm]).detach()
b = layer(x).detach()[:, perm]
return float(torch.amax(torch.abs(a - b)))
""",
    ),
]
