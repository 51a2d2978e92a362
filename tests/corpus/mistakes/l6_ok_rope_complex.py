# assignment: 06_attention_at_inference
# expect: correct
def rope(x, positions, theta=10000.0):
    # each pair (x[i], x[i + h]) is the complex number x[i] + 1j * x[i + h]: rotating it by an
    # angle is multiplying it by exp(1j * angle)
    h = x.shape[-1] // 2
    real = torch.float64 if x.dtype == torch.float64 else torch.float32
    exponent = torch.arange(h, dtype=torch.float64) * (-2.0 / x.shape[-1])
    angles = positions.to(torch.float64)[:, None] * theta**exponent
    turn = torch.polar(torch.ones_like(angles), angles)
    z = torch.complex(x[..., :h].to(real), x[..., h:].to(real)) * turn
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)
