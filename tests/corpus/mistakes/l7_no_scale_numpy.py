# assignment: 07_flash_attention
# expect: none
def flash_attention(q, k, v, block_q, block_k, causal=False):
    # numpy inside, dtype kept; the scores are q k^T with no 1/sqrt(d)
    import numpy as np

    Q = q.detach().cpu().numpy()
    K = k.detach().cpu().numpy()
    V = v.detach().cpu().numpy()
    tq, tk = Q.shape[-2], K.shape[-2]
    Ob = np.zeros((*Q.shape[:-1], V.shape[-1]), dtype=Q.dtype)
    L = np.full(Q.shape[:-1], -np.inf, dtype=Q.dtype)
    for a in range(0, tq, block_q):
        Qa = Q[..., a : a + block_q, :]
        rows = np.arange(a, a + Qa.shape[-2])[:, None]
        m = np.full(Qa.shape[:-1], -np.inf, dtype=Q.dtype)
        s_tot = np.zeros(Qa.shape[:-1], dtype=Q.dtype)
        acc = np.zeros((*Qa.shape[:-1], V.shape[-1]), dtype=Q.dtype)
        for b in range(0, tk, block_k):
            Kb, Vb = K[..., b : b + block_k, :], V[..., b : b + block_k, :]
            S = Qa @ np.swapaxes(Kb, -1, -2)
            if causal:
                cols = np.arange(b, b + Kb.shape[-2])[None, :]
                S = np.where(cols > rows + (tk - tq), -np.inf, S).astype(Q.dtype)
            m_new = np.maximum(m, S.max(axis=-1))
            c = np.where(np.isneginf(m_new), 0, m_new).astype(Q.dtype)
            P = np.exp(S - c[..., None])
            f = np.exp(m - c)
            s_tot = s_tot * f + P.sum(-1)
            acc = acc * f[..., None] + P @ Vb
            m = m_new
        ok = s_tot > 0
        den = np.where(ok, s_tot, 1).astype(Q.dtype)
        Ob[..., a : a + block_q, :] = np.where(ok[..., None], acc / den[..., None], 0)
        L[..., a : a + block_q] = np.where(ok, m + np.log(den), -np.inf)
    return torch.from_numpy(Ob), torch.from_numpy(L)
