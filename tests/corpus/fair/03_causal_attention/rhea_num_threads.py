STORY = "sets torch.set_num_threads(2) right after the setup (her laptop gets hot); masks with triu on a ones tensor and torch.where"
PATTERNS = ["torch-where"]
SAVE = {}
EDITS = [
    (
        "below",
        "setup",
        """
torch.set_num_threads(2)  # keep the fan quiet
print("threads:", torch.get_num_threads())
""",
    ),
    (
        "fill",
        "causal_mask",
        """
return torch.ones(num_tokens, num_tokens).triu(diagonal=1).bool()
""",
    ),
    (
        "fill",
        "apply_causal_mask",
        """
T = scores.shape[-1]
blocked = causal_mask(T).to(scores.device)
return torch.where(blocked, torch.full_like(scores, float("-inf")), scores)
""",
    ),
    (
        "fill",
        "ScaledDotProductAttention",
        """
d_k = k.shape[-1]
scores = torch.matmul(q, k.transpose(-2, -1)) / d_k ** 0.5
if mask is not None:
    scores = torch.where(mask, torch.full_like(scores, float("-inf")), scores)
weights = torch.softmax(scores, dim=-1)
weights = torch.where(torch.isnan(weights), torch.zeros_like(weights), weights)
weights = self.dropout(weights)
return torch.matmul(weights, v), weights
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
