# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "a .py download; math's star import, globals built under with/for/try at top level"
PATTERNS = ["py-export", "star-import", "block-globals", "magics", "help-syntax"]
SAVE = {"file": "quinn_02_self_attention.py", "editor": "py"}
EDITS = [
    (
        "below",
        "setup",
        """
from math import *

with torch.no_grad():
    NEG_INF = torch.tensor(-inf)

PROJECTIONS = []
for role in ("query", "key", "value"):
    PROJECTIONS.append(f"W_{role}")

try:
    tiny = torch.finfo(torch.float32).tiny
except AttributeError:
    tiny = 1e-38
torch.amax?
%precision 4
""",
    ),
    (
        "fill",
        "softmax",
        """
m = torch.amax(x, dim=dim, keepdim=True)
m = torch.where(m == NEG_INF, torch.zeros_like(m), m)
e = torch.exp(x - m)
return e / torch.clamp(torch.sum(e, dim=dim, keepdim=True), min=torch.finfo(x.dtype).tiny)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
n = inputs.shape[0]
w = torch.stack([softmax(torch.stack([inputs[i].dot(inputs[j]) for j in range(n)]), dim=0) for i in range(n)])
ctx = torch.stack([torch.stack([w[i, j] * inputs[j] for j in range(n)]).sum(dim=0) for i in range(n)])
return ctx, w
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
w = softmax(inputs.matmul(inputs.transpose(-1, -2)), dim=-1)
return w.matmul(inputs), w
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
q, k, v = (x @ getattr(self, name) for name in PROJECTIONS)
return softmax(q @ k.transpose(-1, -2) / sqrt(k.shape[-1]), dim=-1) @ v
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
q, k, v = (getattr(self, name)(x) for name in PROJECTIONS)
return softmax(q @ k.transpose(-1, -2) / sqrt(k.shape[-1]), dim=-1) @ v
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
for name in PROJECTIONS:
    if getattr(v2, name).bias is not None:
        raise ValueError(f"v2.{name} has a bias")
v1.load_state_dict({name: getattr(v2, name).weight.T for name in PROJECTIONS})
return v1
""",
    ),
]
