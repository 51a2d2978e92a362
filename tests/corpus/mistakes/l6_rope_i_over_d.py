# assignment: 06_attention_at_inference
# expect: rope=theta_exponent
def rope(x, positions, theta=10000.0):
    d = x.shape[-1]
    h = d // 2
    i = torch.arange(h, dtype=torch.float64)
    inv_freq = theta ** (-i / d)
    ang = torch.einsum("t,f->tf", positions.double(), inv_freq)
    c, s = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat((x1 * c - x2 * s, x1 * s + x2 * c), -1)
