# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "capital Q, K, V from generators, softmax's zero sums patched in place, copies by parameter name"
PATTERNS = []
SAVE = {}
MISTAKE = (
    "copy_v2_weights_into_v1",
    "never refuses a v2 built with qkv_bias=True: the biases are silently skipped instead of raising ValueError",
)
EDITS = [
    (
        "fill",
        "softmax",
        """
maxima = x.detach().amax(dim=dim, keepdim=True)
maxima[maxima.isinf()] = 0
weights = (x - maxima).exp()
s = weights.sum(dim=dim, keepdim=True)
s.masked_fill_(s == 0, 1)
return weights / s
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
seq = inputs.shape[0]
att_w = torch.empty((seq, seq), dtype=inputs.dtype)
for i in range(seq):
    dots = torch.empty(seq, dtype=inputs.dtype)
    for j in range(seq):
        dots[j] = inputs[i] @ inputs[j]
    att_w[i] = softmax(dots, dim=-1)
result = torch.empty_like(inputs)
for i in range(seq):
    acc = torch.zeros(inputs.shape[-1], dtype=inputs.dtype)
    for j in range(seq):
        acc = acc + att_w[i, j] * inputs[j]
    result[i] = acc
return result, att_w
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
att_w = softmax(inputs.matmul(inputs.transpose(-2, -1)), dim=-1)
return att_w.matmul(inputs), att_w
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
scale = self.W_key.shape[-1] ** -0.5
Q, K, V = (torch.matmul(x, W) for W in (self.W_query, self.W_key, self.W_value))
return softmax(torch.matmul(Q, K.transpose(-2, -1)) * scale, dim=-1).matmul(V)
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
Q, K, V = (lin(x) for lin in (self.W_query, self.W_key, self.W_value))
return softmax(torch.matmul(Q, K.transpose(-2, -1)) / K.shape[-1] ** 0.5, dim=-1).matmul(V)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
with torch.no_grad():
    for name, p in v2.named_parameters():
        if name.endswith(".weight"):
            getattr(v1, name.split(".")[0]).copy_(p.T)
return v1
""",
    ),
]
