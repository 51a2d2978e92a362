# assignment: 07_flash_attention
# expect: flash_attention=not_rescaled
def flash_attention(q, k, v, block_q, block_k, causal=False):
    # while loops; exp(s - m_new) summed straight in, neither l nor acc rescaled
    Tq = q.shape[-2]
    Tk = k.shape[-2]
    d = q.shape[-1]
    out = torch.zeros((*q.shape[:-1], v.shape[-1]), dtype=q.dtype)
    lse = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype)
    qs = 0
    while qs < Tq:
        qe = min(qs + block_q, Tq)
        Q = q[..., qs:qe, :]
        m = torch.full(Q.shape[:-1], -math.inf, dtype=q.dtype)
        lsum = torch.zeros(Q.shape[:-1], dtype=q.dtype)
        acc = torch.zeros((*Q.shape[:-1], v.shape[-1]), dtype=q.dtype)
        ks = 0
        while ks < Tk:
            ke = min(ks + block_k, Tk)
            S = Q @ k[..., ks:ke, :].transpose(-1, -2) / math.sqrt(d)
            if causal:
                r = torch.arange(qs, qe).unsqueeze(1)
                c = torch.arange(ks, ke).unsqueeze(0)
                S = S.masked_fill(c > r + (Tk - Tq), -math.inf)
            m = torch.maximum(m, S.max(dim=-1).values)
            mm = torch.where(torch.isinf(m), torch.zeros_like(m), m)
            P = torch.exp(S - mm.unsqueeze(-1))
            lsum = lsum + P.sum(-1)
            acc = acc + P @ v[..., ks:ke, :]
            ks = ke
        has = lsum > 0
        l1 = torch.where(has, lsum, torch.ones_like(lsum))
        out[..., qs:qe, :] = acc / l1.unsqueeze(-1)
        lse[..., qs:qe] = torch.where(has, m + torch.log(l1), torch.full_like(m, -math.inf))
        qs = qe
    return out, lse
