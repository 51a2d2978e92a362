# assignment: 07_flash_attention
# expect: none
def flash_attention_backward(q, k, v, out, lse, grad_out, block_q, block_k, causal=False):
    # D taken as rowsum(P * dP) of the current tile only, not of the whole row
    Tq, Tk = q.shape[-2], k.shape[-2]
    scale = 1.0 / math.sqrt(q.shape[-1])
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    lse_shift = torch.where(torch.isneginf(lse), torch.full_like(lse, math.inf), lse)
    for i in range(0, Tq, block_q):
        qi, doi = q[..., i : i + block_q, :], grad_out[..., i : i + block_q, :]
        li = lse_shift[..., i : i + block_q]
        rows = torch.arange(i, i + qi.shape[-2])
        for j in range(0, Tk, block_k):
            kj, vj = k[..., j : j + block_k, :], v[..., j : j + block_k, :]
            s = qi @ kj.transpose(-2, -1) * scale
            if causal:
                cols = torch.arange(j, j + kj.shape[-2])
                s = s.masked_fill(cols[None, :] > rows[:, None] + (Tk - Tq), -math.inf)
            p = torch.exp(s - li[..., None])
            dp = doi @ vj.transpose(-2, -1)
            delta = (p * dp).sum(-1, keepdim=True)
            ds = p * (dp - delta)
            dv[..., j : j + block_k, :] += p.transpose(-2, -1) @ doi
            dq[..., i : i + block_q, :] += ds @ kj * scale
            dk[..., j : j + block_k, :] += ds.transpose(-2, -1) @ qi * scale
    return dq, dk, dv
