# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "Colab copy: gather for the head scores, autograd's jacobian for softmax, nll_loss on log_softmax; %%time on the training"
PATTERNS = ["colab-save", "renamed-file", "magics", "display"]
SAVE = {"file": "Copy of 05_watch_attention_learn.ipynb", "editor": "colab"}
EDITS = [
    ("below", "setup", "%matplotlib inline\nfrom IPython.display import display"),
    (
        "fill",
        "MultiHeadAttention",
        """
batch, num_tokens, _ = x.shape
qkv = [proj(x).reshape(batch, num_tokens, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
       for proj in (self.W_query, self.W_key, self.W_value)]
queries, keys, values = qkv
attn_scores = queries @ keys.permute(0, 1, 3, 2) / self.head_dim ** 0.5
mask_bool = self.mask[:num_tokens, :num_tokens]
if padding is not None:
    mask_bool = mask_bool.logical_or(padding)
attn_scores = attn_scores.masked_fill(mask_bool, float("-inf"))
attn_weights = attn_scores.softmax(dim=-1)
attn_weights = attn_weights.masked_fill(attn_weights.isnan(), 0.0)
self.last_weights = attn_weights.clone().detach()
context_vec = self.dropout(attn_weights) @ values
context_vec = context_vec.permute(0, 2, 1, 3).reshape(batch, num_tokens, self.d_out)
return self.out_proj(context_vec)
""",
    ),
    (
        "fill",
        "TinyTransformer",
        """
batch, seq_len = ids.shape
tok = F.embedding(ids, self.token_embedding.weight)
pos = self.position_embedding(torch.arange(seq_len, device=ids.device)).unsqueeze(0)
x = tok + pos
for block in self.blocks:
    x = x + block(x, padding)
logits = self.head(x)
return logits
""",
    ),
    (
        "fill",
        "train_step",
        """
optimizer.zero_grad(set_to_none=True)
logits = model(inputs)
log_probs = F.log_softmax(logits, dim=-1)
loss = F.nll_loss(log_probs.view(-1, log_probs.size(-1)), targets.reshape(-1))
loss.backward()
optimizer.step()
return loss.detach().item()
""",
    ),
    (
        "fill",
        "diagonal_score",
        """
T = weights.size(-1)
rows = weights[..., offset:, :]  # the queries that have a key offset steps back
index = (torch.arange(offset, T, device=weights.device) - offset).unsqueeze(-1)
index = index.expand(*rows.shape[:-1], 1)
return rows.gather(-1, index).squeeze(-1).mean(-1)
""",
    ),
    (
        "fill",
        "first_token_score",
        """
return weights[..., 1:, :1].mean(dim=(-2, -1))
""",
    ),
    (
        "fill",
        "induction_score",
        """
T = weights.size(-1)
rows = weights[..., period:, :]
index = (torch.arange(period, T, device=weights.device) - period + 1).unsqueeze(-1)
index = index.expand(*rows.shape[:-1], 1)
return rows.gather(-1, index).squeeze(-1).mean(-1)
""",
    ),
    (
        "fill",
        "padding_causal_mask",
        """
idx = torch.arange(num_tokens)
causal = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)
pad_start = num_tokens - lengths
key_is_pad = idx.unsqueeze(0) < pad_start.unsqueeze(1)  # [batch, T]
return causal.unsqueeze(0).unsqueeze(0) | key_is_pad.unsqueeze(1).unsqueeze(2)
""",
    ),
    (
        "fill",
        "softmax_jacobian_norm",
        """
n = scores.shape[-1]
rows = scores.detach().reshape(-1, n)
norms = []
for row in rows:
    J = torch.autograd.functional.jacobian(lambda r: torch.softmax(r, dim=-1), row)
    norms.append(torch.linalg.norm(J))  # Frobenius for a matrix
return torch.stack(norms).reshape(scores.shape[:-1]).to(scores.dtype)
""",
    ),
    (
        "fill",
        "permutation_gap",
        """
with torch.no_grad():
    gap = torch.dist(layer(x[:, perm]), layer(x)[:, perm], p=float("inf"))
return float(gap)
""",
    ),
    (
        "edit",
        "training",
        ("history = lesson.train(", "%%time\nhistory = lesson.train("),
    ),
    (
        "end",
        None,
        """
model.eval()
with torch.no_grad():
    model(sample)
table = []
for layer, block in enumerate(model.blocks, start=1):
    for head, w in enumerate(block.last_weights[0], start=1):
        table.append((layer, head, round(float(diagonal_score(w, 1)), 2),
                      round(float(induction_score(w, 11)), 2)))
display(table)
""",
    ),
]
