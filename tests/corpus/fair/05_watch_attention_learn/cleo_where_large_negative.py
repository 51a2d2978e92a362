# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "torch.where for every mask, finfo.min instead of -inf, blocked rows zeroed by hand; cross-entropy from logsumexp"
PATTERNS = ["torch-where", "large-negative", "float32-contract", "torch-matmul"]
SAVE = {}
EDITS = [
    (
        "fill",
        "MultiHeadAttention",
        """
b, T, _ = x.shape

def heads(t):
    return t.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)

q, k, v = heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x))
scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
blocked = self.mask[:T, :T]
if padding is not None:
    blocked = torch.logical_or(blocked, padding)
# the most negative float32 instead of -inf: exp() of it is exactly 0, and no NaN
scores = torch.where(blocked, torch.finfo(scores.dtype).min, scores)
weights = torch.softmax(scores, dim=-1)
# a row where every key is blocked came out uniform: it must be all zeros
sees_nothing = blocked.all(dim=-1, keepdim=True)
weights = torch.where(sees_nothing, torch.zeros_like(weights), weights)
self.last_weights = weights.detach()
context = torch.matmul(self.dropout(weights), v)
return self.out_proj(context.transpose(1, 2).flatten(2))
""",
    ),
    (
        "fill",
        "TinyTransformer",
        """
T = ids.size(1)
pos = torch.arange(T, device=ids.device).unsqueeze(0).expand_as(ids)
h = self.token_embedding(ids) + self.position_embedding(pos)
for block in self.blocks:
    h = block(h, padding) + h
return self.head(h)
""",
    ),
    (
        "fill",
        "train_step",
        """
optimizer.zero_grad()
logits = model(inputs).flatten(0, 1)  # [N, vocab]
flat = targets.flatten()
right = logits[torch.arange(flat.numel()), flat]
loss = (torch.logsumexp(logits, dim=-1) - right).mean()  # -log softmax of the right token
loss.backward()
optimizer.step()
return loss.item()
""",
    ),
    (
        "fill",
        "diagonal_score",
        """
T = weights.shape[-1]
query = torch.arange(T).unsqueeze(1)
key = torch.arange(T).unsqueeze(0)
on_line = (query - key) == offset
kept = torch.where(on_line, weights, torch.zeros((), dtype=weights.dtype))
return kept.sum(dim=(-2, -1)) / (T - offset)
""",
    ),
    (
        "fill",
        "first_token_score",
        """
T = weights.shape[-1]
keep = torch.zeros(T, T, dtype=torch.bool)
keep[1:, 0] = True
return weights.masked_fill(~keep, 0.0).sum(dim=(-2, -1)) / (T - 1)
""",
    ),
    (
        "fill",
        "induction_score",
        """
T = weights.shape[-1]
query = torch.arange(T).unsqueeze(1)
key = torch.arange(T).unsqueeze(0)
on_line = (query >= period) & (key == query - period + 1)
kept = torch.where(on_line, weights, torch.zeros((), dtype=weights.dtype))
return kept.sum(dim=(-2, -1)) / (T - period)
""",
    ),
    (
        "fill",
        "padding_causal_mask",
        """
T = num_tokens
query = torch.arange(T).view(1, 1, T, 1)
key = torch.arange(T).view(1, 1, 1, T)
first_real = (T - lengths).view(-1, 1, 1, 1)
return torch.where(key > query, torch.tensor(True), key < first_real)
""",
    ),
    (
        "fill",
        "softmax_jacobian_norm",
        """
# |J|^2 = sum_i s_i^2 (1 - s_i)^2 + sum_{i != j} s_i^2 s_j^2
#       = sum s^2 - 2 sum s^3 + (sum s^2)^2, in float64: the terms cancel when s is one-hot
s = torch.softmax(scores.to(torch.float64), dim=-1)
sq = (s * s).sum(dim=-1)
squared_norm = sq - 2 * (s**3).sum(dim=-1) + sq * sq
return squared_norm.clamp(min=0).sqrt().to(scores.dtype)
""",
    ),
    (
        "fill",
        "permutation_gap",
        """
a = layer(x.index_select(1, perm))
b = layer(x).index_select(1, perm)
return torch.max(torch.abs(a - b)).item()
""",
    ),
]
