# assignment: 06_attention_at_inference
# expect: rope=rotated_backwards
def rope(x, positions, theta=10000.0):
    half = x.shape[-1] // 2
    freq = torch.pow(theta, -torch.arange(0, 2 * half, 2, dtype=torch.float64) / (2 * half))
    angle = positions.double().unsqueeze(-1) * freq
    angle = torch.cat([angle, angle], dim=-1).to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    rot = torch.cat([x2, -x1], dim=-1)
    return x * angle.cos() + rot * angle.sin()
