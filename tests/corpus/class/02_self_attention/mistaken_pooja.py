STORY = "the book's notation (omega for scores, alpha for weights, z for context); -1e30 for -inf"
PATTERNS = ["large-negative"]
SAVE = {}
MISTAKE = (
    "simple_attention_loop",
    "normalises each row of scores by dividing by its sum instead of applying softmax",
)
EDITS = [
    ("below", "setup", "from math import sqrt"),
    (
        "fill",
        "softmax",
        """
finite = ~torch.isneginf(x)
clean = torch.where(finite, x, -1e30)
clean = clean - clean.max(dim=dim, keepdim=True).values
p = clean.exp()
p = p / torch.sum(p, dim=dim, keepdim=True)
return p * finite
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
n_tok = inputs.shape[0]
omega = torch.empty(n_tok, n_tok, dtype=inputs.dtype)
for i in range(n_tok):
    for j in range(n_tok):
        omega[i, j] = torch.dot(inputs[i], inputs[j])
alpha = torch.empty_like(omega)
for i in range(n_tok):
    alpha[i] = omega[i] / omega[i].sum()
z = torch.zeros_like(inputs)
for i in range(n_tok):
    for j in range(n_tok):
        z[i] += alpha[i, j] * inputs[j]
return z, alpha
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
omega = inputs @ torch.transpose(inputs, -2, -1)
alpha = softmax(omega, dim=-1)
return alpha @ inputs, alpha
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
query = x @ self.W_query
key = x @ self.W_key
value = x @ self.W_value
omega = query @ torch.transpose(key, -2, -1)
alpha = softmax(omega / sqrt(self.W_key.shape[1]), dim=-1)
return alpha @ value
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
query, key, value = self.W_query(x), self.W_key(x), self.W_value(x)
omega = torch.matmul(query, torch.transpose(key, -2, -1))
alpha = softmax(omega / sqrt(key.shape[-1]), dim=-1)
return torch.matmul(alpha, value)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if "W_query.bias" in v2.state_dict():
    raise ValueError("this SelfAttention_v2 was built with qkv_bias=True")
for name in ["W_query", "W_key", "W_value"]:
    with torch.no_grad():
        getattr(v1, name)[:] = getattr(v2, name).weight.t()
return v1
""",
    ),
]
