# assignment: 07_flash_attention
# expect: none
def flash_attention(q, k, v, block_q, block_k, causal=False):
    # gathers each tile with index_select over a full block of indices, even at the end
    Tq, Tk = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    out = torch.empty(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    lse = torch.empty(q.shape[:-1], dtype=q.dtype)
    for i in range(0, Tq, block_q):
        ri = torch.arange(i, i + block_q)
        qi = q.index_select(-2, ri)
        m = torch.full(qi.shape[:-1], -math.inf, dtype=q.dtype)
        lsum = torch.zeros_like(m)
        acc = torch.zeros(*qi.shape[:-1], v.shape[-1], dtype=q.dtype)
        for j in range(0, Tk, block_k):
            cj = torch.arange(j, j + block_k)
            s = qi @ k.index_select(-2, cj).transpose(-2, -1) * scale
            if causal:
                s = s.masked_fill(cj[None, :] > ri[:, None] + (Tk - Tq), -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            z = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - z[..., None])
            r = torch.exp(m - z)
            lsum = lsum * r + p.sum(-1)
            acc = acc * r[..., None] + p @ v.index_select(-2, cj)
            m = m_new
        pos = lsum > 0
        den = torch.where(pos, lsum, torch.ones_like(lsum))
        out[..., i : i + block_q, :] = torch.where(pos[..., None], acc / den[..., None], 0.0)
        lse[..., i : i + block_q] = torch.where(pos, m + torch.log(den), -math.inf)
    return out, lse
