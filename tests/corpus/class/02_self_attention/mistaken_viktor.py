# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "a t_ prefix on every tensor, a boolean mask added to the sum in softmax"
PATTERNS = []
SAVE = {}
MISTAKE = (
    "SelfAttention_v1",
    "never scales the scores: the softmax is taken of queries @ keys^T without dividing by sqrt(d_out)",
)
EDITS = [
    (
        "fill",
        "softmax",
        """
t_max = torch.amax(x, dim=dim, keepdim=True)
t_ok = torch.isfinite(t_max)
t_exp = torch.exp(x - torch.where(t_ok, t_max, torch.zeros_like(t_max)))
t_sum = t_exp.sum(dim=dim, keepdim=True)
return t_exp / (t_sum + ~t_ok)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
i_n = inputs.shape[0]
t_scores = torch.zeros(i_n, i_n, dtype=inputs.dtype)
for i in range(i_n):
    for j in range(i_n):
        t_scores[i, j] = inputs[i].matmul(inputs[j])
t_weights = softmax(t_scores, dim=-1)
t_context = torch.zeros_like(inputs)
for i in range(i_n):
    for j in range(i_n):
        t_context[i] += t_weights[i, j] * inputs[j]
return t_context, t_weights
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
t_scores = inputs @ inputs.transpose(-2, -1)
t_weights = softmax(t_scores, dim=-1)
return t_weights @ inputs, t_weights
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
t_q = x @ self.W_query
t_k = x @ self.W_key
t_v = x @ self.W_value
t_w = softmax(t_q @ t_k.transpose(-2, -1), dim=-1)
return t_w @ t_v
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
t_q, t_k, t_v = self.W_query(x), self.W_key(x), self.W_value(x)
t_w = softmax(t_q @ t_k.transpose(-2, -1) / t_k.shape[-1] ** 0.5, dim=-1)
return t_w @ t_v
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
t_pairs = [(v1.W_query, v2.W_query), (v1.W_key, v2.W_key), (v1.W_value, v2.W_value)]
if any(lin.bias is not None for _, lin in t_pairs):
    raise ValueError("biases cannot be copied into SelfAttention_v1")
with torch.no_grad():
    for t_param, lin in t_pairs:
        t_param.copy_(lin.weight.T)
return v1
""",
    ),
]
