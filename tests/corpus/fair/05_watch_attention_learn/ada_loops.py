STORY = "loops everywhere: one head at a time, one query at a time, one Jacobian per row"
PATTERNS = ["explicit-loops", "question-comment"]
SAVE = {}
EDITS = [
    (
        "fill",
        "MultiHeadAttention",
        """
b, T, _ = x.shape
blocked = self.mask[:T, :T]
if padding is not None:
    blocked = blocked | padding
blocked = blocked.expand(b, self.num_heads, T, T)
q_all, k_all, v_all = self.W_query(x), self.W_key(x), self.W_value(x)
per_head = []
for h in range(self.num_heads):
    cols = slice(h * self.head_dim, (h + 1) * self.head_dim)
    scores = q_all[:, :, cols] @ k_all[:, :, cols].transpose(1, 2) / math.sqrt(self.head_dim)
    scores = scores.masked_fill(blocked[:, h], float("-inf"))
    w = torch.softmax(scores, dim=-1)
    per_head.append(torch.nan_to_num(w, nan=0.0))  # a row with no key: 0/0 -> 0
weights = torch.stack(per_head, dim=1)  # [b, heads, T, T]
self.last_weights = weights.detach()
weights = self.dropout(weights)
contexts = []
for h in range(self.num_heads):
    cols = slice(h * self.head_dim, (h + 1) * self.head_dim)
    contexts.append(weights[:, h] @ v_all[:, :, cols])
return self.out_proj(torch.cat(contexts, dim=-1))
""",
    ),
    (
        "fill",
        "TinyTransformer",
        """
T = ids.shape[1]
x = self.token_embedding(ids) + self.position_embedding(torch.arange(T, device=ids.device))
for layer in range(len(self.blocks)):
    x = x + self.blocks[layer](x, padding)
return self.head(x)
""",
    ),
    (
        "fill",
        "train_step",
        """
optimizer.zero_grad()
logits = model(inputs)
batch, T = targets.shape
total = 0.0
for t in range(T):  # the sum over every position, then one division: same as the mean?
    total = total + F.cross_entropy(logits[:, t, :], targets[:, t], reduction="sum")
loss = total / (batch * T)
loss.backward()
optimizer.step()
return float(loss)
""",
    ),
    (
        "fill",
        "diagonal_score",
        """
T = weights.shape[-1]
total = torch.zeros(weights.shape[:-2], dtype=weights.dtype, device=weights.device)
for i in range(offset, T):
    total = total + weights[..., i, i - offset]
return total / (T - offset)
""",
    ),
    (
        "fill",
        "first_token_score",
        """
T = weights.shape[-1]
total = weights[..., 1, 0].clone()
for i in range(2, T):
    total += weights[..., i, 0]
return total / (T - 1)
""",
    ),
    (
        "fill",
        "induction_score",
        """
picked = []
for i in range(period, weights.shape[-1]):
    picked.append(weights[..., i, i - period + 1])
return torch.stack(picked, dim=-1).mean(dim=-1)
""",
    ),
    (
        "fill",
        "padding_causal_mask",
        """
batch = lengths.shape[0]
mask = torch.zeros(batch, 1, num_tokens, num_tokens, dtype=torch.bool)
for b in range(batch):
    first_real = num_tokens - int(lengths[b])
    for i in range(num_tokens):
        for j in range(num_tokens):
            if j > i or j < first_real:
                mask[b, 0, i, j] = True
return mask
""",
    ),
    (
        "fill",
        "softmax_jacobian_norm",
        """
s = torch.softmax(scores, dim=-1)
n = s.shape[-1]
rows = s.reshape(-1, n)
norms = torch.empty(rows.shape[0], dtype=scores.dtype)
for r in range(rows.shape[0]):
    J = torch.diag(rows[r]) - torch.outer(rows[r], rows[r])
    norms[r] = torch.sqrt((J * J).sum())
return norms.reshape(s.shape[:-1])
""",
    ),
    (
        "fill",
        "permutation_gap",
        """
with torch.no_grad():
    shuffled_then_layer = layer(x[:, perm])
    layer_then_shuffled = layer(x)
gap = 0.0
for t in range(len(perm)):
    diff = shuffled_then_layer[:, t] - layer_then_shuffled[:, int(perm[t])]
    gap = max(gap, diff.abs().max().item())
return gap
""",
    ),
]
