# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "tries the permutation idea on PyTorch's own attention in the same cell, before defining permutation_gap"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "replace",
        "permutation_gap",
        """
# Try the idea on PyTorch's own attention first: permute the tokens, compare.
x_try, perm_try = torch.randn(1, 6, 16), torch.randperm(6)
out = F.scaled_dot_product_attention(x_try, x_try, x_try)
permuted = F.scaled_dot_product_attention(x_try[:, perm_try], x_try[:, perm_try], x_try[:, perm_try])
print("gap for PyTorch's attention:", (permuted - out[:, perm_try]).abs().max().item())


def permutation_gap(layer, x: torch.Tensor, perm: torch.Tensor) -> float:
    return float((layer(x[:, perm]) - layer(x)[:, perm]).abs().max())
""",
    ),
]
