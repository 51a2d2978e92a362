STORY = "softmax = PyTorch's own Python reference softmax (torch._refs.softmax)"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "replace",
        "softmax",
        """
import torch._refs


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    y = torch._refs.softmax(x, dim)
    return torch.nan_to_num(y, nan=0.0)  # the reference gives NaN for an all -inf row
""",
    ),
]
