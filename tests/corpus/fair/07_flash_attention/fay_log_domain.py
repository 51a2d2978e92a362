# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "her flash_attention keeps one running log-sum-exp per row instead of a max and a sum (logaddexp merges the tiles), and an output already normalised"
PATTERNS = ["log-domain", "torch-where"]
SAVE = {}
EDITS = [
    (
        "fill",
        "flash_attention",
        """
Tq, Tk = q.shape[-2], k.shape[-2]
out_rows, lse_rows = [], []
for i in range(0, Tq, block_q):
    qi = q[..., i:i + block_q, :] / math.sqrt(q.shape[-1])
    rows = torch.arange(i, i + qi.shape[-2])
    run = torch.full(qi.shape[:-1], -math.inf, dtype=q.dtype)   # log-sum-exp of the keys so far
    o = torch.zeros(*qi.shape[:-1], v.shape[-1], dtype=q.dtype)  # already divided by exp(run)
    for j in range(0, Tk, block_k):
        s = qi @ k[..., j:j + block_k, :].transpose(-2, -1)
        if causal:
            cols = torch.arange(j, j + s.shape[-1])
            s = torch.where(cols[None, :] <= rows[:, None] + (Tk - Tq), s, -math.inf)
        new = torch.logaddexp(run, torch.logsumexp(s, dim=-1))
        ref = torch.where(torch.isinf(new), 0.0, new)
        o = o * torch.exp(run - ref)[..., None] + torch.exp(s - ref[..., None]) @ v[..., j:j + block_k, :]
        run = new
    out_rows.append(o)
    lse_rows.append(run)
return torch.cat(out_rows, dim=-2), torch.cat(lse_rows, dim=-1)
""",
    ),
]
