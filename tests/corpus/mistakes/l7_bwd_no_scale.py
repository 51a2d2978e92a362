# assignment: 07_flash_attention
# expect: flash_attention_backward=grads_unscaled
def flash_attention_backward(q, k, v, out, lse, grad_out, block_q, block_k, causal=False):
    # P is recomputed with the scale, but dq and dk leave out the final / sqrt(d)
    Tq, Tk = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    delta = (grad_out * out).sum(-1)
    safe = torch.where(lse == -math.inf, math.inf, lse)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    i = 0
    while i < Tq:
        i2 = min(i + block_q, Tq)
        qi, gi = q[..., i:i2, :], grad_out[..., i:i2, :]
        j = 0
        while j < Tk:
            j2 = min(j + block_k, Tk)
            kj, vj = k[..., j:j2, :], v[..., j:j2, :]
            s = qi @ kj.transpose(-2, -1) * scale
            if causal:
                mask = torch.arange(j, j2)[None, :] > torch.arange(i, i2)[:, None] + (Tk - Tq)
                s = s.masked_fill(mask, -math.inf)
            p = torch.exp(s - safe[..., i:i2, None])
            dv[..., j:j2, :] += p.transpose(-2, -1) @ gi
            ds = p * (gi @ vj.transpose(-2, -1) - delta[..., i:i2, None])
            dq[..., i:i2, :] += ds @ kj
            dk[..., j:j2, :] += ds.transpose(-2, -1) @ qi
            j = j2
        i = i2
    return dq, dk, dv
