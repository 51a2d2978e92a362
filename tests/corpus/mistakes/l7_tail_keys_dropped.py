# assignment: 07_flash_attention
# expect: flash_attention=tail_dropped
def flash_attention(q, k, v, block_q, block_k, causal=False):
    # counts blocks with //: the query axis rounds up, the key axis forgets to
    n_q, n_k = q.shape[-2], k.shape[-2]
    scale = 1.0 / math.sqrt(q.shape[-1])
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    lse = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype)
    for bi in range((n_q + block_q - 1) // block_q):
        r0, r1 = bi * block_q, min((bi + 1) * block_q, n_q)
        qi = q[..., r0:r1, :]
        m = torch.full(qi.shape[:-1], -math.inf, dtype=q.dtype)
        lsum = torch.zeros_like(m)
        acc = torch.zeros(*qi.shape[:-1], v.shape[-1], dtype=q.dtype)
        for bj in range(n_k // block_k):
            c0, c1 = bj * block_k, (bj + 1) * block_k
            s = (qi @ k[..., c0:c1, :].transpose(-2, -1)) * scale
            if causal:
                rows = torch.arange(r0, r1).view(-1, 1)
                cols = torch.arange(c0, c1).view(1, -1)
                s = s.masked_fill(cols > rows + (n_k - n_q), -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            safe = m_new.masked_fill(m_new == -math.inf, 0.0)
            p = (s - safe[..., None]).exp()
            alpha = (m - safe).exp()
            lsum = lsum * alpha + p.sum(-1)
            acc = acc * alpha[..., None] + p @ v[..., c0:c1, :]
            m = m_new
        ok = lsum > 0
        l_safe = lsum.masked_fill(~ok, 1.0)
        out[..., r0:r1, :] = (acc / l_safe[..., None]) * ok[..., None]
        lse[..., r0:r1] = (m + l_safe.log()).masked_fill(~ok, -math.inf)
    return out, lse
