# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "finfo.min instead of -inf with a guard for empty rows; constructors rewritten without type hints"
PATTERNS = ["large-negative", "edited-constructor", "float32-contract"]
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
very_negative = torch.finfo(x.dtype).min
blocked = torch.isneginf(x)
finite = x.masked_fill(blocked, very_negative)
finite = finite - finite.amax(dim=dim, keepdim=True)
w = torch.exp(finite)
w = w / w.sum(dim=dim, keepdim=True)
return w.masked_fill(blocked.all(dim=dim, keepdim=True), 0.0)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
T, _ = inputs.shape
scores = torch.empty(T, T, dtype=inputs.dtype)
for i in range(T):
    scores[i] = torch.mv(inputs, inputs[i])
weights = softmax(scores, dim=-1)
context = torch.stack([torch.mv(inputs.T, weights[i]) for i in range(T)])
return context, weights
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
weights = softmax(inputs @ inputs.mT, dim=-1)
return weights @ inputs, weights
""",
    ),
    (
        "replace",
        "SelfAttention_v1",
        '''
class SelfAttention_v1(nn.Module):
    """Self-attention with nn.Parameter weights W_query, W_key, W_value of shape [d_in, d_out]."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.d_in, self.d_out = d_in, d_out
        for name in ("W_query", "W_key", "W_value"):
            setattr(self, name, nn.Parameter(torch.rand(d_in, d_out)))

    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        return softmax(q @ k.mT / self.d_out ** 0.5, dim=-1) @ v
''',
    ),
    (
        "replace",
        "SelfAttention_v2",
        """
class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.has_bias = qkv_bias
        self.W_query, self.W_key, self.W_value = (
            nn.Linear(d_in, d_out, bias=qkv_bias) for _ in range(3)
        )

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return softmax(q @ k.mT / k.shape[-1] ** 0.5, dim=-1) @ v
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if getattr(v2, "has_bias", False) or v2.W_query.bias is not None:
    raise ValueError("cannot copy a v2 with biases into a v1")
v1.W_query.data = v2.W_query.weight.detach().T.contiguous()
v1.W_key.data = v2.W_key.weight.detach().T.contiguous()
v1.W_value.data = v2.W_value.weight.detach().T.contiguous()
return v1
""",
    ),
]
