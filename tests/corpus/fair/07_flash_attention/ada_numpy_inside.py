# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "does the arithmetic in NumPy float64 (she trusts it more), converting in and out of torch; the backward too"
PATTERNS = ["numpy-inside", "explicit-loops"]
SAVE = {}
EDITS = [
    ("below", "setup", "import numpy as np"),
    (
        "fill",
        "online_softmax",
        """
x = scores.detach().numpy().astype(np.float64)
m = np.full(x.shape[:-1], -np.inf)
l = np.zeros(x.shape[:-1])
for start in range(0, x.shape[-1], block):
    part = x[..., start:start + block]
    new_m = np.maximum(m, part.max(axis=-1))
    ref = np.where(np.isneginf(new_m), 0.0, new_m)
    l = l * np.exp(m - ref) + np.exp(part - ref[..., None]).sum(axis=-1)
    m = new_m
ref = np.where(np.isneginf(m), 0.0, m)
l = np.where(l > 0, l, 1.0)
return torch.from_numpy(np.exp(x - ref[..., None]) / l[..., None]).to(scores.dtype)
""",
    ),
    (
        "fill",
        "flash_attention",
        """
Q, K, V = (t.detach().numpy().astype(np.float64) for t in (q, k, v))
Tq, Tk, d = Q.shape[-2], K.shape[-2], Q.shape[-1]
out = np.zeros(Q.shape[:-1] + (V.shape[-1],))
lse = np.full(Q.shape[:-1], -np.inf)
for i0 in range(0, Tq, block_q):
    Qi = Q[..., i0:i0 + block_q, :]
    rows = np.arange(i0, i0 + Qi.shape[-2])
    m = np.full(Qi.shape[:-1], -np.inf)
    l = np.zeros(Qi.shape[:-1])
    acc = np.zeros(Qi.shape[:-1] + (V.shape[-1],))
    for j0 in range(0, Tk, block_k):
        Kj, Vj = K[..., j0:j0 + block_k, :], V[..., j0:j0 + block_k, :]
        S = Qi @ np.swapaxes(Kj, -1, -2) / np.sqrt(d)
        if causal:
            cols = np.arange(j0, j0 + Kj.shape[-2])
            S = np.where(cols[None, :] > rows[:, None] + (Tk - Tq), -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1))
        ref = np.where(np.isneginf(m_new), 0.0, m_new)
        P = np.exp(S - ref[..., None])
        shrink = np.exp(m - ref)
        l = l * shrink + P.sum(axis=-1)
        acc = acc * shrink[..., None] + P @ Vj
        m = m_new
    ok = l > 0
    safe = np.where(ok, l, 1.0)
    out[..., i0:i0 + block_q, :] = np.where(ok[..., None], acc / safe[..., None], 0.0)
    lse[..., i0:i0 + block_q] = np.where(ok, m + np.log(safe), -np.inf)
return torch.from_numpy(out).to(q.dtype), torch.from_numpy(lse).to(q.dtype)
""",
    ),
    (
        "fill",
        "flash_attention_backward",
        """
Q, K, V, O, L, dO = (t.detach().numpy().astype(np.float64) for t in (q, k, v, out, lse, grad_out))
Tq, Tk, d = Q.shape[-2], K.shape[-2], Q.shape[-1]
L = np.where(np.isneginf(L), np.inf, L)  # a row that sees nothing: every weight exp(-inf) = 0
D = (dO * O).sum(axis=-1)
dQ, dK, dV = np.zeros_like(Q), np.zeros_like(K), np.zeros_like(V)
for i0 in range(0, Tq, block_q):
    rows = np.arange(i0, min(i0 + block_q, Tq))
    for j0 in range(0, Tk, block_k):
        cols = np.arange(j0, min(j0 + block_k, Tk))
        S = Q[..., rows, :] @ np.swapaxes(K[..., cols, :], -1, -2) / np.sqrt(d)
        if causal:
            S = np.where(cols[None, :] > rows[:, None] + (Tk - Tq), -np.inf, S)
        P = np.exp(S - L[..., rows, None])
        dV[..., cols, :] += np.swapaxes(P, -1, -2) @ dO[..., rows, :]
        dS = P * (dO[..., rows, :] @ np.swapaxes(V[..., cols, :], -1, -2) - D[..., rows, None])
        dQ[..., rows, :] += dS @ K[..., cols, :] / np.sqrt(d)
        dK[..., cols, :] += np.swapaxes(dS, -1, -2) @ Q[..., rows, :] / np.sqrt(d)
return tuple(torch.from_numpy(g).to(q.dtype) for g in (dQ, dK, dV))
""",
    ),
]
