STORY = (
    "VS Code on Windows: CRLF endings, asserts on shapes, a warning and a debug print in forward"
)
PATTERNS = ["vscode-save", "crlf", "assert-in-function", "warning-in-function", "print-in-function"]
SAVE = {"editor": "vscode", "crlf": True}
EDITS = [
    ("below", "setup", "import warnings\nDEBUG = False"),
    (
        "fill",
        "softmax",
        """
assert x.is_floating_point(), "softmax needs a floating tensor"
peak = x.amax(dim=dim, keepdim=True)
peak = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))
expd = (x - peak).exp()
norm = expd.sum(dim=dim, keepdim=True)
out = expd / torch.where(norm == 0, torch.ones_like(norm), norm)
assert out.shape == x.shape
return out
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
assert inputs.dim() == 2, "the loop version takes one sequence"
T = inputs.shape[0]
weights = torch.zeros(T, T, dtype=inputs.dtype)
for i in range(T):
    row = torch.zeros(T, dtype=inputs.dtype)
    for j in range(T):
        row[j] = torch.dot(inputs[i], inputs[j])
    weights[i] = softmax(row, dim=0)
context = torch.zeros_like(inputs)
for i in range(T):
    for j in range(T):
        context[i] += weights[i, j] * inputs[j]
return context, weights
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
scores = inputs @ inputs.transpose(-2, -1)
weights = softmax(scores, dim=-1)
assert torch.allclose(weights.sum(-1), torch.ones((), dtype=weights.dtype))
return weights @ inputs, weights
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
assert x.shape[-1] == self.W_query.shape[0], f"expected {self.W_query.shape[0]} features"
if x.dim() > 3:
    warnings.warn("more than one batch axis: treating them all as batch")
q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
weights = softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
if DEBUG:
    print("v1 weights", weights.shape)
return weights @ v
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
weights = softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
print(f"v2: {tuple(x.shape)} -> {tuple(v.shape)}")
return weights @ v
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if v2.W_query.bias is not None:
    raise ValueError("v2 was built with qkv_bias=True")
assert v1.W_query.shape == v2.W_query.weight.T.shape
warnings.warn("copying weights: v1's own weights are overwritten")
with torch.no_grad():
    v1.W_query.copy_(v2.W_query.weight.T)
    v1.W_key.copy_(v2.W_key.weight.T)
    v1.W_value.copy_(v2.W_value.weight.T)
return v1
""",
    ),
]
