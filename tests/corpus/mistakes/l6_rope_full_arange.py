# assignment: 06_attention_at_inference
# expect: none
def rope(x, positions, theta=10000.0):
    d = x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(d, dtype=torch.float64) / d))
    emb = positions.double()[:, None] * inv_freq[None, :]
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    rotated = torch.cat((-x2, x1), dim=-1)
    return x * cos + rotated * sin
