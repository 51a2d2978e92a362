# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "positive dims where he thinks in 2-D, torch.maximum guards in softmax, Tensor.inner"
PATTERNS = ["large-negative"]
SAVE = {}
MISTAKE = (
    "simple_attention_matrix",
    "takes the softmax over dim=1, the key axis for one sequence but the query axis for a batch [batch, T, T], so batched weights are normalised the wrong way",
)
EDITS = [
    (
        "fill",
        "softmax",
        """
shift = x.detach().amax(dim=dim, keepdim=True)
shift = torch.maximum(shift, torch.full_like(shift, torch.finfo(x.dtype).min))
powered = torch.exp(x - shift)
den = powered.sum(dim=dim, keepdim=True)
return powered / torch.maximum(den, torch.full_like(den, torch.finfo(x.dtype).tiny))
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
length = inputs.shape[0]
sim = torch.zeros(length, length, dtype=inputs.dtype)
for row in range(length):
    for col in range(length):
        sim[row, col] = inputs[row].inner(inputs[col])
att = softmax(sim, dim=1)
out = []
for row in range(length):
    acc = inputs.new_zeros(inputs.shape[1])
    for col in range(length):
        acc = acc + att[row, col] * inputs[col]
    out.append(acc)
return torch.stack(out, dim=0), att
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
sim = torch.matmul(inputs, inputs.transpose(-2, -1))
att = softmax(sim, dim=1)
return torch.matmul(att, inputs), att
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
proj_q = torch.matmul(x, self.W_query)
proj_k = torch.matmul(x, self.W_key)
proj_v = torch.matmul(x, self.W_value)
sim = torch.matmul(proj_q, proj_k.transpose(-2, -1)) / proj_k.shape[-1] ** 0.5
return torch.matmul(softmax(sim, dim=-1), proj_v)
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
proj_q, proj_k, proj_v = (getattr(self, f"W_{n}")(x) for n in ("query", "key", "value"))
sim = torch.matmul(proj_q, proj_k.transpose(-2, -1)) * (1.0 / proj_k.shape[-1]) ** 0.5
return torch.matmul(softmax(sim, dim=-1), proj_v)
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
if any(p is not None for p in (v2.W_query.bias, v2.W_key.bias, v2.W_value.bias)):
    raise ValueError("qkv_bias=True: nothing in v1 to copy the biases into")
for n in ("query", "key", "value"):
    getattr(v1, f"W_{n}").data = getattr(v2, f"W_{n}").weight.detach().t().clone()
return v1
""",
    ),
]
