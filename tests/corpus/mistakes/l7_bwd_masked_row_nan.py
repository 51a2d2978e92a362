# assignment: 07_flash_attention
# expect: none
def flash_attention_backward(q, k, v, out, lse, grad_out, block_q, block_k, causal=False):
    # exp(s - lse) straight from lse: a query that sees no key gives -inf - -inf = NaN
    Tq, Tk = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    delta = (grad_out * out).sum(-1)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for i in range(0, Tq, block_q):
        qi, gi = q[..., i : i + block_q, :], grad_out[..., i : i + block_q, :]
        rows = torch.arange(i, i + qi.shape[-2])
        for j in range(0, Tk, block_k):
            kj, vj = k[..., j : j + block_k, :], v[..., j : j + block_k, :]
            s = qi @ kj.transpose(-2, -1) * scale
            if causal:
                cols = torch.arange(j, j + kj.shape[-2])
                s = s.masked_fill(cols[None, :] > rows[:, None] + (Tk - Tq), -math.inf)
            p = torch.exp(s - lse[..., i : i + block_q, None])
            dv[..., j : j + block_k, :] += p.transpose(-2, -1) @ gi
            ds = p * (gi @ vj.transpose(-2, -1) - delta[..., i : i + block_q, None])
            dq[..., i : i + block_q, :] += ds @ kj * scale
            dk[..., j : j + block_k, :] += ds.transpose(-2, -1) @ qi * scale
    return dq, dk, dv
