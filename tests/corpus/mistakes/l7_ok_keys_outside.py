# assignment: 07_flash_attention
# expect: correct
def online_softmax(scores, block):
    # a generator hands out (max, exp-sum) per block; the loop merges them
    def blocks():
        for c in range(0, scores.shape[-1], block):
            b = scores[..., c : c + block]
            top = b.amax(-1)
            yield top, torch.exp(b - torch.nan_to_num(top, neginf=0.0)[..., None]).sum(-1)

    m = scores.new_full(scores.shape[:-1], -math.inf)
    lsum = scores.new_zeros(scores.shape[:-1])
    for top, tot in blocks():
        m_new = torch.maximum(m, top)
        base = torch.nan_to_num(m_new, neginf=0.0)
        lsum = lsum * torch.exp(m - base) + tot * torch.exp(top - base)
        m = m_new
    base = torch.nan_to_num(m, neginf=0.0)
    return torch.exp(scores - base[..., None]) / torch.where(lsum > 0, lsum, 1.0)[..., None]


def flash_attention(q, k, v, block_q, block_k, causal=False):
    # key tiles outside, query tiles inside (the 2022 paper's order): the statistics of every
    # query live across the outer loop, which is linear in T
    Tq, Tk = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    off = Tk - Tq
    m = q.new_full(q.shape[:-1], -math.inf)
    lsum = q.new_zeros(q.shape[:-1])
    acc = q.new_zeros(*q.shape[:-1], v.shape[-1])
    for j in range(0, Tk, block_k):
        kj, vj = k[..., j : j + block_k, :], v[..., j : j + block_k, :]
        cols = torch.arange(j, j + kj.shape[-2])
        first = max(0, j - off) if causal else 0  # queries before it see none of this tile
        for i in range(first - first % block_q, Tq, block_q):
            sl = slice(i, i + block_q)
            qi = q[..., sl, :]
            s = torch.einsum("...id,...jd->...ij", qi, kj) * scale
            if causal:
                rows = torch.arange(i, i + qi.shape[-2])
                s = s.masked_fill(cols[None, :] > rows[:, None] + off, -math.inf)
            m_new = torch.maximum(m[..., sl], s.amax(-1))
            base = torch.nan_to_num(m_new, neginf=0.0)
            p = torch.exp(s - base[..., None])
            alpha = torch.exp(m[..., sl] - base)
            lsum[..., sl] = lsum[..., sl] * alpha + p.sum(-1)
            acc[..., sl, :] = acc[..., sl, :] * alpha[..., None] + torch.einsum(
                "...ij,...jd->...id", p, vj
            )
            m[..., sl] = m_new
    seen = lsum > 0
    out = acc / torch.where(seen, lsum, torch.ones_like(lsum))[..., None]
    lse = torch.where(seen, m + torch.log(lsum), torch.full_like(m, -math.inf))
    return out, lse


def flash_attention_backward(q, k, v, out, lse, grad_out, block_q, block_k, causal=False):
    # FlashAttention-2's order: per key tile, dk and dv are finished before moving on
    Tq, Tk = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    off = Tk - Tq
    D = torch.einsum("...id,...id->...i", grad_out, out)
    lse_p = torch.where(torch.isneginf(lse), torch.full_like(lse, math.inf), lse)
    dq = torch.zeros_like(q)
    dks, dvs = [], []
    for j in range(0, Tk, block_k):
        kj, vj = k[..., j : j + block_k, :], v[..., j : j + block_k, :]
        cols = torch.arange(j, j + kj.shape[-2])
        dk_j, dv_j = torch.zeros_like(kj), torch.zeros_like(vj)
        for i in range(0, Tq, block_q):
            qi, gi = q[..., i : i + block_q, :], grad_out[..., i : i + block_q, :]
            s = torch.einsum("...id,...jd->...ij", qi, kj) * scale
            if causal:
                rows = torch.arange(i, i + qi.shape[-2])
                s = s.masked_fill(cols[None, :] > rows[:, None] + off, -math.inf)
            p = torch.exp(s - lse_p[..., i : i + block_q, None])
            dv_j += torch.einsum("...ij,...id->...jd", p, gi)
            dp = torch.einsum("...id,...jd->...ij", gi, vj)
            ds = p * (dp - D[..., i : i + block_q, None])
            dq[..., i : i + block_q, :] += torch.einsum("...ij,...jd->...id", ds, kj) * scale
            dk_j += torch.einsum("...ij,...id->...jd", ds, qi) * scale
        dks.append(dk_j)
        dvs.append(dv_j)
    return dq, torch.cat(dks, dim=-2), torch.cat(dvs, dim=-2)
