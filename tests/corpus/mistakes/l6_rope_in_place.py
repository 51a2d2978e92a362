# assignment: 06_attention_at_inference
# expect: none
def rope(x, positions, theta=10000.0):
    h = x.shape[-1] // 2
    inv = 1.0 / theta ** (torch.arange(0, x.shape[-1], 2, dtype=torch.float64) / x.shape[-1])
    ang = positions.double()[:, None] * inv
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    a = x[..., :h].clone()
    b = x[..., h:].clone()
    x[..., :h] = a * cos - b * sin
    x[..., h:] = a * sin + b * cos
    return x
