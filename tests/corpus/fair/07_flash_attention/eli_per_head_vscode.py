# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "VS Code on Windows (CRLF), renamed: flattens batch and heads and loops over them one at a time with 2-D tiles; an assert on the shapes"
PATTERNS = ["vscode-save", "crlf", "renamed-file", "assert-in-function", "explicit-loops"]
SAVE = {"file": "eli_lesson7_flash.ipynb", "editor": "vscode", "crlf": True}
EDITS = [
    (
        "fill",
        "flash_attention",
        """
assert q.shape[-1] == k.shape[-1] and k.shape[-2] == v.shape[-2], "q, k and v do not line up"
lead = q.shape[:-2]
Tq, Tk, dv_ = q.shape[-2], k.shape[-2], v.shape[-1]
Q = q.reshape(-1, Tq, q.shape[-1])
K = k.reshape(-1, Tk, k.shape[-1])
V = v.reshape(-1, Tk, dv_)
O = torch.zeros(Q.shape[0], Tq, dv_, dtype=q.dtype)
LSE = torch.full((Q.shape[0], Tq), -math.inf, dtype=q.dtype)
scale = 1 / math.sqrt(q.shape[-1])
for h in range(Q.shape[0]):
    for i in range(0, Tq, block_q):
        qi = Q[h, i:i + block_q]                      # [bq, d]
        rows = torch.arange(i, i + qi.shape[0])
        m = torch.full((qi.shape[0],), -math.inf, dtype=q.dtype)
        l = torch.zeros(qi.shape[0], dtype=q.dtype)
        o = torch.zeros(qi.shape[0], dv_, dtype=q.dtype)
        for j in range(0, Tk, block_k):
            kj, vj = K[h, j:j + block_k], V[h, j:j + block_k]
            s = (qi @ kj.T) * scale                   # [bq, bk]
            if causal:
                cols = torch.arange(j, j + kj.shape[0])
                s[cols[None, :] > rows[:, None] + (Tk - Tq)] = -math.inf
            m2 = torch.maximum(m, s.max(dim=1).values)
            z = torch.where(m2 == -math.inf, 0.0, m2)
            p = torch.exp(s - z[:, None])
            a = torch.exp(m - z)
            l = a * l + p.sum(dim=1)
            o = a[:, None] * o + p @ vj
            m = m2
        for r in range(qi.shape[0]):
            if l[r] > 0:
                O[h, i + r] = o[r] / l[r]
                LSE[h, i + r] = m[r] + torch.log(l[r])
return O.reshape(*lead, Tq, dv_), LSE.reshape(*lead, Tq)
""",
    ),
]
