# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "torch.matmul and math.sqrt, a type annotation on every local variable"
PATTERNS = []
SAVE = {}
EDITS = [
    ("below", "setup", "import math"),
    (
        "fill",
        "softmax",
        """
peak: torch.Tensor = torch.amax(x, dim=dim, keepdim=True)
peak = torch.where(peak == -math.inf, 0.0, peak)
shifted: torch.Tensor = torch.exp(x - peak)
denom: torch.Tensor = torch.sum(shifted, dim=dim, keepdim=True)
denom = torch.clamp(denom, min=torch.finfo(x.dtype).tiny)
return torch.div(shifted, denom)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
n_tokens: int = inputs.shape[0]
scores: torch.Tensor = torch.empty((n_tokens, n_tokens), dtype=inputs.dtype)
for query_idx in range(n_tokens):
    for key_idx in range(n_tokens):
        scores[query_idx, key_idx] = torch.matmul(inputs[query_idx], inputs[key_idx])
weights: torch.Tensor = softmax(scores, dim=1)
context: torch.Tensor = torch.empty_like(inputs)
for query_idx in range(n_tokens):
    total: torch.Tensor = torch.zeros(inputs.shape[1], dtype=inputs.dtype)
    for key_idx in range(n_tokens):
        total = total + weights[query_idx, key_idx] * inputs[key_idx]
    context[query_idx] = total
return context, weights
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
scores: torch.Tensor = torch.matmul(inputs, torch.swapaxes(inputs, -1, -2))
weights: torch.Tensor = softmax(scores, dim=-1)
return torch.matmul(weights, inputs), weights
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
queries: torch.Tensor = torch.matmul(x, self.W_query)
keys: torch.Tensor = torch.matmul(x, self.W_key)
values: torch.Tensor = torch.matmul(x, self.W_value)
d_out: int = keys.shape[-1]
scores: torch.Tensor = torch.matmul(queries, torch.swapaxes(keys, -1, -2)) / math.sqrt(d_out)
return torch.matmul(softmax(scores, dim=-1), values)
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
q_proj: torch.Tensor = self.W_query(x)
k_proj: torch.Tensor = self.W_key(x)
v_proj: torch.Tensor = self.W_value(x)
scale: float = 1.0 / math.sqrt(self.W_key.out_features)
attention: torch.Tensor = softmax(torch.matmul(q_proj, torch.swapaxes(k_proj, -1, -2)) * scale, dim=-1)
return torch.matmul(attention, v_proj)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
layers: dict[str, nn.Linear] = {"W_query": v2.W_query, "W_key": v2.W_key, "W_value": v2.W_value}
for name, layer in layers.items():
    if layer.bias is not None:
        raise ValueError(f"{name} has a bias, which SelfAttention_v1 cannot hold")
for name, layer in layers.items():
    target: nn.Parameter = getattr(v1, name)
    with torch.no_grad():
        target.copy_(torch.swapaxes(layer.weight, 0, 1))
return v1
""",
    ),
]
