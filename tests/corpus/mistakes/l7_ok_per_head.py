# assignment: 07_flash_attention
# expect: correct
def online_softmax(scores, block):
    # rows flattened to a matrix; statistics as plain lists of columns
    rows = scores.reshape(-1, scores.shape[-1])
    m = torch.full((rows.shape[0],), -math.inf, dtype=scores.dtype)
    lsum = torch.zeros(rows.shape[0], dtype=scores.dtype)
    for cols in torch.arange(scores.shape[-1]).split(block):
        b = rows[:, cols]
        grown = torch.maximum(m, b.max(dim=1).values)
        ref = torch.where(grown == -math.inf, 0.0, grown)
        lsum = lsum * torch.exp(m - ref) + torch.exp(b - ref[:, None]).sum(dim=1)
        m = grown
    ref = torch.where(m == -math.inf, 0.0, m)
    result = torch.exp(rows - ref[:, None]) / torch.where(lsum > 0, lsum, 1.0)[:, None]
    return result.reshape(scores.shape)


def flash_attention(q, k, v, block_q, block_k, causal=False):
    # one (batch, head) slice at a time, 2-D matrix products only
    lead, (t_q, d), t_k, d_v = q.shape[:-2], q.shape[-2:], k.shape[-2], v.shape[-1]
    Q, K, V = q.reshape(-1, t_q, d), k.reshape(-1, t_k, d), v.reshape(-1, t_k, d_v)
    Ob = torch.zeros(Q.shape[0], t_q, d_v, dtype=q.dtype)
    LSE = torch.full((Q.shape[0], t_q), -math.inf, dtype=q.dtype)
    scale = 1 / math.sqrt(d)
    for h in range(Q.shape[0]):
        for i in range(0, t_q, block_q):
            qi = Q[h, i : i + block_q]
            n = qi.shape[0]
            m = torch.full((n,), -math.inf, dtype=q.dtype)
            lsum = torch.zeros(n, dtype=q.dtype)
            acc = torch.zeros(n, d_v, dtype=q.dtype)
            for j in range(0, t_k, block_k):
                kj, vj = K[h, j : j + block_k], V[h, j : j + block_k]
                s = torch.mm(qi, kj.t()) * scale
                if causal:
                    s = s.masked_fill(
                        torch.arange(j, j + kj.shape[0])[None, :]
                        > torch.arange(i, i + n)[:, None] + (t_k - t_q),
                        -math.inf,
                    )
                grown = torch.maximum(m, s.max(dim=1).values)
                ref = torch.where(grown == -math.inf, 0.0, grown)
                p = torch.exp(s - ref[:, None])
                alpha = torch.exp(m - ref)
                lsum = lsum * alpha + p.sum(dim=1)
                acc = acc * alpha[:, None] + torch.mm(p, vj)
                m = grown
            seen = lsum > 0
            Ob[h, i : i + n] = acc / torch.where(seen, lsum, 1.0)[:, None]
            LSE[h, i : i + n] = torch.where(seen, m + torch.log(lsum), -math.inf)
    return Ob.reshape(*lead, t_q, d_v), LSE.reshape(*lead, t_q)


def flash_attention_backward(q, k, v, out, lse, grad_out, block_q, block_k, causal=False):
    (t_q, d), t_k, d_v = q.shape[-2:], k.shape[-2], v.shape[-1]
    Q, K, V = q.reshape(-1, t_q, d), k.reshape(-1, t_k, d), v.reshape(-1, t_k, d_v)
    G, Ob = grad_out.reshape(-1, t_q, d_v), out.reshape(-1, t_q, d_v)
    L = lse.reshape(-1, t_q)
    dQ, dK, dV = torch.zeros_like(Q), torch.zeros_like(K), torch.zeros_like(V)
    scale = 1 / math.sqrt(d)
    for h in range(Q.shape[0]):
        delta = (G[h] * Ob[h]).sum(dim=1)
        lse_h = torch.where(L[h] == -math.inf, math.inf, L[h])
        for i in range(0, t_q, block_q):
            qi, gi = Q[h, i : i + block_q], G[h, i : i + block_q]
            n = qi.shape[0]
            for j in range(0, t_k, block_k):
                kj, vj = K[h, j : j + block_k], V[h, j : j + block_k]
                s = torch.mm(qi, kj.t()) * scale
                if causal:
                    s = s.masked_fill(
                        torch.arange(j, j + kj.shape[0])[None, :]
                        > torch.arange(i, i + n)[:, None] + (t_k - t_q),
                        -math.inf,
                    )
                p = torch.exp(s - lse_h[i : i + n, None])
                dV[h, j : j + block_k] += torch.mm(p.t(), gi)
                ds = p * (torch.mm(gi, vj.t()) - delta[i : i + n, None])
                dQ[h, i : i + n] += torch.mm(ds, kj) * scale
                dK[h, j : j + block_k] += torch.mm(ds.t(), qi) * scale
    return dQ.reshape(q.shape), dK.reshape(k.shape), dV.reshape(v.shape)
