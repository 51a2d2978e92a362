STORY = "moves dim to the last axis and back; broadcasting products and tensordot instead of @"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
z = x.transpose(dim, -1)
hi = z.amax(-1, keepdim=True)
hi = torch.where(hi > float("-inf"), hi, 0.0)
ez = (z - hi).exp()
tot = ez.sum(-1, keepdim=True)
tot = tot + (tot == 0).to(tot.dtype)
return (ez / tot).transpose(dim, -1)
""",
    ),
    (
        "fill",
        "simple_attention_loop",
        """
size = len(inputs)
w = inputs.new_empty(size, size)
for a in range(size):
    row = inputs.new_empty(size)
    for b in range(size):
        row[b] = torch.tensordot(inputs[a], inputs[b], dims=1)
    w[a] = softmax(row, dim=0)
out = inputs.new_zeros(inputs.shape)
for a in range(size):
    for b in range(size):
        out[a] = torch.add(out[a], w[a, b] * inputs[b])
return out, w
""",
    ),
    (
        "fill",
        "simple_attention_matrix",
        """
sc = (inputs.unsqueeze(-2) * inputs.unsqueeze(-3)).sum(-1)
w = softmax(sc, dim=-1)
return (w.unsqueeze(-1) * inputs.unsqueeze(-3)).sum(-2), w
""",
    ),
    (
        "fill",
        "SelfAttention_v1",
        """
q = torch.tensordot(x, self.W_query, dims=([-1], [0]))
k = torch.tensordot(x, self.W_key, dims=([-1], [0]))
v = torch.tensordot(x, self.W_value, dims=([-1], [0]))
sc = torch.matmul(q, k.transpose(-1, -2)) / torch.tensor(float(k.shape[-1])).sqrt()
return torch.matmul(softmax(sc, dim=-1), v)
""",
    ),
    (
        "fill",
        "SelfAttention_v2",
        """
proj = list(map(lambda lin: lin(x), [self.W_query, self.W_key, self.W_value]))
sc = proj[0].matmul(proj[1].transpose(-1, -2)).div(proj[1].shape[-1] ** 0.5)
return softmax(sc, dim=-1).matmul(proj[2])
""",
    ),
    (
        "fill",
        "copy_v2_weights_into_v1",
        """
sd = v1.state_dict()
for key, layer in (("W_query", v2.W_query), ("W_key", v2.W_key), ("W_value", v2.W_value)):
    if isinstance(layer.bias, torch.Tensor):
        raise ValueError(f"v2.{key} was built with a bias; v1 cannot take it")
    sd[key].copy_(layer.weight.detach().T)
return v1
""",
    ),
]
