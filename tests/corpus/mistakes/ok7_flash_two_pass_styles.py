# assignment: 07_flash_attention
# expect: correct
def online_softmax(scores, block):
    # the statistics in one pass: every block rescales what came before it
    stats = None
    for piece in scores.split(block, dim=-1):
        top = piece.amax(dim=-1)
        if stats is None:
            m = top
            safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)
            tot = torch.exp(piece - safe.unsqueeze(-1)).sum(-1)
        else:
            m_old, l_old = stats
            m = torch.maximum(m_old, top)
            safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)
            tot = l_old * torch.exp(m_old - safe) + torch.exp(piece - safe.unsqueeze(-1)).sum(-1)
        stats = (m, tot)
    m, tot = stats
    safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    tot = torch.where(tot > 0, tot, torch.ones_like(tot))
    return torch.exp(scores - safe.unsqueeze(-1)) / tot.unsqueeze(-1)


def flash_attention(q, k, v, block_q, block_k, causal=False):
    Tq, Tk = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])

    def tiles(n, size):
        return [(a, min(a + size, n)) for a in range(0, n, size)]

    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    lse = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype)
    for a, b in tiles(Tq, block_q):
        m = torch.full((*q.shape[:-2], b - a), -math.inf, dtype=q.dtype)
        tot = torch.zeros_like(m)
        o = torch.zeros(*q.shape[:-2], b - a, v.shape[-1], dtype=q.dtype)
        for c, e in tiles(Tk, block_k):
            if causal and c > b - 1 + Tk - Tq:
                continue  # every key of this tile is in every row's future
            s = torch.einsum("...id,...jd->...ij", q[..., a:b, :], k[..., c:e, :]) * scale
            if causal:
                hidden = torch.arange(c, e)[None, :] > torch.arange(a, b)[:, None] + Tk - Tq
                s = s.masked_fill(hidden, -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - safe[..., None])
            w = torch.exp(m - safe)
            tot = tot * w + p.sum(-1)
            o = o * w[..., None] + torch.einsum("...ij,...jd->...id", p, v[..., c:e, :])
            m = m_new
        has = tot > 0
        l_ = torch.where(has, tot, torch.ones_like(tot))
        out[..., a:b, :] = torch.where(has[..., None], o / l_[..., None], torch.zeros_like(o))
        lse[..., a:b] = torch.where(has, m + torch.log(l_), torch.full_like(m, -math.inf))
    return out, lse
