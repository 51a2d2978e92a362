# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "a .py download; a table of masks built in a for loop, an if at top level choosing -inf"
PATTERNS = ["py-export", "block-globals", "torch-matmul", "renamed-file"]
SAVE = {"file": "cyrus-lesson3-03_causal_attention.py", "editor": "py"}
EDITS = [
    (
        "below",
        "setup",
        """
MASK_CACHE = {}
for size in (1, 2, 4, 8):
    MASK_CACHE[size] = torch.ones(size, size, dtype=torch.bool).triu(1)

if torch.finfo(torch.float32).max > 0:
    BLOCKED = float("-inf")
else:
    BLOCKED = -1e9
""",
    ),
    (
        "fill",
        "causal_mask",
        """
if num_tokens in MASK_CACHE:
    return MASK_CACHE[num_tokens].clone()
return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)
""",
    ),
    (
        "fill",
        "apply_causal_mask",
        """
return scores.masked_fill(causal_mask(scores.shape[-1]), BLOCKED)
""",
    ),
    (
        "fill",
        "ScaledDotProductAttention",
        """
scores = torch.matmul(q, k.transpose(-2, -1)).div(k.shape[-1] ** 0.5)
if mask is not None:
    scores = scores.masked_fill(mask, BLOCKED)
weights = torch.softmax(scores, dim=-1)
if mask is not None:
    weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
weights = self.dropout(weights)
return torch.matmul(weights, v), weights
""",
    ),
    (
        "fill",
        "CausalAttention",
        """
T = x.shape[-2]
out, _weights = self.attention(self.W_query(x), self.W_key(x), self.W_value(x), mask=self.mask[:T, :T])
return out
""",
    ),
]
