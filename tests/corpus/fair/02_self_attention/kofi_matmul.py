# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "torch.matmul and torch.where everywhere, no @ operator"
PATTERNS = ["torch-matmul", "torch-where", "float32-contract"]
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
top = torch.amax(x, dim=dim, keepdim=True)
top = torch.where(torch.isinf(top), torch.zeros_like(top), top)
e = torch.exp(x - top)
total = torch.sum(e, dim=dim, keepdim=True)
return torch.where(total > 0, e / torch.where(total > 0, total, torch.ones_like(total)), e)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
T = inputs.shape[0]
scores = torch.empty(T, T, dtype=inputs.dtype)
for i in range(T):
    for j in range(T):
        scores[i, j] = torch.dot(inputs[i], inputs[j])
weights = softmax(scores, dim=1)
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
weights = softmax(torch.matmul(inputs, torch.transpose(inputs, -2, -1)), dim=-1)
return torch.matmul(weights, inputs), weights
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
q = torch.matmul(x, self.W_query)
k = torch.matmul(x, self.W_key)
v = torch.matmul(x, self.W_value)
scores = torch.matmul(q, torch.transpose(k, -2, -1)) / torch.sqrt(torch.tensor(k.shape[-1], dtype=x.dtype))
return torch.matmul(softmax(scores, dim=-1), v)
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
scores = torch.matmul(q, k.transpose(-1, -2)) / k.size(-1) ** 0.5
return torch.matmul(softmax(scores, dim=-1), v)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if any(layer.bias is not None for layer in (v2.W_query, v2.W_key, v2.W_value)):
    raise ValueError("v1 has no biases, so a v2 with qkv_bias=True cannot be copied")
with torch.no_grad():
    v1.W_query.copy_(torch.transpose(v2.W_query.weight, 0, 1))
    v1.W_key.copy_(torch.transpose(v2.W_key.weight, 0, 1))
    v1.W_value.copy_(torch.transpose(v2.W_value.weight, 0, 1))
return v1
""",
    ),
]
