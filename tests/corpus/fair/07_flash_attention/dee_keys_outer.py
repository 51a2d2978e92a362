# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "key blocks in the outer loop, every query block inside, statistics kept for all rows at once (as FlashAttention-2's backward does)"
PATTERNS = ["explicit-loops", "torch-matmul"]
SAVE = {}
EDITS = [
    (
        "fill",
        "flash_attention",
        """
Tq, Tk, d = q.shape[-2], k.shape[-2], q.shape[-1]
m = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype)   # one running max per query row
l = torch.zeros(q.shape[:-1], dtype=q.dtype)
acc = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
query_pos = torch.arange(Tq) + (Tk - Tq)
for j in range(0, Tk, block_k):
    kj, vj = k[..., j:j + block_k, :], v[..., j:j + block_k, :]
    key_pos = torch.arange(j, j + kj.shape[-2])
    for i in range(0, Tq, block_q):
        s = torch.matmul(q[..., i:i + block_q, :], kj.transpose(-2, -1)) / math.sqrt(d)
        if causal:
            s = s.masked_fill(key_pos[None, :] > query_pos[i:i + block_q, None], -math.inf)
        m_old = m[..., i:i + block_q]
        m_new = torch.maximum(m_old, s.amax(dim=-1))
        ref = m_new.masked_fill(m_new == -math.inf, 0.0)
        p = torch.exp(s - ref[..., None])
        alpha = torch.exp(m_old - ref)
        l[..., i:i + block_q] = l[..., i:i + block_q] * alpha + p.sum(dim=-1)
        acc[..., i:i + block_q, :] = acc[..., i:i + block_q, :] * alpha[..., None] + torch.matmul(p, vj)
        m[..., i:i + block_q] = m_new
seen = l > 0
l_safe = l.masked_fill(~seen, 1.0)
out = (acc / l_safe[..., None]).masked_fill(~seen[..., None], 0.0)
lse = (m + torch.log(l_safe)).masked_fill(~seen, -math.inf)
return out, lse
""",
    ),
    (
        "fill",
        "flash_attention_backward",
        """
Tq, Tk, d = q.shape[-2], k.shape[-2], q.shape[-1]
scale = d ** -0.5
query_pos = torch.arange(Tq) + (Tk - Tq)
lse_shift = lse.masked_fill(lse == -math.inf, math.inf)
D = (grad_out * out).sum(dim=-1, keepdim=True)
dq = torch.zeros_like(q)
dk_blocks, dv_blocks = [], []
for j in range(0, Tk, block_k):
    kj, vj = k[..., j:j + block_k, :], v[..., j:j + block_k, :]
    key_pos = torch.arange(j, j + kj.shape[-2])
    dkj, dvj = torch.zeros_like(kj), torch.zeros_like(vj)
    for i in range(0, Tq, block_q):
        qi, doi = q[..., i:i + block_q, :], grad_out[..., i:i + block_q, :]
        s = torch.matmul(qi, kj.transpose(-2, -1)) * scale
        if causal:
            s = s.masked_fill(key_pos[None, :] > query_pos[i:i + block_q, None], -math.inf)
        p = torch.exp(s - lse_shift[..., i:i + block_q, None])
        dvj = dvj + torch.matmul(p.transpose(-2, -1), doi)
        ds = p * (torch.matmul(doi, vj.transpose(-2, -1)) - D[..., i:i + block_q, :])
        dq[..., i:i + block_q, :] += torch.matmul(ds, kj) * scale
        dkj = dkj + torch.matmul(ds.transpose(-2, -1), qi) * scale
    dk_blocks.append(dkj)
    dv_blocks.append(dvj)
return dq, torch.cat(dk_blocks, dim=-2), torch.cat(dv_blocks, dim=-2)
""",
    ),
]
