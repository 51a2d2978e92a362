# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "stores d_out and the scale in the constructors; clamps the softmax sum at 1"
PATTERNS = ["edited-constructor"]
SAVE = {}
MISTAKE = (
    "copy_v2_weights_into_v1",
    "copies each nn.Linear weight [d_out, d_in] as it is, without transposing it into v1's [d_in, d_out] layout",
)
EDITS = [
    (
        "fill",
        "softmax",
        """
biggest = x.amax(dim=dim, keepdim=True)
biggest = biggest.where(biggest != -torch.inf, torch.zeros_like(biggest))
numer = torch.exp(x - biggest)
return numer / numer.sum(dim=dim, keepdim=True).clamp(min=1.0)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
steps = inputs.shape[0]
weight_rows = []
for i in range(steps):
    row = torch.stack([torch.dot(inputs[i], inputs[j]) for j in range(steps)])
    weight_rows.append(softmax(row, dim=0))
weights = torch.stack(weight_rows)
ctx = inputs.new_zeros(inputs.shape)
for i in range(steps):
    for j in range(steps):
        ctx[i] = ctx[i] + weights[i, j] * inputs[j]
return ctx, weights
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
weights = softmax(inputs @ inputs.transpose(-1, -2), dim=inputs.dim() - 1)
return weights @ inputs, weights
""",
    ),
    (
        "edit",
        "SelfAttention_v1",
        (
            "self.W_value = nn.Parameter(torch.rand(d_in, d_out))",
            "self.W_value = nn.Parameter(torch.rand(d_in, d_out))\n        self.d_out = d_out",
        ),
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
q_all = x @ self.W_query
k_all = x @ self.W_key
v_all = x @ self.W_value
weights = softmax(q_all @ k_all.transpose(-1, -2) / self.d_out ** 0.5, dim=-1)
return weights @ v_all
""",
    ),
    (
        "edit",
        "SelfAttention_v2",
        (
            "self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)",
            "self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.scale = d_out ** -0.5",
        ),
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
return softmax(self.W_query(x) @ self.W_key(x).transpose(-1, -2) * self.scale, dim=-1) @ self.W_value(x)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if v2.W_value.bias is not None or v2.W_query.bias is not None:
    raise ValueError("SelfAttention_v1 cannot hold the biases of this v2")
with torch.no_grad():
    v1.W_query.copy_(v2.W_query.weight)
    v1.W_key.copy_(v2.W_key.weight)
    v1.W_value.copy_(v2.W_value.weight)
return v1
""",
    ),
]
