# assignment: 07_flash_attention
# expect: none
def flash_attention_backward(q, k, v, out, lse, grad_out, block_q, block_k, causal=False):
    # D = rowsum(dO): the "* out" of rowsum(dO * out) was forgotten; einsum tiles
    t_q, t_k = q.shape[-2], k.shape[-2]
    sc = q.shape[-1] ** -0.5
    D = grad_out.sum(dim=-1)
    lse_s = lse.masked_fill(lse == -math.inf, math.inf)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for a in range(0, t_q, block_q):
        sl_q = slice(a, a + block_q)
        qa, ga = q[..., sl_q, :], grad_out[..., sl_q, :]
        ia = torch.arange(a, a + qa.shape[-2])
        for b in range(0, t_k, block_k):
            sl_k = slice(b, b + block_k)
            kb, vb = k[..., sl_k, :], v[..., sl_k, :]
            s = torch.einsum("...id,...jd->...ij", qa, kb) * sc
            if causal:
                jb = torch.arange(b, b + kb.shape[-2])
                s = s.masked_fill(jb[None] > ia[:, None] + t_k - t_q, -math.inf)
            p = torch.exp(s - lse_s[..., sl_q, None])
            dv[..., sl_k, :] += torch.einsum("...ij,...id->...jd", p, ga)
            dp = torch.einsum("...id,...jd->...ij", ga, vb)
            ds = p * (dp - D[..., sl_q, None])
            dq[..., sl_q, :] += torch.einsum("...ij,...jd->...id", ds, kb) * sc
            dk[..., sl_k, :] += torch.einsum("...ij,...id->...jd", ds, qa) * sc
    return dq, dk, dv
