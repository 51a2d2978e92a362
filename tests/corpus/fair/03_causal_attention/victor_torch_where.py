STORY = "torch.where and a large negative number instead of -inf, with a guard for empty rows"
PATTERNS = ["torch-where", "large-negative"]
SAVE = {}
EDITS = [
    (
        "fill",
        "causal_mask",
        """
idx = torch.arange(num_tokens)
return idx.unsqueeze(0) > idx.unsqueeze(1)
""",
    ),
    (
        "fill",
        "apply_causal_mask",
        """
blocked = causal_mask(scores.size(-1))
return torch.where(blocked, torch.full_like(scores, -torch.inf), scores)
""",
    ),
    (
        "fill",
        "ScaledDotProductAttention",
        """
scores = torch.matmul(q, k.transpose(-1, -2)) * k.size(-1) ** -0.5
if mask is None:
    weights = torch.softmax(scores, dim=-1)
else:
    scores = torch.where(mask, torch.tensor(-1e9, dtype=scores.dtype), scores)
    weights = torch.softmax(scores, dim=-1)
    nothing_visible = mask.all(dim=-1, keepdim=True)
    weights = torch.where(nothing_visible, torch.zeros_like(weights), weights)
weights = self.dropout(weights)
return torch.matmul(weights, v), weights
""",
    ),
    (
        "fill",
        "CausalAttention",
        """
n = x.size(-2)
out, _ = self.attention(self.W_query(x), self.W_key(x), self.W_value(x), mask=self.mask[:n, :n])
return out
""",
    ),
]
