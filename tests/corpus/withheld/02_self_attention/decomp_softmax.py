STORY = "softmax = PyTorch's registered decomposition of aten._softmax (torch._decomp)"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "replace",
        "softmax",
        """
from torch._decomp import decomposition_table

_library_softmax = decomposition_table[torch.ops.aten._softmax.default]


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return torch.nan_to_num(_library_softmax(x, dim, False), nan=0.0)
""",
    ),
]
