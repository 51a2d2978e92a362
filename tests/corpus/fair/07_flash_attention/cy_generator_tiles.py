# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "one generator of (start, stop) pairs drives every block loop; the tile mask comes from a helper too"
PATTERNS = ["generator", "shared-helper", "torch-where"]
SAVE = {}
EDITS = [
    (
        "above",
        "online_softmax",
        """
def spans(length, size):
    \"\"\"(start, stop) of each block of `size` along `length` items; the last may be shorter.\"\"\"
    start = 0
    while start < length:
        yield start, min(start + size, length)
        start += size


def future_of(q_span, k_span, shift):
    \"\"\"True where a key of k_span is in the future of a query of q_span.\"\"\"
    rows = torch.arange(*q_span)[:, None]
    cols = torch.arange(*k_span)[None, :]
    return cols > rows + shift
""",
    ),
    (
        "fill",
        "online_softmax",
        """
run_max = torch.full_like(scores[..., 0], -math.inf)
run_sum = torch.zeros_like(scores[..., 0])
for a, b in spans(scores.shape[-1], block):
    new_max = torch.maximum(run_max, scores[..., a:b].amax(-1))
    base = torch.where(new_max > -math.inf, new_max, torch.zeros_like(new_max))
    run_sum = run_sum * torch.exp(run_max - base) + torch.exp(scores[..., a:b] - base[..., None]).sum(-1)
    run_max = new_max
base = torch.where(run_max > -math.inf, run_max, torch.zeros_like(run_max))
return torch.exp(scores - base[..., None]) / torch.where(run_sum > 0, run_sum, torch.ones_like(run_sum))[..., None]
""",
    ),
    (
        "fill",
        "flash_attention",
        """
shift = k.shape[-2] - q.shape[-2]
outs, lses = [], []
for qa, qb in spans(q.shape[-2], block_q):
    qt = q[..., qa:qb, :] / math.sqrt(q.shape[-1])
    mx = torch.full(qt.shape[:-1], -math.inf, dtype=q.dtype)
    sm = torch.zeros(qt.shape[:-1], dtype=q.dtype)
    o = torch.zeros(*qt.shape[:-1], v.shape[-1], dtype=q.dtype)
    for ka, kb in spans(k.shape[-2], block_k):
        s = qt @ k[..., ka:kb, :].transpose(-2, -1)
        if causal:
            s = torch.where(future_of((qa, qb), (ka, kb), shift), -math.inf, s)
        mx2 = torch.maximum(mx, s.amax(-1))
        base = torch.where(mx2 > -math.inf, mx2, torch.zeros_like(mx2))
        e = torch.exp(s - base[..., None])
        f = torch.exp(mx - base)
        sm = sm * f + e.sum(-1)
        o = o * f[..., None] + e @ v[..., ka:kb, :]
        mx = mx2
    seen = sm > 0
    sm1 = torch.where(seen, sm, torch.ones_like(sm))
    outs.append(torch.where(seen[..., None], o / sm1[..., None], torch.zeros_like(o)))
    lses.append(torch.where(seen, mx + torch.log(sm1), torch.full_like(mx, -math.inf)))
return torch.cat(outs, dim=-2), torch.cat(lses, dim=-1)
""",
    ),
    (
        "fill",
        "flash_attention_backward",
        """
shift = k.shape[-2] - q.shape[-2]
c = 1 / math.sqrt(q.shape[-1])
l_ok = torch.where(lse > -math.inf, lse, torch.full_like(lse, math.inf))
D = (grad_out * out).sum(-1)
dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
for qa, qb in spans(q.shape[-2], block_q):
    for ka, kb in spans(k.shape[-2], block_k):
        s = q[..., qa:qb, :] @ k[..., ka:kb, :].transpose(-2, -1) * c
        if causal:
            s = torch.where(future_of((qa, qb), (ka, kb), shift), -math.inf, s)
        p = torch.exp(s - l_ok[..., qa:qb, None])
        g = grad_out[..., qa:qb, :]
        dv[..., ka:kb, :] += p.transpose(-2, -1) @ g
        ds = p * (g @ v[..., ka:kb, :].transpose(-2, -1) - D[..., qa:qb, None])
        dq[..., qa:qb, :] += c * (ds @ k[..., ka:kb, :])
        dk[..., ka:kb, :] += c * (ds.transpose(-2, -1) @ q[..., qa:qb, :])
return dq, dk, dv
""",
    ),
]
