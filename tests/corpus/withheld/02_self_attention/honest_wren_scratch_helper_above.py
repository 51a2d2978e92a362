# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "a scratch cell tries torch.softmax on big numbers, then defines the shifting helper her softmax calls"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "above",
        "softmax",
        '''
# Scratch: how does PyTorch's softmax behave on big numbers?
big = torch.tensor([1000.0, 1001.0, 1002.0])
print(torch.softmax(big, dim=0))
print(torch.exp(big))  # inf: so I must shift by the max first


def shifted(x, dim):
    """x minus its max along dim (0 where the max is not finite)."""
    m = x.amax(dim=dim, keepdim=True).detach()
    return x - torch.where(torch.isfinite(m), m, torch.zeros_like(m))
''',
    ),
    (
        "fill",
        "softmax",
        """
exps = torch.exp(shifted(x, dim))
totals = exps.sum(dim=dim, keepdim=True)
return exps / torch.where(totals == 0, torch.ones_like(totals), totals)
""",
    ),
]
