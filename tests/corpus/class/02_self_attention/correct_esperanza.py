STORY = (
    "loops wherever she could: a running maximum in softmax, one sequence at a time in the layers"
)
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
n = x.shape[dim]
running = x.select(dim, 0)
for i in range(1, n):
    running = torch.maximum(running, x.select(dim, i))
running = running.unsqueeze(dim)
running = running.masked_fill(~torch.isfinite(running), 0)
terms = torch.exp(x - running)
total = terms.select(dim, 0)
for i in range(1, n):
    total = total + terms.select(dim, i)
total = total.unsqueeze(dim)
return terms / torch.where(total > 0, total, torch.ones_like(total))
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
ntok, n_feat = inputs.shape
dot_sums = torch.zeros(ntok, ntok, dtype=inputs.dtype)
for i in range(ntok):
    for j in range(ntok):
        for f in range(n_feat):
            dot_sums[i, j] = dot_sums[i, j] + inputs[i, f] * inputs[j, f]
row_weights = torch.zeros(ntok, ntok, dtype=inputs.dtype)
for i in range(ntok):
    row_weights[i] = softmax(dot_sums[i], dim=0)
ctx_rows = torch.zeros(ntok, n_feat, dtype=inputs.dtype)
for i in range(ntok):
    for j in range(ntok):
        ctx_rows[i] = ctx_rows[i] + row_weights[i, j] * inputs[j]
return ctx_rows, row_weights
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
keys_t = inputs.transpose(-1, -2)
sims = inputs.matmul(keys_t)
probs = softmax(sims, dim=sims.dim() - 1)
return probs.matmul(inputs), probs
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
single = x.dim() == 2
batch = x.unsqueeze(0) if single else x
outs = []
for seq in batch:
    q = seq @ self.W_query
    k = seq @ self.W_key
    v = seq @ self.W_value
    outs.append(softmax(q @ k.t() / k.shape[1] ** 0.5, dim=1) @ v)
result = torch.stack(outs)
return result[0] if single else result
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
was_2d = x.ndim == 2
xs = x[None] if was_2d else x
per_seq = []
for sequence in xs:
    qq, kk, vv = self.W_query(sequence), self.W_key(sequence), self.W_value(sequence)
    per_seq.append(softmax(qq @ kk.t() / self.W_query.out_features ** 0.5, dim=-1) @ vv)
stacked = torch.stack(per_seq)
return stacked.squeeze(0) if was_2d else stacked
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
for role in ("query", "key", "value"):
    if getattr(v2, "W_" + role).bias is not None:
        raise ValueError("v2 has a bias in its " + role + " projection")
for role in ("query", "key", "value"):
    src = getattr(v2, "W_" + role).weight
    dst = getattr(v1, "W_" + role)
    with torch.no_grad():
        for c in range(dst.shape[1]):
            dst[:, c] = src[c]
return v1
""",
    ),
]
