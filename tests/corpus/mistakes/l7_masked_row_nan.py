# assignment: 07_flash_attention
# expect: none
def flash_attention(q, k, v, block_q, block_k, causal=False):
    # no guard for a row whose max is still -inf: exp(-inf - -inf) and 0 / 0 give NaN
    Tq, Tk = q.shape[-2], k.shape[-2]
    d = q.shape[-1]
    result, logsum = [], []
    for i0 in range(0, Tq, block_q):
        qi = q[..., i0 : i0 + block_q, :] / math.sqrt(d)
        rows = torch.arange(i0, i0 + qi.shape[-2]).unsqueeze(-1)
        m = torch.full(qi.shape[:-1], -math.inf, dtype=q.dtype)
        lsum = torch.zeros(qi.shape[:-1], dtype=q.dtype)
        acc = torch.zeros(*qi.shape[:-1], v.shape[-1], dtype=q.dtype)
        tiles = (
            (j0, k[..., j0 : j0 + block_k, :], v[..., j0 : j0 + block_k, :])
            for j0 in range(0, Tk, block_k)
        )
        for j0, kt, vt in tiles:
            s = qi @ kt.transpose(-2, -1)
            if causal:
                cols = torch.arange(j0, j0 + kt.shape[-2]).unsqueeze(0)
                s = s.masked_fill(cols > rows + Tk - Tq, -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            p = torch.exp(s - m_new.unsqueeze(-1))
            alpha = torch.exp(m - m_new)
            lsum = alpha * lsum + p.sum(-1)
            acc = alpha.unsqueeze(-1) * acc + p @ vt
            m = m_new
        result.append(acc / lsum.unsqueeze(-1))
        logsum.append(m + torch.log(lsum))
    return torch.cat(result, dim=-2), torch.cat(logsum, dim=-1)
