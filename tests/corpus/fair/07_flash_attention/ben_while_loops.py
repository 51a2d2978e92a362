# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "while loops everywhere, the block edges kept by hand with min(); his notes as questions in comments"
PATTERNS = ["while-loops", "question-comment"]
SAVE = {}
EDITS = [
    (
        "fill",
        "online_softmax",
        """
n = scores.shape[-1]
biggest = torch.full(scores.shape[:-1], float("-inf"), dtype=scores.dtype)
total = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
lo = 0
while lo < n:
    hi = min(lo + block, n)
    chunk = scores[..., lo:hi]
    new_biggest = torch.maximum(biggest, chunk.max(dim=-1).values)
    anchor = torch.where(torch.isinf(new_biggest), torch.zeros_like(new_biggest), new_biggest)  # -inf - -inf = nan?
    total = total * torch.exp(biggest - anchor) + torch.exp(chunk - anchor.unsqueeze(-1)).sum(dim=-1)
    biggest = new_biggest
    lo = hi
anchor = torch.where(torch.isinf(biggest), torch.zeros_like(biggest), biggest)
total = torch.where(total > 0, total, torch.ones_like(total))
return torch.exp(scores - anchor.unsqueeze(-1)) / total.unsqueeze(-1)
""",
    ),
    (
        "fill",
        "flash_attention",
        """
Tq, Tk = q.shape[-2], k.shape[-2]
inv = 1.0 / math.sqrt(q.shape[-1])
out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
lse = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype)
i = 0
while i < Tq:
    i_end = min(i + block_q, Tq)
    qi = q[..., i:i_end, :]
    best = torch.full(qi.shape[:-1], float("-inf"), dtype=q.dtype)
    denom = torch.zeros(qi.shape[:-1], dtype=q.dtype)
    numer = torch.zeros(*qi.shape[:-1], v.shape[-1], dtype=q.dtype)
    j = 0
    while j < Tk:
        j_end = min(j + block_k, Tk)
        s = (qi @ k[..., j:j_end, :].transpose(-1, -2)) * inv
        if causal:
            # which keys are in the future of which query? (bottom-right: shift by Tk - Tq)
            future = torch.arange(j, j_end).view(1, -1) > torch.arange(i, i_end).view(-1, 1) + (Tk - Tq)
            s = s.masked_fill(future, float("-inf"))
        new_best = torch.maximum(best, s.max(dim=-1).values)
        anchor = torch.where(torch.isinf(new_best), torch.zeros_like(new_best), new_best)
        w = torch.exp(s - anchor.unsqueeze(-1))
        keep = torch.exp(best - anchor)
        denom = denom * keep + w.sum(dim=-1)
        numer = numer * keep.unsqueeze(-1) + w @ v[..., j:j_end, :]
        best = new_best
        j = j_end
    has_any = denom > 0
    denom_safe = torch.where(has_any, denom, torch.ones_like(denom))
    out[..., i:i_end, :] = torch.where(has_any.unsqueeze(-1), numer / denom_safe.unsqueeze(-1), torch.zeros_like(numer))
    lse[..., i:i_end] = torch.where(has_any, best + torch.log(denom_safe), torch.full_like(best, float("-inf")))
    i = i_end
return out, lse
""",
    ),
    (
        "fill",
        "flash_attention_backward",
        """
Tq, Tk = q.shape[-2], k.shape[-2]
inv = 1.0 / math.sqrt(q.shape[-1])
lse_safe = torch.where(torch.isinf(lse), torch.full_like(lse, float("inf")), lse)
row_term = (grad_out * out).sum(dim=-1)  # D_i = sum_j P_ij dP_ij, so no need to keep P?
dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
i = 0
while i < Tq:
    i_end = min(i + block_q, Tq)
    j = 0
    while j < Tk:
        j_end = min(j + block_k, Tk)
        s = (q[..., i:i_end, :] @ k[..., j:j_end, :].transpose(-1, -2)) * inv
        if causal:
            future = torch.arange(j, j_end).view(1, -1) > torch.arange(i, i_end).view(-1, 1) + (Tk - Tq)
            s = s.masked_fill(future, float("-inf"))
        p = torch.exp(s - lse_safe[..., i:i_end].unsqueeze(-1))
        dv[..., j:j_end, :] += p.transpose(-1, -2) @ grad_out[..., i:i_end, :]
        dp = grad_out[..., i:i_end, :] @ v[..., j:j_end, :].transpose(-1, -2)
        ds = p * (dp - row_term[..., i:i_end].unsqueeze(-1)) * inv
        dq[..., i:i_end, :] += ds @ k[..., j:j_end, :]
        dk[..., j:j_end, :] += ds.transpose(-1, -2) @ q[..., i:i_end, :]
        j = j_end
    i = i_end
return dq, dk, dv
""",
    ),
]
