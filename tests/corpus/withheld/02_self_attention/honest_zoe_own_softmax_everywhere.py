# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "reuses her own softmax in every attention exercise, as the lesson suggests, and never calls the library's"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
m = x.amax(dim=dim, keepdim=True).detach()
m = torch.nan_to_num(m, neginf=0.0, posinf=0.0)
e = (x - m).exp()
s = e.sum(dim=dim, keepdim=True)
return e / s.masked_fill(s == 0, 1.0)
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
keys = torch.matmul(x, self.W_key)
att = softmax(torch.matmul(torch.matmul(x, self.W_query), keys.mT) * keys.size(-1) ** -0.5)
return torch.matmul(att, torch.matmul(x, self.W_value))
""",
    ),
]
