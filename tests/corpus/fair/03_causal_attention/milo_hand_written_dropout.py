STORY = "writes dropout by hand (a Bernoulli keep-mask from torch.rand, scaled by 1 / (1 - p))"
PATTERNS = ["torch-where", "torch-matmul"]
SAVE = {}
EDITS = [
    (
        "fill",
        "causal_mask",
        """
positions = torch.arange(num_tokens)
return positions[None, :] > positions[:, None]
""",
    ),
    (
        "fill",
        "apply_causal_mask",
        """
blocked = causal_mask(scores.shape[-1]).to(scores.device)
return torch.where(blocked, torch.full_like(scores, float("-inf")), scores)
""",
    ),
    (
        "fill",
        "ScaledDotProductAttention",
        """
scores = torch.matmul(q, k.transpose(-2, -1)) / (k.shape[-1] ** 0.5)
if mask is not None:
    scores = torch.where(mask, torch.full_like(scores, float("-inf")), scores)
top = scores.amax(dim=-1, keepdim=True)
top = torch.where(torch.isinf(top), torch.zeros_like(top), top)
e = torch.exp(scores - top)
total = e.sum(dim=-1, keepdim=True)
weights = torch.where(total > 0, e / total.clamp_min(torch.finfo(e.dtype).tiny), 0.0)
p = self.dropout.p
if self.training and p > 0:
    # My own dropout: keep each weight with probability 1 - p, rescale the kept ones.
    keep = (torch.rand_like(weights) >= p).to(weights.dtype)
    weights = weights * keep / (1.0 - p)
return torch.matmul(weights, v), weights
""",
    ),
    (
        "fill",
        "CausalAttention",
        """
T = x.shape[-2]
q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
context, _ = self.attention(q, k, v, mask=self.mask[:T, :T])
return context
""",
    ),
]
