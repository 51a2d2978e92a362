# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "normalises with torch.nn.functional.normalize(p=1); writes v2 like v1, from the weight matrices"
PATTERNS = []
SAVE = {}
MISTAKE = (
    "SelfAttention_v2",
    "multiplies x by the Linear layers' .weight.T directly instead of calling the layers, so with qkv_bias=True the biases are never added",
)
EDITS = [
    (
        "fill",
        "softmax",
        """
m = x.amax(dim, keepdim=True)
m = m.masked_fill(m.isinf(), 0.0)
return torch.nn.functional.normalize(torch.exp(x - m), p=1.0, dim=dim)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
tok = inputs.shape[0]
s = torch.zeros(tok, tok, dtype=inputs.dtype)
for i, xi in enumerate(inputs):
    for j, xj in enumerate(inputs):
        s[i, j] = xi @ xj
a = softmax(s, dim=-1)
out = torch.zeros_like(inputs)
for i in range(tok):
    for j, xj in enumerate(inputs):
        out[i] += a[i, j] * xj
return out, a
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
s = torch.matmul(inputs, torch.transpose(inputs, -1, -2))
a = softmax(s, dim=-1)
return a @ inputs, a
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
q = x @ self.W_query
k = x @ self.W_key
v = x @ self.W_value
a = softmax((q @ k.transpose(-1, -2)) / k.size(-1) ** 0.5, dim=-1)
return a @ v
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
q = x @ self.W_query.weight.T
k = x @ self.W_key.weight.T
v = x @ self.W_value.weight.T
a = softmax((q @ k.transpose(-1, -2)) / k.size(-1) ** 0.5, dim=-1)
return a @ v
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if v2.W_query.bias is not None or v2.W_value.bias is not None:
    raise ValueError("SelfAttention_v1 has no biases to copy into")
with torch.no_grad():
    v1.W_query[...] = v2.W_query.weight.T
    v1.W_key[...] = v2.W_key.weight.T
    v1.W_value[...] = v2.W_value.weight.T
return v1
""",
    ),
]
