# assignment: 07_flash_attention
# expect: correct
def online_softmax(scores, block):
    import numpy as np

    x = scores.detach().cpu().numpy()
    m = np.full(x.shape[:-1], -np.inf, dtype=x.dtype)
    lsum = np.zeros(x.shape[:-1], dtype=x.dtype)
    for c in range(0, x.shape[-1], block):
        b = x[..., c : c + block]
        m_new = np.maximum(m, b.max(axis=-1))
        base = np.where(np.isneginf(m_new), 0, m_new).astype(x.dtype)
        lsum = lsum * np.exp(m - base) + np.exp(b - base[..., None]).sum(axis=-1)
        m = m_new
    base = np.where(np.isneginf(m), 0, m).astype(x.dtype)
    lsum = np.where(lsum > 0, lsum, 1).astype(x.dtype)
    return torch.from_numpy(np.exp(x - base[..., None]) / lsum[..., None]).to(scores.dtype)


def flash_attention(q, k, v, block_q, block_k, causal=False):
    import numpy as np

    Q, K, V = (t.detach().cpu().numpy() for t in (q, k, v))
    dt = Q.dtype
    tq, tk = Q.shape[-2], K.shape[-2]
    scale = dt.type(1 / np.sqrt(Q.shape[-1]))
    Ob = np.zeros((*Q.shape[:-1], V.shape[-1]), dtype=dt)
    L = np.full(Q.shape[:-1], -np.inf, dtype=dt)
    for a in range(0, tq, block_q):
        Qa = Q[..., a : a + block_q, :]
        rows = np.arange(a, a + Qa.shape[-2])[:, None]
        m = np.full(Qa.shape[:-1], -np.inf, dtype=dt)
        lsum = np.zeros(Qa.shape[:-1], dtype=dt)
        acc = np.zeros((*Qa.shape[:-1], V.shape[-1]), dtype=dt)
        for b in range(0, tk, block_k):
            Kb, Vb = K[..., b : b + block_k, :], V[..., b : b + block_k, :]
            S = (Qa @ np.swapaxes(Kb, -1, -2)) * scale
            if causal:
                cols = np.arange(b, b + Kb.shape[-2])[None, :]
                S = np.where(cols > rows + (tk - tq), dt.type(-np.inf), S)
            m_new = np.maximum(m, S.max(axis=-1))
            base = np.where(np.isneginf(m_new), dt.type(0), m_new)
            P = np.exp(S - base[..., None])
            f = np.exp(m - base)
            lsum = lsum * f + P.sum(axis=-1)
            acc = acc * f[..., None] + P @ Vb
            m = m_new
        ok = lsum > 0
        den = np.where(ok, lsum, dt.type(1))
        Ob[..., a : a + block_q, :] = acc / den[..., None]
        L[..., a : a + block_q] = np.where(ok, m + np.log(den), dt.type(-np.inf))
    return torch.from_numpy(Ob), torch.from_numpy(L)


def flash_attention_backward(q, k, v, out, lse, grad_out, block_q, block_k, causal=False):
    import numpy as np

    Q, K, V, Ob, LSE, G = (t.detach().cpu().numpy() for t in (q, k, v, out, lse, grad_out))
    dt = Q.dtype
    tq, tk = Q.shape[-2], K.shape[-2]
    scale = dt.type(1 / np.sqrt(Q.shape[-1]))
    D = (G * Ob).sum(axis=-1)
    LSE = np.where(np.isneginf(LSE), dt.type(np.inf), LSE)
    dQ, dK, dV = np.zeros_like(Q), np.zeros_like(K), np.zeros_like(V)
    for a in range(0, tq, block_q):
        Qa, Ga = Q[..., a : a + block_q, :], G[..., a : a + block_q, :]
        rows = np.arange(a, a + Qa.shape[-2])[:, None]
        for b in range(0, tk, block_k):
            Kb, Vb = K[..., b : b + block_k, :], V[..., b : b + block_k, :]
            S = (Qa @ np.swapaxes(Kb, -1, -2)) * scale
            if causal:
                cols = np.arange(b, b + Kb.shape[-2])[None, :]
                S = np.where(cols > rows + (tk - tq), dt.type(-np.inf), S)
            P = np.exp(S - LSE[..., a : a + block_q, None])
            dV[..., b : b + block_k, :] += np.swapaxes(P, -1, -2) @ Ga
            dS = P * (Ga @ np.swapaxes(Vb, -1, -2) - D[..., a : a + block_q, None])
            dQ[..., a : a + block_q, :] += (dS @ Kb) * scale
            dK[..., b : b + block_k, :] += (np.swapaxes(dS, -1, -2) @ Qa) * scale
    return torch.from_numpy(dQ), torch.from_numpy(dK), torch.from_numpy(dV)
