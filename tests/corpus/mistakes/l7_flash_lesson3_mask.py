# assignment: 07_flash_attention
# expect: flash_attention=causal_top_left
def flash_attention(q, k, v, block_q, block_k, causal=False):
    d = q.shape[-1]
    n_q, n_k = q.shape[-2], k.shape[-2]
    # lesson 3's causal mask, one big one, cut into tiles below
    future = torch.triu(torch.ones(n_q, n_k, dtype=torch.bool), diagonal=1)
    outs, lses = [], []
    for i in range(0, n_q, block_q):
        Q = q[..., i : i + block_q, :]
        m = Q.new_full(Q.shape[:-1], float("-inf"))
        tot = Q.new_zeros(Q.shape[:-1])
        o = Q.new_zeros(*Q.shape[:-1], v.shape[-1])
        for j in range(0, n_k, block_k):
            S = Q @ k[..., j : j + block_k, :].mT / math.sqrt(d)
            if causal:
                S = S.masked_fill(future[i : i + block_q, j : j + block_k], float("-inf"))
            m2 = torch.maximum(m, S.amax(-1))
            z = m2.masked_fill(m2 == float("-inf"), 0.0)
            P = (S - z[..., None]).exp()
            r = (m - z).exp()
            tot = r * tot + P.sum(-1)
            o = r[..., None] * o + P @ v[..., j : j + block_k, :]
            m = m2
        empty = tot == 0
        l1 = tot.masked_fill(empty, 1.0)
        outs.append((o / l1[..., None]).masked_fill(empty[..., None], 0.0))
        lses.append((m + l1.log()).masked_fill(empty, float("-inf")))
    return torch.cat(outs, -2), torch.cat(lses, -1)
