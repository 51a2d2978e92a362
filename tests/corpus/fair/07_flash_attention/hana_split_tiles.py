# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "tiles from torch.split and zip, positions from a running offset; a question in a comment on the mask"
PATTERNS = ["torch-split", "question-comment"]
SAVE = {}
EDITS = [
    (
        "fill",
        "online_softmax",
        """
m = torch.full(scores.shape[:-1], -math.inf, dtype=scores.dtype)
s = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
for piece in torch.split(scores, block, dim=-1):
    m_next = torch.maximum(m, piece.amax(dim=-1))
    keep = torch.where(m_next == -math.inf, torch.zeros_like(m_next), m_next)
    s = s * torch.exp(m - keep) + torch.exp(piece - keep.unsqueeze(-1)).sum(dim=-1)
    m = m_next
keep = torch.where(m == -math.inf, torch.zeros_like(m), m)
s = torch.where(s == 0, torch.ones_like(s), s)
return torch.exp(scores - keep.unsqueeze(-1)) / s.unsqueeze(-1)
""",
    ),
    (
        "fill",
        "flash_attention",
        """
shift = k.shape[-2] - q.shape[-2]
scale = q.shape[-1] ** -0.5
k_tiles = list(zip(k.split(block_k, dim=-2), v.split(block_k, dim=-2)))
outs, lses = [], []
row0 = 0
for q_tile in q.split(block_q, dim=-2):
    rows = torch.arange(row0, row0 + q_tile.shape[-2])
    m = torch.full(q_tile.shape[:-1], -math.inf, dtype=q.dtype)
    l = torch.zeros_like(m)
    acc = q_tile.new_zeros(*q_tile.shape[:-1], v.shape[-1])
    col0 = 0
    for k_tile, v_tile in k_tiles:
        s = (q_tile @ k_tile.transpose(-2, -1)) * scale
        if causal:
            cols = torch.arange(col0, col0 + k_tile.shape[-2])
            s = s.masked_fill(cols > rows.unsqueeze(-1) + shift, -math.inf)  # later keys: the future?
        m_new = torch.maximum(m, s.amax(dim=-1))
        keep = torch.where(m_new == -math.inf, torch.zeros_like(m_new), m_new)
        p = torch.exp(s - keep.unsqueeze(-1))
        factor = torch.exp(m - keep)
        l = l * factor + p.sum(dim=-1)
        acc = acc * factor.unsqueeze(-1) + p @ v_tile
        m = m_new
        col0 += k_tile.shape[-2]
    good = l > 0
    l1 = torch.where(good, l, torch.ones_like(l))
    outs.append(torch.where(good.unsqueeze(-1), acc / l1.unsqueeze(-1), torch.zeros_like(acc)))
    lses.append(torch.where(good, m + l1.log(), torch.full_like(m, -math.inf)))
    row0 += q_tile.shape[-2]
return torch.cat(outs, dim=-2), torch.cat(lses, dim=-1)
""",
    ),
    (
        "fill",
        "flash_attention_backward",
        """
shift = k.shape[-2] - q.shape[-2]
scale = q.shape[-1] ** -0.5
lse = torch.where(lse == -math.inf, torch.full_like(lse, math.inf), lse)
D = (grad_out * out).sum(dim=-1)
dq_tiles = []
dk, dv = torch.zeros_like(k), torch.zeros_like(v)
row0 = 0
for q_tile, g_tile, lse_tile, d_tile in zip(q.split(block_q, -2), grad_out.split(block_q, -2), lse.split(block_q, -1), D.split(block_q, -1)):
    rows = torch.arange(row0, row0 + q_tile.shape[-2])
    dq_tile = torch.zeros_like(q_tile)
    col0 = 0
    for k_tile, v_tile in zip(k.split(block_k, -2), v.split(block_k, -2)):
        n = k_tile.shape[-2]
        s = (q_tile @ k_tile.transpose(-2, -1)) * scale
        if causal:
            s = s.masked_fill(torch.arange(col0, col0 + n) > rows.unsqueeze(-1) + shift, -math.inf)
        p = torch.exp(s - lse_tile.unsqueeze(-1))
        dv[..., col0:col0 + n, :] += p.transpose(-2, -1) @ g_tile
        ds = p * (g_tile @ v_tile.transpose(-2, -1) - d_tile.unsqueeze(-1)) * scale
        dq_tile = dq_tile + ds @ k_tile
        dk[..., col0:col0 + n, :] += ds.transpose(-2, -1) @ q_tile
        col0 += n
    dq_tiles.append(dq_tile)
    row0 += q_tile.shape[-2]
return torch.cat(dq_tiles, dim=-2), dk, dv
""",
    ),
]
