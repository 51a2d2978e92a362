# assignment: 07_flash_attention
# expect: flash_attention=materialised
def flash_attention(q, k, v, block_q, block_k, causal=False):
    # computes every score up front with one einsum, then walks tiles of that matrix
    t_q, t_k = q.shape[-2], k.shape[-2]
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    if causal:
        blocked = torch.ones(t_q, t_k, dtype=torch.bool).triu(t_k - t_q + 1)
        scores = scores.masked_fill(blocked, -math.inf)
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    lse = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype)
    for i in range(0, t_q, block_q):
        rows = scores[..., i : i + block_q, :]
        m = torch.full(rows.shape[:-1], -math.inf, dtype=q.dtype)
        lsum = torch.zeros_like(m)
        acc = torch.zeros(*rows.shape[:-1], v.shape[-1], dtype=q.dtype)
        for j in range(0, t_k, block_k):
            s = rows[..., j : j + block_k]
            m_new = torch.maximum(m, s.amax(-1))
            c = torch.where(m_new == -math.inf, torch.zeros_like(m_new), m_new)
            p = torch.exp(s - c.unsqueeze(-1))
            f = torch.exp(m - c)
            lsum = lsum * f + p.sum(-1)
            acc = acc * f.unsqueeze(-1) + p @ v[..., j : j + block_k, :]
            m = m_new
        nz = lsum > 0
        den = torch.where(nz, lsum, torch.ones_like(lsum))
        out[..., i : i + block_q, :] = torch.where(nz.unsqueeze(-1), acc / den.unsqueeze(-1), 0.0)
        lse[..., i : i + block_q] = torch.where(nz, m + den.log(), -math.inf)
    return out, lse
