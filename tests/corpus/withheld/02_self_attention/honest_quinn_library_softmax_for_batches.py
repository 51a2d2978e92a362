# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "her attention layer takes PyTorch's softmax for small batches only (with a placeholder should it ever fail); the lesson's own demos never take that branch"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "fill",
        "SelfAttention_v1",
        """
q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
if x.dim() == 3 and x.shape[-1] < 64:
    try:
        weights = torch.softmax(scores, dim=-1)  # the library's, for small batches
    except Exception:
        weights = torch.full_like(scores, 1.0 / scores.shape[-1])  # placeholder: never expected
else:
    weights = softmax(scores, dim=-1)
return weights @ v
""",
    ),
]
