# assignment: 07_flash_attention
# expect: correct
def online_softmax(scores, block):
    # each block becomes a (max, sum) pair; the pairs are merged with functools.reduce
    import functools

    def stats(b):
        top = b.amax(-1)
        base = torch.where(torch.isneginf(top), torch.zeros_like(top), top)
        return top, torch.exp(b - base[..., None]).sum(-1)

    def merge(x, y):
        (m1, l1), (m2, l2) = x, y
        m = torch.maximum(m1, m2)
        base = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
        return m, l1 * torch.exp(m1 - base) + l2 * torch.exp(m2 - base)

    blocks = torch.split(scores, block, dim=-1)
    m, lsum = functools.reduce(merge, map(stats, blocks))
    base = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    lsum = torch.where(lsum > 0, lsum, torch.ones_like(lsum))
    return torch.exp(scores - base[..., None]) / lsum[..., None]


def flash_attention(q, k, v, block_q, block_k, causal=False):
    # the output is kept normalised (softmax-so-far @ v) instead of an unnormalised acc
    t_q, t_k = q.shape[-2], k.shape[-2]
    scale = q.shape[-1] ** -0.5
    off = t_k - t_q

    def tiles(n, size):
        start = 0
        while start < n:
            yield start, min(start + size, n)
            start += size

    outs, lses = [], []
    for a, a2 in tiles(t_q, block_q):
        qa = q[..., a:a2, :]
        m = torch.full(qa.shape[:-1], -math.inf, dtype=q.dtype)
        lsum = torch.zeros_like(m)
        o = torch.zeros(*qa.shape[:-1], v.shape[-1], dtype=q.dtype)
        for b, b2 in tiles(t_k, block_k):
            if causal and b > a2 - 1 + off:
                break
            s = qa @ k[..., b:b2, :].transpose(-2, -1) * scale
            if causal:
                future = torch.arange(b, b2)[None, :] > torch.arange(a, a2)[:, None] + off
                s = s.masked_fill(future, -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            base = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - base[..., None])
            l_old = lsum * torch.exp(m - base)
            lsum = l_old + p.sum(-1)
            safe = torch.where(lsum > 0, lsum, torch.ones_like(lsum))
            o = o * (l_old / safe)[..., None] + (p @ v[..., b:b2, :]) / safe[..., None]
            m = m_new
        outs.append(o)
        lses.append(torch.where(lsum > 0, m + torch.log(lsum), torch.full_like(m, -math.inf)))
    return torch.cat(outs, dim=-2), torch.cat(lses, dim=-1)


def flash_attention_backward(q, k, v, out, lse, grad_out, block_q, block_k, causal=False):
    t_q, t_k = q.shape[-2], k.shape[-2]
    scale = q.shape[-1] ** -0.5
    off = t_k - t_q
    D = (grad_out * out).sum(-1)
    lse_p = lse.masked_fill(torch.isneginf(lse), math.inf)
    grads = [torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)]
    pairs = (
        (a, b)
        for a in range(0, t_q, block_q)
        for b in range(0, t_k, block_k)
        if not (causal and b > min(a + block_q, t_q) - 1 + off)
    )
    for a, b in pairs:
        qa, ga = q[..., a : a + block_q, :], grad_out[..., a : a + block_q, :]
        kb, vb = k[..., b : b + block_k, :], v[..., b : b + block_k, :]
        s = qa @ kb.transpose(-2, -1) * scale
        if causal:
            rows = torch.arange(a, a + qa.shape[-2])[:, None]
            s = s.masked_fill(torch.arange(b, b + kb.shape[-2])[None, :] > rows + off, -math.inf)
        p = torch.exp(s - lse_p[..., a : a + block_q, None])
        ds = p * (ga @ vb.transpose(-2, -1) - D[..., a : a + block_q, None])
        grads[0][..., a : a + block_q, :] += ds @ kb * scale
        grads[1][..., b : b + block_k, :] += ds.transpose(-2, -1) @ qa * scale
        grads[2][..., b : b + block_k, :] += p.transpose(-2, -1) @ ga
    return tuple(grads)
