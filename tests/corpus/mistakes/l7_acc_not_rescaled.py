# assignment: 07_flash_attention
# expect: flash_attention=output_not_rescaled
def flash_attention(q, k, v, block_q, block_k, causal=False):
    # einsum tiles; the running sum gets alpha, the running output does not
    t_q, t_k = q.shape[-2], k.shape[-2]
    scale = q.shape[-1] ** -0.5
    shift = t_k - t_q
    outs, lses = [], []
    for a in range(0, t_q, block_q):
        qa = q[..., a : a + block_q, :]
        n = qa.shape[-2]
        m = torch.full(qa.shape[:-1], float("-inf"), dtype=q.dtype)
        s_sum = torch.zeros(qa.shape[:-1], dtype=q.dtype)
        o = torch.zeros(*qa.shape[:-1], v.shape[-1], dtype=q.dtype)
        for b in range(0, t_k, block_k):
            kb, vb = k[..., b : b + block_k, :], v[..., b : b + block_k, :]
            s = torch.einsum("...id,...jd->...ij", qa, kb) * scale
            if causal:
                i = torch.arange(a, a + n)[:, None]
                j = torch.arange(b, b + kb.shape[-2])[None, :]
                s = s.masked_fill(j > i + shift, float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1))
            ref = torch.where(m_new == float("-inf"), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - ref.unsqueeze(-1))
            alpha = torch.exp(m - ref)
            s_sum = alpha * s_sum + p.sum(dim=-1)
            o = o + torch.einsum("...ij,...jd->...id", p, vb)
            m = m_new
        seen = s_sum > 0
        safe = torch.where(seen, s_sum, torch.ones_like(s_sum))
        outs.append(o / safe.unsqueeze(-1))
        lses.append(torch.where(seen, m + torch.log(safe), torch.full_like(m, float("-inf"))))
    return torch.cat(outs, dim=-2), torch.cat(lses, dim=-1)
