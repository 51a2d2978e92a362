# assignment: 07_flash_attention
# expect: flash_attention=causal_top_left
def flash_attention(q, k, v, block_q, block_k, causal=False):
    # one (batch, head) slice at a time; the causal mask is lesson 3's: key j <= query i
    lead = q.shape[:-2]
    t_q, d = q.shape[-2:]
    t_k, d_v = k.shape[-2], v.shape[-1]
    qf = q.reshape(-1, t_q, d)
    kf = k.reshape(-1, t_k, d)
    vf = v.reshape(-1, t_k, d_v)
    outs, lses = [], []
    for h in range(qf.shape[0]):
        o_h = torch.zeros(t_q, d_v, dtype=q.dtype)
        lse_h = torch.full((t_q,), -math.inf, dtype=q.dtype)
        for i in range(0, t_q, block_q):
            qi = qf[h, i : i + block_q]
            rows = torch.arange(i, i + qi.shape[0])
            m = torch.full((qi.shape[0],), -math.inf, dtype=q.dtype)
            lsum = torch.zeros(qi.shape[0], dtype=q.dtype)
            acc = torch.zeros(qi.shape[0], d_v, dtype=q.dtype)
            for j in range(0, t_k, block_k):
                kj, vj = kf[h, j : j + block_k], vf[h, j : j + block_k]
                s = qi @ kj.T / math.sqrt(d)
                if causal:
                    cols = torch.arange(j, j + kj.shape[0])
                    s = s.masked_fill(cols[None, :] > rows[:, None], -math.inf)
                m_new = torch.maximum(m, s.max(dim=1).values)
                base = torch.nan_to_num(m_new, neginf=0.0)
                p = torch.exp(s - base[:, None])
                alpha = torch.exp(m - base)
                lsum = alpha * lsum + p.sum(1)
                acc = alpha[:, None] * acc + p @ vj
                m = m_new
            seen = lsum > 0
            den = torch.where(seen, lsum, torch.ones_like(lsum))
            o_h[i : i + qi.shape[0]] = torch.where(seen[:, None], acc / den[:, None], 0.0)
            lse_h[i : i + qi.shape[0]] = torch.where(seen, m + den.log(), -math.inf)
        outs.append(o_h)
        lses.append(lse_h)
    out = torch.stack(outs).reshape(*lead, t_q, d_v)
    return out, torch.stack(lses).reshape(*lead, t_q)
