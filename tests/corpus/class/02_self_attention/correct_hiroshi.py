STORY = "softmax through a hand-written log-sum-exp, scores scaled with torch.rsqrt"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
top = x.amax(dim, keepdim=True)
top = top.where(top.isfinite(), torch.zeros_like(top))
mass = torch.exp(x - top).sum(dim, keepdim=True)
mass = mass.where(mass > 0, torch.ones_like(mass))
log_norm = top + mass.log()
return torch.exp(x - log_norm)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
L = inputs.shape[0]
grid = torch.zeros(L, L, dtype=inputs.dtype)
for r in range(L):
    for c in range(L):
        grid[r, c] = inputs[r].dot(inputs[c])
probs = softmax(grid, -1)
mixed = []
for r in range(L):
    mixed.append(sum((probs[r, c] * inputs[c] for c in range(L)), torch.zeros_like(inputs[r])))
return torch.stack(mixed), probs
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
probs = softmax(inputs @ inputs.transpose(-1, -2), -1)
return probs @ inputs, probs
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
d_k = self.W_key.shape[-1]
q, k, v = (x @ m for m in (self.W_query, self.W_key, self.W_value))
grid = q @ k.transpose(-1, -2) * torch.rsqrt(torch.tensor(d_k, dtype=q.dtype))
return softmax(grid, -1) @ v
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
q = self.W_query(x)
k = self.W_key(x)
grid = (q @ k.transpose(-1, -2)).mul(torch.rsqrt(torch.tensor(float(k.size(-1)))))
return softmax(grid, -1) @ self.W_value(x)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
biases = [m.bias for m in v2.modules() if isinstance(m, nn.Linear)]
if any(b is not None for b in biases):
    raise ValueError("qkv_bias must be False to copy into SelfAttention_v1")
for p1, p2 in zip(v1.parameters(), v2.parameters()):
    p1.data.copy_(p2.data.t())
return v1
""",
    ),
]
