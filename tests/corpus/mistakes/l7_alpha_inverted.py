# assignment: 07_flash_attention
# expect: none
def flash_attention(q, k, v, block_q, block_k, causal=False):
    # the rescale factor is written exp(m_new - m_old): upside down, so it is >= 1
    Tq, Tk = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    lse = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype)
    for i in range(0, Tq, block_q):
        qi = q[..., i : i + block_q, :]
        rows = torch.arange(i, i + qi.shape[-2])
        m = torch.full(qi.shape[:-1], -math.inf, dtype=q.dtype)
        lsum = torch.zeros_like(m)
        acc = torch.zeros(*qi.shape[:-1], v.shape[-1], dtype=q.dtype)
        for j in range(0, Tk, block_k):
            kj, vj = k[..., j : j + block_k, :], v[..., j : j + block_k, :]
            s = qi @ kj.transpose(-2, -1) * scale
            if causal:
                cols = torch.arange(j, j + kj.shape[-2])
                s = s.masked_fill(cols[None, :] > rows[:, None] + (Tk - Tq), -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            z_new = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)
            z_old = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
            alpha = torch.exp(z_new - z_old)
            p = torch.exp(s - z_new[..., None])
            lsum = lsum * alpha + p.sum(-1)
            acc = acc * alpha[..., None] + p @ vj
            m = m_new
        seen = lsum > 0
        den = torch.where(seen, lsum, torch.ones_like(lsum))
        out[..., i : i + block_q, :] = torch.where(seen[..., None], acc / den[..., None], 0.0)
        lse[..., i : i + block_q] = torch.where(seen, m + den.log(), -math.inf)
    return out, lse
