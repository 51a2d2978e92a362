# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "Colab copy: einsum for every product, a %time on her demo, display() of the shapes"
PATTERNS = ["colab-save", "renamed-file", "einsum", "magics", "display"]
SAVE = {"file": "Copy of 07_flash_attention.ipynb", "editor": "colab"}
EDITS = [
    ("below", "setup", "from IPython.display import display"),
    (
        "fill",
        "flash_attention",
        """
n_q, n_k, width = q.shape[-2], k.shape[-2], q.shape[-1]
out = torch.zeros(q.shape[:-1] + v.shape[-1:], dtype=q.dtype)
lse = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype)
for i in range(0, n_q, block_q):
    qi = q[..., i:i + block_q, :]
    r = torch.arange(i, i + qi.shape[-2]).unsqueeze(-1)
    m_i = torch.full(qi.shape[:-1], -math.inf, dtype=q.dtype)
    l_i = torch.zeros_like(m_i)
    o_i = torch.zeros(qi.shape[:-1] + v.shape[-1:], dtype=q.dtype)
    for j in range(0, n_k, block_k):
        kj, vj = k[..., j:j + block_k, :], v[..., j:j + block_k, :]
        s = torch.einsum("...qd,...kd->...qk", qi, kj) / math.sqrt(width)
        if causal:
            c = torch.arange(j, j + kj.shape[-2]).unsqueeze(0)
            s = s.masked_fill(c > r + (n_k - n_q), -math.inf)
        m_new = torch.maximum(m_i, s.amax(-1))
        base = m_new.nan_to_num(neginf=0.0)
        p = (s - base.unsqueeze(-1)).exp()
        corr = (m_i - base).exp()
        l_i = corr * l_i + p.sum(-1)
        o_i = corr.unsqueeze(-1) * o_i + torch.einsum("...qk,...kd->...qd", p, vj)
        m_i = m_new
    nonzero = l_i > 0
    l_div = torch.where(nonzero, l_i, torch.ones_like(l_i))
    out[..., i:i + block_q, :] = torch.where(nonzero.unsqueeze(-1), o_i / l_div.unsqueeze(-1), torch.zeros_like(o_i))
    lse[..., i:i + block_q] = torch.where(nonzero, m_i + l_div.log(), torch.full_like(m_i, -math.inf))
return out, lse
""",
    ),
    (
        "replace",
        "with lesson.demo():\n    q, k, v = torch.randn(1, 2, 65, 16)",
        """
%%time
with lesson.demo():
    q, k, v = torch.randn(1, 2, 65, 16), torch.randn(1, 2, 80, 16), torch.randn(1, 2, 80, 16)
    out, lse = flash_attention(q, k, v, block_q=16, block_k=24, causal=True)
    display(out.shape, lse.shape)
""",
    ),
]
