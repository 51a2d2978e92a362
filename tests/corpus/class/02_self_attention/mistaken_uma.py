# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "torch.linalg.matmul, a list of rows for the scores, fully masked slices found up front"
PATTERNS = []
SAVE = {}
MISTAKE = (
    "SelfAttention_v1",
    "scales the scores by sqrt(d_in), the width of x, instead of sqrt(d_out), the width of the keys",
)
EDITS = [
    (
        "fill",
        "softmax",
        """
empty = torch.isneginf(x).all(dim, keepdim=True)
m = x.amax(dim, keepdim=True).masked_fill(empty, 0.)
ex = (x - m).exp()
return ex / ex.sum(dim, keepdim=True).masked_fill(empty, 1.)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
T_len = inputs.shape[0]
table = []
for i in range(T_len):
    table.append([inputs[i] @ inputs[j] for j in range(T_len)])
w = softmax(torch.stack([torch.stack(r) for r in table]), dim=-1)
ctx = torch.zeros_like(inputs)
for i in range(T_len):
    for j in range(T_len):
        ctx[i] = ctx[i] + w[i][j] * inputs[j]
return ctx, w
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
w = softmax(torch.linalg.matmul(inputs, inputs.transpose(-2, -1)), dim=-1)
return torch.linalg.matmul(w, inputs), w
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
d_in = x.shape[-1]
qs, ks, vs = x @ self.W_query, x @ self.W_key, x @ self.W_value
scores = qs @ ks.transpose(-2, -1) / d_in ** 0.5
return softmax(scores, dim=-1) @ vs
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
qs, ks, vs = self.W_query(x), self.W_key(x), self.W_value(x)
scores = torch.linalg.matmul(qs, ks.transpose(-2, -1)) / ks.shape[-1] ** 0.5
return torch.linalg.matmul(softmax(scores, dim=-1), vs)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if sum(p.numel() for p in v2.parameters()) != sum(p.numel() for p in v1.parameters()):
    raise ValueError("v2 has extra (bias) parameters that v1 cannot take")
for dst, src in zip(v1.parameters(), v2.parameters()):
    dst.detach().copy_(src.detach().t())
return v1
""",
    ),
]
