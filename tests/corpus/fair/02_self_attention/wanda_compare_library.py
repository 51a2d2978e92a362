STORY = "keeps the library's answers in variables and prints them: torch.softmax before her own def in the same cell, F.softmax after the matrix def"
PATTERNS = ["torch-where"]
SAVE = {}
EDITS = [
    (
        "replace",
        "softmax",
        """
# what does the library give? (only to compare, not used below)
x_demo = torch.tensor([[2.0, 1.0, 0.1], [1000.0, 999.0, -1000.0]])
ref = torch.softmax(x_demo, dim=-1)
print("torch.softmax:", ref)


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    m = x.max(dim=dim, keepdim=True).values
    m = torch.where(m == float("-inf"), torch.zeros_like(m), m)
    e = torch.exp(x - m)
    total = e.sum(dim=dim, keepdim=True)
    return e / torch.where(total > 0, total, 1.0)  # a fully masked row stays all zeros


mine = softmax(x_demo)
print("mine:         ", mine)
print("same as torch:", torch.allclose(mine, ref))
""",
    ),
    (
        "replace",
        "simple_attention_matrix",
        """
import torch.nn.functional as F


def simple_attention_matrix(inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    weights = softmax(inputs @ inputs.transpose(-2, -1), dim=-1)
    return weights @ inputs, weights


lib_weights = F.softmax(inputs @ inputs.T, dim=-1)
lib_context = lib_weights @ inputs
my_context, my_weights = simple_attention_matrix(inputs)
print("weights match F.softmax:", torch.allclose(my_weights, lib_weights))
print("context matches:", torch.allclose(my_context, lib_context))
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
