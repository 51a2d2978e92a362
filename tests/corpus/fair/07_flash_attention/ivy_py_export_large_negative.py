# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "a .py download; every answer in a new cell below its stub; masks with the dtype's most negative number and a flag for rows that see nothing"
PATTERNS = [
    "py-export",
    "renamed-file",
    "answer-in-new-cell-below",
    "large-negative",
    "float32-contract",
]
SAVE = {"file": "ivy_07_flash_attention.py", "editor": "py"}
EDITS = [
    (
        "below",
        "online_softmax",
        """
def online_softmax(scores, block):
    n = scores.shape[-1]
    mx = torch.full(scores.shape[:-1], torch.finfo(scores.dtype).min, dtype=scores.dtype)
    tot = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
    for c in range(0, n, block):
        x = scores[..., c:c + block]
        new = torch.maximum(mx, x.amax(-1))
        tot = tot * torch.exp(mx - new) + torch.exp(x - new[..., None]).sum(-1)
        mx = new
    anyone = (scores > -math.inf).any(dim=-1)
    w = torch.exp(scores - mx[..., None]) / torch.where(anyone, tot, torch.ones_like(tot))[..., None]
    return torch.where(anyone[..., None], w, torch.zeros_like(w))
""",
    ),
    (
        "below",
        "flash_attention",
        """
def flash_attention(q, k, v, block_q, block_k, causal=False):
    very_negative = torch.finfo(q.dtype).min
    Tq, Tk = q.shape[-2], k.shape[-2]
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    lse = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype)
    for i in range(0, Tq, block_q):
        qi = q[..., i:i + block_q, :]
        rows = torch.arange(i, i + qi.shape[-2])
        m = torch.full(qi.shape[:-1], very_negative, dtype=q.dtype)
        l = torch.zeros(qi.shape[:-1], dtype=q.dtype)
        acc = torch.zeros(*qi.shape[:-1], v.shape[-1], dtype=q.dtype)
        sees = torch.zeros(qi.shape[-2], dtype=torch.bool)
        for j in range(0, Tk, block_k):
            kj = k[..., j:j + block_k, :]
            s = qi @ kj.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if causal:
                allowed = torch.arange(j, j + kj.shape[-2])[None, :] <= rows[:, None] + (Tk - Tq)
                s = torch.where(allowed, s, very_negative)
                sees = sees | allowed.any(dim=-1)
            else:
                sees[:] = True
            m_new = torch.maximum(m, s.amax(-1))
            p = torch.exp(s - m_new[..., None])
            r = torch.exp(m - m_new)
            l = l * r + p.sum(-1)
            acc = acc * r[..., None] + p @ v[..., j:j + block_k, :]
            m = m_new
        out[..., i:i + block_q, :] = torch.where(sees[:, None], acc / l[..., None], torch.zeros_like(acc))
        lse[..., i:i + block_q] = torch.where(sees, m + torch.log(l), torch.full_like(m, -math.inf))
    return out, lse
""",
    ),
]
