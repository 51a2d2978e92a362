# assignment: 07_flash_attention
# expect: correct
def online_softmax(scores, block):
    n = scores.shape[-1]
    m = torch.full(scores.shape[:-1], -math.inf, dtype=scores.dtype)
    lsum = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
    start = 0
    while start < n:
        chunk = scores[..., start : start + block]
        m_new = torch.maximum(m, chunk.amax(-1))
        shift = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)
        lsum = lsum * torch.exp(m - shift) + torch.exp(chunk - shift[..., None]).sum(-1)
        m = m_new
        start += block
    shift = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    den = torch.where(lsum > 0, lsum, torch.ones_like(lsum))
    return torch.exp(scores - shift[..., None]) / den[..., None]


def flash_attention(q, k, v, block_q, block_k, causal=False):
    Tq, Tk = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    offset = Tk - Tq
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    lse = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype)
    i = 0
    while i < Tq:
        i_end = min(i + block_q, Tq)
        qi = q[..., i:i_end, :]
        m = torch.full(qi.shape[:-1], -math.inf, dtype=q.dtype)
        lsum = torch.zeros_like(m)
        acc = torch.zeros(*qi.shape[:-1], v.shape[-1], dtype=q.dtype)
        j = 0
        # keys past the last query's horizon are never visited
        j_stop = min(Tk, i_end + offset) if causal else Tk
        while j < j_stop:
            j_end = min(j + block_k, Tk)
            s = qi @ k[..., j:j_end, :].transpose(-2, -1) * scale
            if causal:
                hidden = torch.arange(j, j_end)[None, :] > torch.arange(i, i_end)[:, None] + offset
                s = s.masked_fill(hidden, -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            shift = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - shift[..., None])
            alpha = torch.exp(m - shift)
            lsum = lsum * alpha + p.sum(-1)
            acc = acc * alpha[..., None] + p @ v[..., j:j_end, :]
            m = m_new
            j = j_end
        seen = lsum > 0
        den = torch.where(seen, lsum, torch.ones_like(lsum))
        out[..., i:i_end, :] = acc / den[..., None]
        lse[..., i:i_end] = torch.where(seen, m + torch.log(den), torch.full_like(m, -math.inf))
        i = i_end
    return out, lse


def flash_attention_backward(q, k, v, out, lse, grad_out, block_q, block_k, causal=False):
    Tq, Tk = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    offset = Tk - Tq
    delta = (grad_out * out).sum(-1)
    lse_safe = torch.where(torch.isneginf(lse), torch.full_like(lse, math.inf), lse)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    i = 0
    while i < Tq:
        i_end = min(i + block_q, Tq)
        qi, gi = q[..., i:i_end, :], grad_out[..., i:i_end, :]
        j = 0
        while j < Tk:
            j_end = min(j + block_k, Tk)
            kj, vj = k[..., j:j_end, :], v[..., j:j_end, :]
            s = qi @ kj.transpose(-2, -1) * scale
            if causal:
                hidden = torch.arange(j, j_end)[None, :] > torch.arange(i, i_end)[:, None] + offset
                s = s.masked_fill(hidden, -math.inf)
            p = torch.exp(s - lse_safe[..., i:i_end, None])
            dv[..., j:j_end, :] += p.transpose(-2, -1) @ gi
            ds = p * (gi @ vj.transpose(-2, -1) - delta[..., i:i_end, None])
            dq[..., i:i_end, :] += ds @ kj * scale
            dk[..., j:j_end, :] += ds.transpose(-2, -1) @ qi * scale
            j = j_end
        i = i_end
    return dq, dk, dv
