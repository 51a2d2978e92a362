# assignment: 07_flash_attention
# expect: none
def flash_attention(q, k, v, block_q, block_k, causal=False):
    # the GPU kernels' exp2 trick: scores times log2(e), then exp2; lse is left in base 2
    Tq, Tk = q.shape[-2], k.shape[-2]
    scale2 = math.log2(math.e) / math.sqrt(q.shape[-1])
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
            s = qi @ kj.transpose(-2, -1) * scale2
            if causal:
                cols = torch.arange(j, j + kj.shape[-2])
                s = s.masked_fill(cols[None, :] > rows[:, None] + (Tk - Tq), -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            z = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp2(s - z[..., None])
            alpha = torch.exp2(m - z)
            lsum = lsum * alpha + p.sum(-1)
            acc = acc * alpha[..., None] + p @ vj
            m = m_new
        seen = lsum > 0
        den = torch.where(seen, lsum, torch.ones_like(lsum))
        out[..., i : i + block_q, :] = torch.where(seen[..., None], acc / den[..., None], 0.0)
        lse[..., i : i + block_q] = torch.where(seen, m + torch.log2(den), -math.inf)
    return out, lse
