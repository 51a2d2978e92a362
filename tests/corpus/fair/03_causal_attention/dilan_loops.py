STORY = "loops to build the mask and to fill the future; keeps the scores' dtype"
PATTERNS = ["explicit-loops", "float32-contract"]
SAVE = {}
EDITS = [
    (
        "fill",
        "causal_mask",
        """
mask = torch.zeros((num_tokens, num_tokens), dtype=torch.bool)
for i in range(num_tokens):
    mask[i, i + 1 :] = True
return mask
""",
    ),
    (
        "fill",
        "apply_causal_mask",
        """
out = scores.clone()
T = scores.shape[-1]
for i in range(T):
    for j in range(i + 1, T):
        out[..., i, j] = float("-inf")
assert out.dtype == scores.dtype
return out
""",
    ),
    (
        "fill",
        "ScaledDotProductAttention",
        """
scale = 1.0 / k.shape[-1] ** 0.5
scores = (q @ k.transpose(-2, -1)) * scale
if mask is not None:
    scores = scores.masked_fill(mask, float("-inf"))
weights = torch.softmax(scores, dim=-1)
weights = torch.where(torch.isnan(weights), torch.zeros((), dtype=weights.dtype), weights)
weights = self.dropout(weights)
return weights @ v, weights
""",
    ),
    (
        "fill",
        "CausalAttention",
        """
T = x.shape[-2]
keys, queries, values = self.W_key(x), self.W_query(x), self.W_value(x)
context, _ = self.attention(queries, keys, values, self.mask[:T, :T])
return context
""",
    ),
]
