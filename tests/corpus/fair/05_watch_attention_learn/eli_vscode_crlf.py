# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "VS Code on Windows (CRLF), renamed; asserts and a warning in her functions, prints in the slow ones; model.zero_grad()"
PATTERNS = [
    "vscode-save",
    "crlf",
    "renamed-file",
    "assert-in-function",
    "warning-in-function",
    "print-in-function",
]
SAVE = {"file": "eli_lesson5_final.ipynb", "editor": "vscode", "crlf": True}
EDITS = [
    ("below", "setup", "import warnings"),
    (
        "fill",
        "MultiHeadAttention",
        """
assert x.dim() == 3, "x should be [batch, T, d_in]"
b, T, _ = x.shape
assert T <= self.mask.shape[0], "sequence longer than context_length"
q = self.W_query(x).view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
k = self.W_key(x).view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
v = self.W_value(x).view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
scores = (q @ k.transpose(-2, -1)) * self.head_dim ** -0.5
mask = self.mask[:T, :T]
if padding is not None:
    assert padding.dtype == torch.bool, "padding must be a bool mask"
    mask = mask | padding
scores = scores.masked_fill(mask, float("-inf"))
w = torch.nan_to_num(torch.softmax(scores, dim=-1))
assert w.shape == (b, self.num_heads, T, T)
self.last_weights = w.detach()
out = (self.dropout(w) @ v).transpose(1, 2).contiguous().view(b, T, self.d_out)
return self.out_proj(out)
""",
    ),
    (
        "fill",
        "TinyTransformer",
        """
assert ids.dtype == torch.long
T = ids.shape[1]
if T > self.position_embedding.num_embeddings:
    warnings.warn("more tokens than positions")
x = self.token_embedding(ids)
x = x + self.position_embedding(torch.arange(T))
for block in self.blocks:
    x = x + block(x, padding=padding)
return self.head(x)
""",
    ),
    (
        "fill",
        "train_step",
        """
model.zero_grad()
logits = model(inputs)
B, T, V = logits.shape
loss = F.cross_entropy(logits.reshape(B * T, V), targets.reshape(B * T), reduction="mean")
loss.backward()
optimizer.step()
return loss.item()
""",
    ),
    (
        "fill",
        "diagonal_score",
        """
assert 0 <= offset < weights.shape[-1]
line = torch.diagonal(weights, -offset, -2, -1)  # [..., T - offset]
return line.sum(-1) / line.shape[-1]
""",
    ),
    (
        "fill",
        "first_token_score",
        """
assert weights.shape[-1] >= 2
col = weights[..., :, 0]
return (col.sum(-1) - col[..., 0]) / (col.shape[-1] - 1)
""",
    ),
    (
        "fill",
        "induction_score",
        """
assert 1 <= period < weights.shape[-1]
line = torch.diagonal(weights, offset=1 - period, dim1=-2, dim2=-1)  # queries period-1 ...
return line[..., 1:].mean(dim=-1)  # ... but query period-1 has no earlier occurrence
""",
    ),
    (
        "fill",
        "padding_causal_mask",
        """
if int(lengths.min()) < 1:
    warnings.warn("a sequence with no real token: every row is blocked")
T = num_tokens
future = torch.ones(T, T, dtype=torch.bool).triu(1)
keys = torch.arange(T).expand(len(lengths), T)
pad = keys < (T - lengths).unsqueeze(-1)
mask = future.expand(len(lengths), 1, T, T) | pad.view(-1, 1, 1, T)
print("blocked per sequence:", mask.sum(dim=(1, 2, 3)).tolist())
return mask
""",
    ),
    (
        "fill",
        "softmax_jacobian_norm",
        """
s = torch.softmax(scores, dim=-1)
J = torch.diag_embed(s) - s.unsqueeze(-1) * s.unsqueeze(-2)
return torch.linalg.matrix_norm(J, ord="fro")
""",
    ),
    (
        "fill",
        "permutation_gap",
        """
assert sorted(perm.tolist()) == list(range(x.shape[1])), "perm is not a permutation"
first = layer(x[:, perm])
second = layer(x)[:, perm]
gap = (first - second).abs().amax().item()
print(f"permutation gap: {gap:.3g}")
return gap
""",
    ),
]
