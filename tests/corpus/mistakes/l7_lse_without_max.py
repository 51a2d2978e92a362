# assignment: 07_flash_attention
# expect: flash_attention=lse_without_max
def flash_attention(q, k, v, block_q, block_k, causal=False):
    # generators of tiles; the output is right, lse is log(l) and forgets the running max
    Tq, Tk, d = q.shape[-2], k.shape[-2], q.shape[-1]
    off = Tk - Tq

    def key_tiles():
        for j in range(0, Tk, block_k):
            yield j, k[..., j : j + block_k, :], v[..., j : j + block_k, :]

    out_rows, lse_rows = [], []
    for i in range(0, Tq, block_q):
        qi = q[..., i : i + block_q, :]
        bq = qi.shape[-2]
        m = qi.new_full(qi.shape[:-1], -math.inf)
        lsum = qi.new_zeros(qi.shape[:-1])
        acc = qi.new_zeros(*qi.shape[:-1], v.shape[-1])
        for j, kj, vj in key_tiles():
            if causal and j > i + bq - 1 + off:
                break
            s = qi @ kj.transpose(-2, -1) / math.sqrt(d)
            if causal:
                keep = torch.arange(j, j + kj.shape[-2]) <= torch.arange(i, i + bq)[:, None] + off
                s = s.masked_fill(~keep, -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            mz = torch.where(m_new.isinf(), 0.0, m_new)
            p = (s - mz[..., None]).exp()
            a = (m - mz).exp()
            lsum = lsum * a + p.sum(-1)
            acc = acc * a[..., None] + p @ vj
            m = m_new
        good = lsum > 0
        lsafe = torch.where(good, lsum, 1.0)
        out_rows.append(torch.where(good[..., None], acc / lsafe[..., None], 0.0))
        lse_rows.append(torch.where(good, torch.log(lsafe), -math.inf))
    return torch.cat(out_rows, -2), torch.cat(lse_rows, -1)
