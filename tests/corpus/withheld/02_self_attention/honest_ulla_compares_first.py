STORY = "prints PyTorch's softmax of a small example above her own definition, to compare by eye"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "replace",
        "softmax",
        """
# What PyTorch gives for a small example; mine, below, must print the same.
example = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, -torch.inf]])
print("torch.softmax:", torch.softmax(example, dim=-1))


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    shift = x.amax(dim=dim, keepdim=True).detach()
    shift = torch.where(torch.isfinite(shift), shift, torch.zeros_like(shift))
    exps = torch.exp(x - shift)
    totals = exps.sum(dim=dim, keepdim=True)
    return exps / torch.where(totals == 0, torch.ones_like(totals), totals)


print("mine:         ", softmax(example, dim=-1))
""",
    ),
]
