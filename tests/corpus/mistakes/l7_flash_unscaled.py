# assignment: 07_flash_attention
# expect: none
def flash_attention(q, k, v, block_q, block_k, causal=False):
    # forgot the 1/sqrt(d): the tiles are right, the scores are not
    Tq, Tk = q.shape[-2], k.shape[-2]
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    lse = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype)
    for i in range(0, Tq, block_q):
        qi = q[..., i : i + block_q, :]
        rows = torch.arange(i, i + qi.shape[-2])
        m = torch.full(qi.shape[:-1], -math.inf, dtype=q.dtype)
        tot = torch.zeros_like(m)
        acc = torch.zeros(*qi.shape[:-1], v.shape[-1], dtype=q.dtype)
        for j in range(0, Tk, block_k):
            s = qi @ k[..., j : j + block_k, :].transpose(-2, -1)
            if causal:
                cols = torch.arange(j, j + s.shape[-1])
                s = s.masked_fill(cols[None, :] > rows[:, None] + (Tk - Tq), -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            base = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - base[..., None])
            a = torch.exp(m - base)
            tot = tot * a + p.sum(-1)
            acc = acc * a[..., None] + p @ v[..., j : j + block_k, :]
            m = m_new
        ok = tot > 0
        den = torch.where(ok, tot, torch.ones_like(tot))
        out[..., i : i + block_q, :] = torch.where(
            ok[..., None], acc / den[..., None], torch.zeros_like(acc)
        )
        lse[..., i : i + block_q] = torch.where(ok, m + den.log(), torch.full_like(m, -math.inf))
    return out, lse
